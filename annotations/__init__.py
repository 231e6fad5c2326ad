"""The crowd side of KBPO (Django app label `annotations`), one subpackage per concern:

- `crowd/`: HITs from posting to payment — backends (simulated, local, MTurk via
  `crowd/mturk/`), budgets, labels from answers, review and bonuses, the MTurk sync and
  re-drive, the simulated crowd, and the Celery tasks of all that;
- `interfaces/`: the annotation pages workers see, the answer intake every backend
  shares, and the data a page shows for a question;
- `quality/`: aggregation algorithms (majority, Dawid–Skene, agreement, token-level
  mention voting) and worker quality;
- `exhaustive/`: the exhaustive sample for recall — document sampling, its entity and
  relation workflow, gold import (KBPO and DocRED formats), and its operator page.

`models.py` (every table of the app), `admin.py` and `signals.py` serve them all. The
layering between the subpackages is a checked contract (`.importlinter`).
"""
