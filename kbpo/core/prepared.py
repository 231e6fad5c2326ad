"""Server-side prepared statements for the raw queries that every page view runs.

The stored report's key query (estimation/stored_pages.py) joins a dozen fingerprints
of row sets: Postgres spends as long planning it as running it, on every request.
`execute` prepares such a statement once per database connection (PREPARE) and runs
it with EXECUTE after that, so a request pays only for the execution.

Prepared statements live as long as the Postgres session (they survive a rolled-back
transaction) and Postgres re-plans one by itself when a table it reads changes. They do
not survive a connection pooler in transaction mode (PgBouncer's `pool_mode =
transaction` hands each transaction another server session): set
KBPO_DB_PREPARED_STATEMENTS=0 there. Off Postgres, or switched off, the query runs as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import connection

_PARAM = re.compile(r"%\((\w+)\)s")
# Statement name → its text with numbered placeholders and their names (one `sql` per
# name for the life of the process, so it is converted once).
_PARSED: dict[str, tuple[str, list[str]]] = {}


def _positional(sql: str) -> tuple[str, list[str]]:
    """`sql` with its %(name)s placeholders as $1, $2, … (one per distinct name, in
    order of first use) and those names."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return _PARAM.sub(number, sql).replace("%%", "%"), names


def _prepared_names() -> set[str]:
    """The statements prepared on the current raw connection (a new connection, after a
    reconnect say, starts with none)."""
    raw = connection.connection
    state = getattr(connection, "_kbpo_prepared", None)
    if state is None or state[0] is not raw:
        state = connection._kbpo_prepared = (raw, set())
    return state[1]


def execute(cursor: Any, name: str, sql: str, params: Mapping[str, Any],
            types: Mapping[str, str]) -> None:
    """Run `sql` (named %(param)s placeholders) on `cursor` as prepared statement `name`.

    `types` gives each parameter's SQL type (PREPARE needs those Postgres cannot infer).
    `name` must stand for one `sql` for the life of the process.
    """
    if connection.vendor != "postgresql" or not settings.KBPO_DB_PREPARED_STATEMENTS:
        cursor.execute(sql, params)
        return
    if name not in _PARSED:
        _PARSED[name] = _positional(sql)
    text, names = _PARSED[name]
    connection.ensure_connection()
    prepared = _prepared_names()
    if name not in prepared:
        # Asked, not assumed: an interruption between a PREPARE and the bookkeeping
        # (a task's time limit, say) would otherwise make every later PREPARE fail with
        # "already exists" until the connection closed.
        cursor.execute("SELECT 1 FROM pg_prepared_statements WHERE name = %s", [name])
        if cursor.fetchone() is None:
            arg_types = ", ".join(types[n] for n in names)
            cursor.execute(f"PREPARE {name} ({arg_types}) AS {text}")
        prepared.add(name)
    placeholders = ", ".join(["%s"] * len(names))
    cursor.execute(f"EXECUTE {name} ({placeholders})", [params[n] for n in names])


__all__ = ["execute"]
