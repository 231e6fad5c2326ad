"""Ingestion recovers from faults: a lost database connection is retried, not failed;
a killed worker's ingestion is re-driven soon after a worker is back."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.utils import timezone

from submissions import processing
from submissions.models import Submission
from submissions.services import INGEST_TASK
from tests.conftest import celery_conf

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


def _held_by_another_session(pk: int) -> bool:
    """Whether an ingestion holds the submission's row lock right now."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM submissions_submission WHERE id = %s "
                           "FOR UPDATE NOWAIT", [pk])
        return False
    except OperationalError:
        return True


def _wait_for(what: str, check: Callable[[], object], timeout: float) -> object:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling a condition; the clock only bounds it
    return result


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_ingestion_whose_worker_is_killed_completes_once_a_worker_is_back(
        needs_postgres: None, killable_workers: Callable[..., object],
        stored: Callable[..., Submission]) -> None:
    """kill -9 of the whole worker mid-file: its message stays unacknowledged (Redis
    would redeliver it after the visibility timeout, an hour) and the submission sat in
    `validating` until the re-drive, 15-20 minutes later. Now the row nobody holds is
    re-queued once KBPO_SUBMISSION_LOST_AFTER passes, by the next worker's start-up
    re-drive even without beat; measured from the new worker's start."""
    from kbpo.celery import app

    # Enough blank lines for a few seconds of reading: time to kill it mid-file.
    sub = stored(to_bytes([*valid_lines(), *[""] * 2_000_000], gz=True))
    try:
        workers = killable_workers(KBPO_SUBMISSION_LOST_AFTER="2",
                                   KBPO_REDRIVE_ON_WORKER_START="1")
        first = workers.start()
        app.send_task(INGEST_TASK, args=[sub.pk], queue=workers.queue)
        _wait_for("the ingestion to hold its row", lambda: _held_by_another_session(sub.pk)
                  and Submission.objects.get(pk=sub.pk).state == "validating", 60)
        workers.kill(first)
        sub.refresh_from_db()
        assert sub.state == "validating", "the ingestion ended before the kill"
        # Its lock goes with its database session, once Postgres sees the client gone.
        _wait_for("the dead session's lock to go", lambda: not _held_by_another_session(
            sub.pk), 30)
        back = time.monotonic()
        workers.start()

        def done() -> bool:
            sub.refresh_from_db()
            return sub.state not in ("uploaded", "validating")

        _wait_for("the re-driven ingestion", done, 120)
        took = time.monotonic() - back
        # Ingested; the worker may already have moved it on to planning its sample.
        assert sub.state in ("ingested", "planning", "annotating"), (sub.state, sub.error)
        assert sub.n_relations == 8 and sub.redrives == 1
        assert "the worker validating it stopped" in " ".join(
            sub.events.values_list("message", flat=True))
        print(f"ingestion re-driven and done {took:.1f} s after the worker was back")
        assert took < 120
    finally:
        sub.file.delete(save=False)


@pytest.mark.django_db
def test_a_lost_ingestion_is_redriven_sooner_than_a_queued_upload(
        stored: Callable[..., Submission], settings,
        django_capture_on_commit_callbacks) -> None:
    """`validating` and unlocked means its worker died: re-queued after
    KBPO_SUBMISSION_LOST_AFTER; `uploaded` may just wait behind other uploads, and is
    re-queued only after KBPO_SUBMISSION_REDRIVE_AFTER."""
    settings.KBPO_SUBMISSION_LOST_AFTER = 60
    settings.KBPO_SUBMISSION_REDRIVE_AFTER = 900
    lost, queued = (stored(to_bytes([f"run{i}", *valid_lines()[1:]]), name=f"s{i}")
                    for i in range(2))
    two_minutes_ago = timezone.now() - dt.timedelta(minutes=2)
    Submission.objects.filter(pk=lost.pk).update(state="validating",
                                                 state_changed_at=two_minutes_ago)
    Submission.objects.filter(pk=queued.pk).update(state_changed_at=two_minutes_ago)
    with django_capture_on_commit_callbacks(execute=True):
        assert processing.redrive_stuck() == 1
    lost.refresh_from_db()
    queued.refresh_from_db()
    assert lost.state == "ingested" and lost.redrives == 1
    assert "the worker validating it stopped (attempt 1)" in lost.events.get(
        to_state="uploaded", from_state="validating").message
    assert queued.state == "uploaded" and queued.redrives == 0


@pytest.mark.django_db
def test_the_task_retries_an_interrupted_ingestion(stored: Callable[..., Submission],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   settings) -> None:
    """`Interrupted` makes the task retry itself (a worker waits
    KBPO_SUBMISSION_RETRY_DELAY first), at most KBPO_SUBMISSION_RETRIES times; it never
    marks the submission failed. Eager here: the retries run at once."""
    from submissions.tasks import ingest_submission

    sub = stored(to_bytes(valid_lines()))
    real = processing.run_ingestion
    calls: list[int] = []

    def interrupted_twice(pk: int) -> str:
        calls.append(pk)
        if len(calls) <= 2:
            raise processing.Interrupted("server closed the connection unexpectedly")
        return real(pk)

    monkeypatch.setattr(processing, "run_ingestion", interrupted_twice)
    with celery_conf(task_eager_propagates=False):  # (each eager retry is an apply())
        assert ingest_submission.apply(args=[sub.pk]).get() == "ingested"
        assert calls == [sub.pk] * 3
        calls.clear()
        settings.KBPO_SUBMISSION_RETRIES = 1  # the retries run out: the re-drive's turn
        monkeypatch.setattr(processing, "run_ingestion", lambda pk: calls.append(pk) or (
            _ for _ in ()).throw(processing.Interrupted("gone")))
        result = ingest_submission.apply(args=[sub.pk])
    assert isinstance(result.result, processing.Interrupted) and len(calls) == 2


@pytest.mark.django_db
def test_a_database_gone_before_the_file_is_opened_is_retried_too(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch,
        needs_postgres: None) -> None:
    """The first transaction (uploaded -> validating) runs before the ingestion's own
    handling: a lost connection there is retried as well; an error of the work is not."""
    from django.db import InterfaceError

    from submissions.tasks import ingest_submission

    sub = stored(to_bytes(valid_lines()))
    real = processing.run_ingestion
    calls: list[int] = []

    def gone_once(pk: int) -> str:
        calls.append(pk)
        if len(calls) == 1:
            raise InterfaceError("connection already closed")
        return real(pk)

    monkeypatch.setattr(processing, "run_ingestion", gone_once)
    with celery_conf(task_eager_propagates=False):
        assert ingest_submission.apply(args=[sub.pk]).get() == "ingested"
        assert len(calls) == 2
        calls.clear()
        monkeypatch.setattr(processing, "run_ingestion", lambda pk: calls.append(pk) or (
            _ for _ in ()).throw(ValueError("a bug")))
        result = ingest_submission.apply(args=[sub.pk])
    assert isinstance(result.result, ValueError) and len(calls) == 1
