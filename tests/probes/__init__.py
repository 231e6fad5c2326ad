"""Test files run only by tests/test_ci_guards.py, in a separate pytest process."""
