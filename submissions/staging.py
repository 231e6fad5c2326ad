"""Staging tables: the rows of a file being ingested, before the checks that need the
whole file run in SQL (Postgres COPY, elsewhere executemany). They are temporary
tables, so a rollback or the end of the connection removes them."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.db import connection

STAGE_BATCH = 20_000


STAGE_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "kbpo_stage_entity": (("node", "TEXT"), ("type", "TEXT"), ("link", "TEXT"),
                          ("cdoc", "BIGINT"), ("cb", "INTEGER"), ("ce", "INTEGER"),
                          ("ord", "INTEGER")),
    "kbpo_stage_mention": (("node", "TEXT"), ("doc", "BIGINT"), ("b", "INTEGER"),
                           ("e", "INTEGER"), ("type", "TEXT"), ("canon", "INTEGER"),
                           ("line", "INTEGER")),
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


class Stager:
    """Buffers rows and writes them to temporary tables in batches."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.postgres = connection.vendor == "postgresql"
        self.buffers: dict[str, list[Sequence[object]]] = {t: [] for t in STAGE_TABLES}
        self.rows: Counter[str] = Counter()

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
            # CSV is written in C. It writes None and "" alike as an empty unquoted
            # field, which COPY reads as NULL: staged text is never empty (no column
            # holds "" as a value), so nothing is lost.
            data = io.StringIO()
            csv.writer(data, lineterminator="\n").writerows(buf)
            data.seek(0)
            self.cursor.copy_expert(
                f"COPY {table} ({', '.join(cols)}) FROM STDIN WITH (FORMAT csv)", data)
        else:
            marks = ", ".join(["%s"] * len(cols))
            self.cursor.executemany(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", buf)
        self.rows[table] += len(buf)
        buf.clear()

    def flush_all(self) -> None:
        for table in STAGE_TABLES:
            self.flush(table)
        for table in STAGE_TABLES:
            self.analyze(table)

    def analyze(self, table: str) -> None:
        if self.postgres:
            # Temporary tables are never auto-analyzed; the joins need row counts.
            self.cursor.execute(f"ANALYZE {table}")

    def clear(self, table: str) -> None:
        """Empty a table reused batch after batch (TRUNCATE leaves no dead rows)."""
        self.buffers[table].clear()
        self.cursor.execute(f"{'TRUNCATE' if self.postgres else 'DELETE FROM'} {table}")

    def drop(self) -> None:
        for table in STAGE_TABLES:
            self.cursor.execute(f"DROP TABLE IF EXISTS {table}")


