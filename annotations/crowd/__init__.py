"""HITs from posting to payment: backends (MTurk in `mturk/`), budgets, labels,
review and bonuses, the MTurk sync and re-drive, the simulated crowd, Celery tasks."""
