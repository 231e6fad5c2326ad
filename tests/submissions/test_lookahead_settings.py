"""The look-ahead thread's forced-index settings (SET LOCAL enable_seqscan = off, …) are
per transaction, so they also apply to the caller's own statements run meanwhile."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection

from submissions import ingest, staging
from submissions.models import Submission

from .kb import to_bytes
from .test_batches import reordered, snapshot


@pytest.mark.django_db
def test_callers_statements_keep_the_planner_settings(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("Postgres only")
    seen: list[str] = []
    original = ingest.Ingestor._keys

    def spy(self, lines):  # type: ignore[no-untyped-def]
        # The caller's own queries for a batch (documents and sentences) run here.
        with connection.cursor() as cur:
            for _ in range(20):
                cur.execute("SELECT current_setting('enable_seqscan')")
                seen.append(cur.fetchone()[0])
        return original(self, lines)

    monkeypatch.setattr(ingest.Ingestor, "_keys", spy)
    monkeypatch.setattr(staging, "STAGE_BATCH", 1)
    data = to_bytes(reordered() * 1)
    for _ in range(3):
        snapshot(stored, data, 1, monkeypatch)
    assert seen and "off" not in seen, (seen.count("off"), len(seen))

