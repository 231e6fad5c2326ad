"""Staging tables: the rows of a file being ingested, before the checks that need the
whole file run in SQL (Postgres COPY, elsewhere executemany). They are temporary
tables, so a rollback or the end of the connection removes them."""

from __future__ import annotations

import io
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.db import connection

STAGE_BATCH = 20_000


STAGE_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "kbpo_stage_entity": (("node", "TEXT"), ("type", "TEXT"), ("link", "TEXT"),
                          ("cdoc", "BIGINT"), ("cb", "INTEGER"), ("ce", "INTEGER"),
                          ("ord", "INTEGER")),
    # One row per (node, span) and batch of lines: `canon` whether any of its lines is a
    # canonical_mention, `first` the first of its lines of that kind, `line` the last.
    "kbpo_stage_mention": (("node", "TEXT"), ("doc", "BIGINT"), ("b", "INTEGER"),
                           ("e", "INTEGER"), ("type", "TEXT"), ("canon", "INTEGER"),
                           ("first", "INTEGER"), ("line", "INTEGER")),
    "kbpo_stage_relation": (("line", "INTEGER"), ("doc", "BIGINT"), ("sb", "INTEGER"),
                            ("se", "INTEGER"), ("ob", "INTEGER"), ("oe", "INTEGER"),
                            ("stype", "TEXT"), ("otype", "TEXT"), ("sent", "BIGINT"),
                            ("predicate", "TEXT"), ("subj", "TEXT"), ("obj", "TEXT"),
                            ("conf", "DOUBLE PRECISION")),
    "kbpo_stage_conflict": (("p1", "TEXT"), ("p2", "TEXT")),
    # Entity nodes' state across pass 1's batches (`ingest_nodes`).
    "kbpo_stage_node": (("node", "TEXT PRIMARY KEY"), ("line", "INTEGER"), ("type", "TEXT"),
                        ("skip", "INTEGER"), ("type_error", "INTEGER")),
    "kbpo_stage_node_batch": (("node", "TEXT"), ("line", "INTEGER"), ("type", "TEXT"),
                              ("skip", "INTEGER"), ("type_error", "INTEGER")),
    "kbpo_stage_link": (("node", "TEXT"), ("link", "TEXT"), ("line", "INTEGER")),
    "kbpo_stage_keys": (("node", "TEXT"), ("doc", "BIGINT")),
    # Node -> id of the entities just written (`ingest_sql.insert_rows`).
    "kbpo_stage_ids": (("node", "TEXT"), ("id", "BIGINT"), ("type", "TEXT")),
}


def _copy_value(value: object) -> str:
    if value is None:
        return "\\N"
    text = str(value)
    if "\\" in text or "\r" in text or "\n" in text or "\t" in text:
        text = (text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")
                .replace("\t", "\\t"))
    return text


def copy_text(rows: Sequence[Sequence[object]], width: int) -> str:
    """Rows in COPY's text format (tab-separated, NULL as \\N), about three times as
    fast as the csv module: one %-format per row. Staged text comes from tab-split
    lines, so it never holds a tab or a newline; a backslash or carriage return
    (possible in a node or link) sends the batch through the escaping path."""
    fmt = "\t".join(["%s"] * width) + "\n"
    nulls = sum(row.count(None) for row in rows)
    if nulls:
        data = "".join([fmt % tuple("\\N" if v is None else v for v in row)
                        if None in row else fmt % tuple(row) for row in rows])
    else:
        data = "".join(map(fmt.__mod__, map(tuple, rows)))
    # Each NULL brings one backslash, each row width-1 tabs and one newline: any other
    # means a value holds one of them.
    if (data.count("\\") != nulls or "\r" in data or data.count("\n") != len(rows)
            or data.count("\t") != len(rows) * (width - 1)):
        data = "".join("\t".join(map(_copy_value, row)) + "\n" for row in rows)
    return data


class Stager:
    """Buffers rows and writes them to temporary tables in batches."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.postgres = connection.vendor == "postgresql"
        self.buffers: dict[str, list[Sequence[object]]] = {t: [] for t in STAGE_TABLES}
        self.rows: Counter[str] = Counter()
        self.unanalyzed: set[str] = set()  # tables written to since their last ANALYZE
        # Held while a COPY streams its rows: the driver sends them outside its own
        # connection lock, so a statement from another thread (`NodeStore.looking_up`)
        # must not start meanwhile; and by the look-ahead thread for a whole lookup (its
        # SET LOCAL planner settings). Reentrant: the caller's `keys_of` holds it around
        # the document index, which takes it itself.
        self.lock = threading.RLock()

    def create(self) -> None:
        for table, cols in STAGE_TABLES.items():
            self.cursor.execute(f"DROP TABLE IF EXISTS {table}")
            spec = ", ".join(f"{name} {kind}" for name, kind in cols)
            self.cursor.execute(f"CREATE TEMPORARY TABLE {table} ({spec})")

    def add(self, table: str, row: Sequence[object]) -> None:
        buf = self.buffers[table]
        buf.append(row)
        if len(buf) >= STAGE_BATCH:
            self.flush(table)

    def flush(self, table: str) -> None:
        buf = self.buffers[table]
        if not buf:
            return
        cols = [c for c, _ in STAGE_TABLES[table]]
        if self.postgres:
            data = io.StringIO(copy_text(buf, len(cols)))
            with self.lock:
                self.cursor.copy_expert(f"COPY {table} ({', '.join(cols)}) FROM STDIN", data)
        else:
            marks = ", ".join(["%s"] * len(cols))
            self.cursor.executemany(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", buf)
        self.rows[table] += len(buf)
        self.unanalyzed.add(table)
        buf.clear()

    def flush_all(self) -> None:
        for table in STAGE_TABLES:
            self.flush(table)
        for table in STAGE_TABLES:
            if table in self.unanalyzed:
                self.analyze(table)

    def analyze(self, table: str) -> None:
        """(Tables filled by SQL rather than `flush` are analyzed by their filler.)"""
        self.unanalyzed.discard(table)
        if self.postgres:
            # Temporary tables are never auto-analyzed; the joins need row counts.
            self.cursor.execute(f"ANALYZE {table}")

    def clear(self, table: str) -> None:
        """Empty a table reused batch after batch (TRUNCATE leaves no dead rows)."""
        self.buffers[table].clear()
        self.unanalyzed.discard(table)
        self.cursor.execute(f"{'TRUNCATE' if self.postgres else 'DELETE FROM'} {table}")

    def drop(self) -> None:
        for table in STAGE_TABLES:
            self.cursor.execute(f"DROP TABLE IF EXISTS {table}")


