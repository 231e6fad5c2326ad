"""Signals between the crowd pipeline and the rest of the service."""

from django.dispatch import Signal

# Sent (after commit) with `corpus_id` whenever labels or the true-instance sample of a
# corpus changed: new pair labels, completed exhaustive documents, a withdrawn system,
# a quality pass that refitted the labels' posteriors.
# The scoring app recomputes that corpus's scores in response.
labels_changed = Signal()
