"""Postgres concurrency (parallel uploads, shared pairs) and a real Celery worker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections, transaction
from django.test import Client
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions import services
from submissions.models import MentionPair, RelationInstance, Submission
from submissions.processing import run_ingestion

from .kb import to_bytes, valid_lines

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="row locks need Postgres")


def in_threads(n: int, fn: Callable[[int], object]) -> list[object]:
    """Run fn(i) in n threads released together; returns results or exceptions."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = fn(i)
        except Exception as exc:
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_parallel_uploads_never_exceed_the_limit(user: User, corpus: Corpus, settings,
                                                 monkeypatch) -> None:
    settings.KBPO_SUBMISSION_DAILY_LIMIT = 2
    monkeypatch.setattr("submissions.tasks.ingest_submission.delay", lambda pk: None)
    real_quota = services.quota

    def slow_quota(*args: object) -> services.Quota:
        # Widen the race window: without the row lock every thread would pass here.
        q = real_quota(*args)  # type: ignore[arg-type]
        time.sleep(0.3)
        return q

    monkeypatch.setattr(services, "quota", slow_quota)

    def upload(i: int) -> object:
        return services.create_submission(
            owner=user, corpus=corpus, name=f"s{i}", file=SimpleUploadedFile(
                "kb.tsv", to_bytes([f"run_{i}", *valid_lines()[1:]])), original_name="kb.tsv",
            compressed=False)

    results = in_threads(5, upload)
    made = [r for r in results if isinstance(r, Submission)]
    refused = [r for r in results if isinstance(r, services.LimitExceeded)]
    assert len(made) == 2 and len(refused) == 3, results
    assert Submission.objects.count() == 2


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_ingestions_share_pairs_without_duplicates(
        stored: Callable[..., Submission]) -> None:
    subs = [stored(to_bytes(valid_lines(), gz=i % 2 == 1), name=f"s{i}") for i in range(4)]
    # The same submission twice as well: the second run must find nothing to do.
    ids = [s.pk for s in subs] + [subs[0].pk]
    results = in_threads(len(ids), lambda i: run_ingestion(ids[i]))
    assert sorted(map(str, results)) == sorted(["ingested"] * 4 + ["skipped (ingested)"])
    assert MentionPair.objects.count() == 8
    assert RelationInstance.objects.count() == 4 * 8
    assert all(Submission.objects.get(pk=s.pk).n_relations == 8 for s in subs)
    assert connection.vendor == "postgresql"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_api_upload_is_ingested_by_a_real_worker(
        celery_worker_process: dict, user: User, corpus: Corpus, media_root: Path) -> None:
    client = APIClient()
    client.force_authenticate(user)
    resp = client.post("/api/submissions/", {
        "name": "via-worker", "corpus": "tiny",
        "file": SimpleUploadedFile("kb.tsv.gz", to_bytes(valid_lines(), gz=True))},
        format="multipart")
    assert resp.status_code == 201, resp.content
    sub = Submission.objects.get(pk=resp.json()["id"])
    try:
        deadline = time.monotonic() + 60
        # After ingestion the worker goes on to plan the crowd sample (annotations app).
        while (sub.state in ("uploaded", "validating", "ingested", "planning")
               and time.monotonic() < deadline):
            time.sleep(0.25)
            sub.refresh_from_db()
        assert sub.state in ("annotating", "scoring"), (sub.state, sub.error, sub.report)
        assert sub.n_relations == 8 == RelationInstance.objects.filter(submission=sub).count()
        states = list(sub.events.values_list("to_state", flat=True))
        assert states[:4] == ["uploaded", "validating", "ingested", "planning"]
        detail = client.get(f"/api/submissions/{sub.pk}/").json()
        assert detail["stats"]["documents_covered"] == 2
        while (sub.hits.filter(state="pending", post_error="").exists()
               and time.monotonic() < deadline):  # let the planner finish posting
            time.sleep(0.25)
    finally:
        sub.file.delete(save=False)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_withdrawing_during_an_ingestion_answers_at_once(
        user: User, corpus: Corpus, stored: Callable[..., Submission]) -> None:
    """The ingestion holds the submission's row for the whole file; a withdrawal (API or
    page) waited for it, holding a web worker for minutes (past gunicorn's timeout)."""
    sub = stored(to_bytes(valid_lines()))
    locked, release = threading.Event(), threading.Event()

    def ingestion_holding_the_row() -> None:
        try:
            with transaction.atomic():
                Submission.objects.select_for_update().get(pk=sub.pk)
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=ingestion_holding_the_row)
    holder.start()
    try:
        assert locked.wait(10)
        api = APIClient()
        api.force_authenticate(user)
        started = time.monotonic()
        resp = api.post(f"/api/submissions/{sub.pk}/withdraw/")
        assert resp.status_code == 409 and resp.json()["code"] == "busy", resp.content
        assert "being validated right now" in resp.json()["detail"]
        client = Client()
        client.force_login(user)
        page = client.post(f"/submissions/{sub.pk}/withdraw/", follow=True)
        assert "being validated right now" in page.content.decode()
        assert time.monotonic() - started < 15
        sub.refresh_from_db()
        assert sub.state == "uploaded"
    finally:
        release.set()
        holder.join(30)
    # Once the lock is gone the same request withdraws it; operators still wait.
    assert api.post(f"/api/submissions/{sub.pk}/withdraw/").json()["state"] == "withdrawn"
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "0"
