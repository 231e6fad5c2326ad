"""Prepared statements (kbpo/core/prepared.py): same rows as the plain query, prepared
once per connection, prepared again on a new connection, and off when switched off."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kbpo.core import prepared

SQL = ("SELECT %(a)s + 1, %(b)s || 'x', %(a)s * 2, position('%%' IN %(b)s), "
       "(SELECT count(*) FROM django_content_type WHERE app_label = %(b)s)")
TYPES = {"a": "bigint", "b": "text"}


def run(a: int, b: str) -> tuple:
    with connection.cursor() as cur:
        prepared.execute(cur, "kbpo_test_prepared", SQL, {"a": a, "b": b}, TYPES)
        return cur.fetchone()


def plain(a: int, b: str) -> tuple:
    with connection.cursor() as cur:
        cur.execute(SQL, {"a": a, "b": b})
        return cur.fetchone()


def test_placeholders_numbered_by_first_use() -> None:
    text, names = prepared._positional("SELECT %(a)s, %(b)s, %(a)s, '%%'")
    assert text == "SELECT $1, $2, $1, '%'"
    assert names == ["a", "b"]


@pytest.mark.django_db(transaction=True)
def test_prepared_once_per_connection(needs_postgres: None) -> None:
    connection.close()
    with CaptureQueriesContext(connection) as q:
        first, second = run(4, "auth"), run(5, "a%b")
    assert first == plain(4, "auth") and first[4] > 0
    assert second == plain(5, "a%b") == (6, "a%bx", 10, 2, 0)
    sqls = [x["sql"] for x in q.captured_queries]
    assert sum(s.startswith("PREPARE kbpo_test_prepared") for s in sqls) == 1
    assert sum(s.startswith("EXECUTE kbpo_test_prepared") for s in sqls) == 2
    # A new connection (a reconnect after an error, CONN_MAX_AGE) prepares it again.
    connection.close()
    assert run(7, "auth") == plain(7, "auth")
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_prepared_statements "
                    "WHERE name = 'kbpo_test_prepared'")
        assert cur.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
def test_survives_a_rolled_back_transaction(needs_postgres: None) -> None:
    from django.db import transaction

    connection.close()

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        run(1, "auth")
        raise Rollback
    assert run(2, "auth") == plain(2, "auth")


@pytest.mark.django_db
def test_switched_off_runs_the_plain_query(settings: object, needs_postgres: None) -> None:
    settings.KBPO_DB_PREPARED_STATEMENTS = False
    with CaptureQueriesContext(connection) as q:
        assert run(3, "auth") == plain(3, "auth")
    assert not any(x["sql"].startswith(("PREPARE", "EXECUTE")) for x in q.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_a_statement_prepared_but_not_recorded_is_reused(needs_postgres: None) -> None:
    """An interruption between PREPARE and its bookkeeping (a task's time limit) leaves
    a statement the process does not know of: the next call uses it instead of failing
    with "already exists" until the connection closes."""
    connection.close()
    assert run(1, "auth") == plain(1, "auth")
    prepared._prepared_names().clear()  # as if the bookkeeping had been interrupted
    with CaptureQueriesContext(connection) as q:
        assert run(2, "auth") == plain(2, "auth")
    assert not any(x["sql"].startswith("PREPARE") for x in q.captured_queries)
