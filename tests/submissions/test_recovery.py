"""Ingestion recovers from faults: a lost database connection is retried, not failed."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections

from submissions import processing
from submissions.models import Submission

from .kb import to_bytes, valid_lines


@pytest.mark.django_db(transaction=True)
def test_an_ingestion_interrupted_by_the_database_is_retried_not_failed(
        needs_postgres: None, stored: Callable[..., Submission],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sub = stored(to_bytes(valid_lines()))
    inside, release = threading.Event(), threading.Event()
    pid: list[int] = []
    real = processing.Ingestor

    class Held(real):  # type: ignore[misc, valid-type]
        def run(self):  # type: ignore[no-untyped-def]
            pid.append(connection.connection.info.backend_pid)
            inside.set()
            release.wait(60)
            return super().run()

    monkeypatch.setattr(processing, "Ingestor", Held)
    outcome: list[object] = []

    def ingest() -> None:
        try:
            outcome.append(processing.run_ingestion(sub.pk))
        except Exception as exc:
            outcome.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=ingest)
    thread.start()
    try:
        assert inside.wait(30)
        with connection.cursor() as cursor:  # a database restart, for this session
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid[0]])
    finally:
        release.set()
        thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], processing.Interrupted), outcome
    sub.refresh_from_db()
    assert sub.state == "validating" and sub.error == ""
    # The retry (the task's, after KBPO_SUBMISSION_RETRY_DELAY) finishes the work.
    monkeypatch.setattr(processing, "Ingestor", real)
    assert processing.run_ingestion(sub.pk) == "ingested"
    sub.refresh_from_db()
    assert sub.n_relations == 8
    assert "failed" not in set(sub.events.values_list("to_state", flat=True))
