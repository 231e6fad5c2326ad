"""Stored page bodies are compressed with LZ4 on Postgres (migration estimation 0010):
decompressing a ~110 KB report body with pglz cost every request that served it. So are
the stored boards (0011): pglz compressing them took much of a score run's store phase."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from tests.estimation.scoring.scoring_world import World

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql",
                                reason="TOAST compression is Postgres's")


def _methods(table: str) -> set[str | None]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT DISTINCT pg_column_compression(body) FROM {table} "
                    "WHERE octet_length(body) > 4000")  # small values are not compressed
        return {r[0] for r in cur.fetchall()}


def _skip_without_lz4() -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                    "WHERE name = 'default_toast_compression'")
        if not cur.fetchone()[0]:
            pytest.skip("this Postgres is built without LZ4")


@pytest.mark.django_db
def test_stored_bodies_are_lz4(scored: World) -> None:
    _skip_without_lz4()
    client = Client()
    client.force_login(scored.a.owner)
    for url in (reverse("leaderboard", args=["t"]),
                reverse("submission-evaluation", args=[scored.a.pk])):
        assert client.get(url).status_code == 200
    assert Client().get(reverse("leaderboard", args=["t"])).status_code == 200
    assert _methods("estimation_boardbody") == {"lz4"}
    assert _methods("estimation_reportbody") == {"lz4"}


@pytest.mark.django_db
def test_stored_boards_are_lz4() -> None:
    _skip_without_lz4()
    with connection.cursor() as cur:
        # The columns' setting: the test world's boards are too small to be compressed.
        cur.execute("SELECT attname, attcompression FROM pg_attribute "
                    "WHERE attrelid = 'estimation_boardsnapshot'::regclass "
                    "AND attname IN ('head', 'rows', 'html', 'api', 'csv')")
        assert dict(cur.fetchall()) == dict.fromkeys(("head", "rows", "html", "api", "csv"), "l")
