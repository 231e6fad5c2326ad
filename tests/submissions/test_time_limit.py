"""An ingestion that runs past KBPO_SUBMISSION_TIME_LIMIT is stopped by Celery's soft time
limit and the submission marked failed with a message that says so, keeping nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from submissions import ingest, tasks
from submissions.models import RelationInstance, State, Submission
from submissions.processing import run_ingestion

from .kb import to_bytes, valid_lines


def test_the_ingest_task_has_the_configured_time_limits(settings) -> None:
    # Read when the task is declared (worker start), as Celery reads task options.
    assert tasks.ingest_submission.soft_time_limit == settings.KBPO_SUBMISSION_TIME_LIMIT
    assert tasks.ingest_submission.time_limit == settings.KBPO_SUBMISSION_TIME_LIMIT + 60


@pytest.mark.django_db
def test_an_ingestion_stopped_by_the_time_limit_fails_clearly_and_keeps_nothing(
        stored: Callable[..., Submission], monkeypatch, settings) -> None:
    sub = stored(to_bytes(valid_lines()))
    real = ingest.Ingestor.run

    def slow(self: ingest.Ingestor):  # Celery raises this inside the task at the limit
        real(self)  # the rows are written...
        raise SoftTimeLimitExceeded()  # ...and the limit strikes before the commit

    monkeypatch.setattr(ingest.Ingestor, "run", slow)
    assert run_ingestion(sub.pk) == "failed"
    sub.refresh_from_db()
    assert sub.state == State.FAILED
    last = sub.events.order_by("-pk").first()
    assert f"took longer than {settings.KBPO_SUBMISSION_TIME_LIMIT:,} s" in last.message
    assert "Internal error" not in last.message
    assert not RelationInstance.objects.filter(submission=sub).exists()
