"""Staged rows read back exactly as written (Postgres COPY text format, or executemany)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from submissions.staging import Stager, copy_text

ROWS = [
    (":E1", "https://example.org/a", 1),
    (":E\\2", "C:\\dir\\file", 2),  # backslashes: the escaping path
    (":E3", "carriage\rreturn", 3),
    (":E4", "\\N", 4),  # the NULL marker as text stays text
    (":E5", "ünïcødé \x0b", 5),
    (":E6", None, 6),
]


def _plain(row: tuple) -> bool:
    """No value needing COPY's escaping (a backslash or a carriage return)."""
    return all(not isinstance(v, str) or ("\\" not in v and "\r" not in v) for v in row)


@pytest.mark.django_db
@pytest.mark.parametrize("rows", [ROWS, [r for r in ROWS if _plain(r)]])
def test_staged_rows_read_back_exactly(rows: list[tuple]) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        stager = Stager(cursor)
        stager.create()
        for row in rows:
            stager.add("kbpo_stage_link", row)
        stager.add("kbpo_stage_keys", (":E1", None))
        stager.add("kbpo_stage_keys", (":E2", 12))
        stager.flush_all()
        cursor.execute("SELECT node, link, line FROM kbpo_stage_link ORDER BY line")
        assert cursor.fetchall() == rows
        cursor.execute("SELECT node, doc FROM kbpo_stage_keys ORDER BY node")
        assert cursor.fetchall() == [(":E1", None), (":E2", 12)]
        stager.drop()


def test_copy_text_escapes_only_when_needed() -> None:
    assert copy_text([(1, None, "a"), (2, 0.9, ":x")], 3) == "1\t\\N\ta\n2\t0.9\t:x\n"
    assert copy_text([("a\\b", "c\rd", 1)], 3) == "a\\\\b\tc\\rd\t1\n"
    assert copy_text([("\\N", None, 1)], 3) == "\\\\N\t\\N\t1\n"
