"""Aggregation algorithms (majority, Dawid–Skene, agreement, token-level mention votes)
and the workers' measured quality."""
