"""Stored page bodies are compressed with LZ4 on Postgres (migration estimation 0010):
decompressing a ~110 KB report body with pglz cost every request that served it."""

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


@pytest.mark.django_db
def test_stored_bodies_are_lz4(scored: World) -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                    "WHERE name = 'default_toast_compression'")
        if not cur.fetchone()[0]:
            pytest.skip("this Postgres is built without LZ4")
    client = Client()
    client.force_login(scored.a.owner)
    for url in (reverse("leaderboard", args=["t"]),
                reverse("submission-evaluation", args=[scored.a.pk])):
        assert client.get(url).status_code == 200
    assert Client().get(reverse("leaderboard", args=["t"])).status_code == 200
    assert _methods("estimation_boardbody") == {"lz4"}
    assert _methods("estimation_reportbody") == {"lz4"}
