#!/usr/bin/env bash
# Run the whole test suite. Uses the local Postgres and Redis when they answer
# (and always under CI=true, where a missing service is an error, never a fallback).
# Tests run in random order (pytest-randomly): the header prints `--randomly-seed=N`;
# pass that option to reproduce an order, or `-p no:randomly` for file order.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

pg_up() { "$PY" - <<'PYEOF'
import sys, psycopg2
try:
    psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres",
                     connect_timeout=3).close()
except Exception:
    sys.exit(1)
PYEOF
}
redis_up() { "$PY" -c "import redis; redis.Redis(host='127.0.0.1', socket_timeout=3).ping()" 2>/dev/null; }

if [ -z "${DATABASE_URL:-}" ] && pg_up; then
  export DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo
fi
if [ -z "${CELERY_BROKER_URL:-}" ] && redis_up; then
  export CELERY_BROKER_URL=redis://127.0.0.1:6379/0
fi
if [ "${CI:-}" = "true" ]; then
  case "${DATABASE_URL:-}" in postgres*) ;; *) echo "CI: Postgres is not reachable" >&2; exit 3;; esac
  case "${CELERY_BROKER_URL:-}" in redis*) ;; *) echo "CI: Redis is not reachable" >&2; exit 3;; esac
fi
echo "database: ${DATABASE_URL:-SQLite (no Postgres found)}"
echo "broker:   ${CELERY_BROKER_URL:-none: Celery eager mode, worker tests skipped}"

.venv/bin/ruff check .
# The layering and the absence of import cycles are a checked contract (.importlinter).
.venv/bin/lint-imports --no-logo --no-cache
"$PY" manage.py makemigrations --check --dry-run >/dev/null || {
  echo "models changed without a migration: run python manage.py makemigrations" >&2; exit 1; }
exec "$PY" -m pytest "$@"
