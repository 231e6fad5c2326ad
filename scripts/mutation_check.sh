#!/usr/bin/env bash
# Mutation check (on demand, not in CI): do the tests notice a plausible bug in the
# estimators, the crowd pipeline, money, validation, visibility and limits?
#
#   bash scripts/mutation_check.sh                 # every mutation
#   bash scripts/mutation_check.sh --list          # the named mutations, their area and tests
#   bash scripts/mutation_check.sh --area money --area crowd
#   bash scripts/mutation_check.sh --only drop_rho --only pay_bonus_skips_recheck
#   bash scripts/mutation_check.sh --only drop_rho --tests tests/estimation/scoring -- -x
#
# It copies the repository (tracked and untracked files, as they are now) to a temporary
# directory, runs the selected mutations' tests there once without a mutation (the
# baseline) and once per mutation, and prints a table: for each mutation, the tests that
# fail with it but not in the baseline. Each mutation runs only the tests that mirror the
# code it breaks (its `tests`; --tests overrides that for all), so a bug counts as
# caught only where its guard belongs. Every mutation must be caught; the exit status is
# 1 if one is not, or if one could not be applied.
#
# Two kinds of mutation:
# - Estimators (and the TAC validation rules): no line of the code is edited, so they
#   survive a rewrite of its internals. The run puts a generated sitecustomize.py on
#   PYTHONPATH, and with KBPO_MUTATION=<name> set, every Python process of the run
#   (pytest, the Celery worker it starts, `python -m estimation` subprocesses) installs
#   an import hook (scripts/mutation_check.py). Right after a stable public module is
#   imported, the hook wraps one public entry point: the results of
#   `estimation.core.estimate()`, `estimation.core.intervals.z_value`,
#   `estimation.data.load_exhaustive`, the `estimate` that `estimation.scoring` calls,
#   or, for a validation rule, `Report.add` and `inspect_upload` (the rule's problem is
#   never recorded). Each wrapper logs when it changed a result; a mutation that never
#   ran, or whose wrapper raised, is reported as NOT APPLIED rather than as caught. The
#   ρ mutations recompute ρ from the public Population and Evidence API.
# - Trust and money code (answer confirmation, intake, budget, reviews and payments,
#   aggregation, visibility, limits): an exact source edit of the copy, undone after
#   the run. If the text to change is not found exactly once (the code moved on), the
#   mutation is NOT APPLIED; update its text in scripts/mutation_check.py.
# To add a mutation, add an entry to _ESTIMATORS or _TRUST in scripts/mutation_check.py.
#
# Uses DATABASE_URL and CELERY_BROKER_URL like scripts/test.sh (the test database gets
# a `_mut` suffix; the baseline creates it, the mutations reuse it). An estimator
# mutation reruns the statistical tests (2–6 minutes each, about 40 minutes for the
# nine); the other 88 run one or two test files each (6–45 s; about 20 minutes for the
# 88) on the shared 2-core development container.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/mutation_check.py "$@"
