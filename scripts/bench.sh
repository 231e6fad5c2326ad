#!/usr/bin/env bash
# Run every benchmark in bench/ and print its figures. Uses a scratch Postgres
# database (kbpo_bench) when Postgres answers, else SQLite in a temporary file.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if [ -z "${DATABASE_URL:-}" ]; then
  if "$PY" -c "import psycopg2; psycopg2.connect(host='127.0.0.1', user='postgres', dbname='postgres', connect_timeout=3).close()" 2>/dev/null; then
    "$PY" -c "
import psycopg2
c = psycopg2.connect(host='127.0.0.1', user='postgres', dbname='postgres'); c.autocommit = True
cur = c.cursor(); cur.execute(\"SELECT 1 FROM pg_database WHERE datname='kbpo_bench'\")
cur.fetchone() or cur.execute('CREATE DATABASE kbpo_bench')"
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo_bench
  else
    export DATABASE_URL=sqlite:///$(mktemp -d)/bench.sqlite3
  fi
fi
"$PY" manage.py migrate -v0
for script in bench/bench_*.py; do
  echo "== $script"
  "$PY" "$script" "$@"
done
