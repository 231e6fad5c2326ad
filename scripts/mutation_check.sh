#!/usr/bin/env bash
# Mutation check (on demand, not in CI): do the tests notice a broken estimator?
#
#   bash scripts/mutation_check.sh                 # every mutation, the statistical tests
#   bash scripts/mutation_check.sh --list          # the named mutations
#   bash scripts/mutation_check.sh --only drop_rho --only unit_intervals
#   bash scripts/mutation_check.sh --tests tests/estimation/scoring -- -x
#
# It copies the repository (tracked and untracked files, as they are now) to a temporary
# directory, runs the selected tests there once without a mutation (the baseline) and
# once per mutation, and prints a table: for each mutation, the tests that fail with it
# but not in the baseline. Every mutation must be caught; the exit status is 1 if one is
# not, or if one could not be applied.
#
# How a mutation gets in, without editing a line of the estimators (so it survives a
# rewrite of estimation/core's internals): the run puts a generated sitecustomize.py on
# PYTHONPATH, and with KBPO_MUTATION=<name> set, every Python process of the run (pytest,
# the Celery worker it starts, `python -m estimation` subprocesses) installs an import
# hook (scripts/mutation_check.py). Right after a stable public module is imported, the
# hook wraps one public entry point: the results of `estimation.core.estimate()`,
# `estimation.core.intervals.z_value`, `estimation.data.load_exhaustive`, or the
# `estimate` that `estimation.scoring` calls. Each wrapper logs when it changed a result;
# a mutation that never ran, or whose wrapper raised, is reported as NOT APPLIED rather
# than as caught. The ρ mutations recompute ρ from the public Population and Evidence
# API. To add a mutation, add an entry to MUTATIONS in scripts/mutation_check.py.
#
# Uses DATABASE_URL and CELERY_BROKER_URL like scripts/test.sh (the test database gets
# a `_mut` suffix). Each mutation reruns the selected tests: 2–6 minutes each, about
# 40 minutes for all of them on the shared 2-core development container.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/mutation_check.py "$@"
