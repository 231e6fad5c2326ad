"""Shared fixtures: real services check, a separate Celery worker process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_configure(config: pytest.Config) -> None:
    """Under CI=true the suite must run on Postgres and a real broker, never fall back."""
    if not IN_CI:
        return
    db = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if not db.startswith("postgres"):
        pytest.exit(f"CI=true but DATABASE_URL is {db!r}: the suite must run on Postgres", 3)
    if not broker.startswith("redis"):
        pytest.exit(f"CI=true but CELERY_BROKER_URL is {broker!r}: the suite needs Redis", 3)


def _worker_env(db_name: str) -> dict[str, str]:
    """The worker's environment: the same settings, pointed at the test database."""
    from django.conf import settings

    env = dict(os.environ)
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("postgresql"):
        user = db.get("USER") or "postgres"
        host = db.get("HOST") or "127.0.0.1"
        port = db.get("PORT") or 5432
        password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
        env["DATABASE_URL"] = f"postgres://{user}{password}@{host}:{port}/{db_name}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{db_name}"
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup: None, django_db_blocker: object) -> Iterator[dict]:
    """Start `celery worker` as a separate OS process on the real broker.

    Tasks are routed to a queue unique to this test session, so a stray worker from
    another run can never steal them. Tests that use it need committed data
    (`transactional_db`), since the worker has its own database connection.
    """
    from django.conf import settings
    from django.db import connection

    from kbpo.celery import app

    if settings.CELERY_TASK_ALWAYS_EAGER:
        if IN_CI:
            pytest.fail("CI=true but Celery is in eager mode: set CELERY_BROKER_URL")
        pytest.skip("no CELERY_BROKER_URL: the separate-worker tests need Redis")
    queue = f"kbpo-test-{uuid.uuid4().hex[:10]}"
    app.conf.task_default_queue = queue
    app.conf.task_always_eager = False
    log_path = ROOT / "test-artifacts" / f"celery-worker-{queue}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = open(log_path, "w")  # noqa: SIM115 - kept open for the worker's lifetime
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbpo", "worker", "-Q", queue, "-c", "2",
         "--without-gossip", "--without-mingle", "--loglevel", "INFO", "-n", f"{queue}@%h"],
        cwd=ROOT, env={**_worker_env(connection.settings_dict["NAME"]),
                       # tasks the worker enqueues itself must reach this worker too
                       "CELERY_TASK_DEFAULT_QUEUE": queue}, stdout=log,
        stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"celery worker exited with {proc.returncode}; see {log_path}")
            try:
                result = app.send_task("kbpo.ping", args=["ready"], queue=queue)
                result.get(timeout=5)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
        yield {"pid": proc.pid, "queue": queue, "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def no_planning(request: pytest.FixtureRequest) -> Iterator[None]:
    """Keep submissions in `ingested`: disconnect the crowd planner that follows
    ingestion, for tests that build draws and labels themselves. Real-worker tests
    (marker `worker`) keep it, since the planner runs in the worker process anyway."""
    from annotations.apps import _plan_on_ingest
    from submissions.services import submission_ingested

    if request.node.get_closest_marker("worker"):
        yield
        return
    submission_ingested.disconnect(dispatch_uid="annotations-plan")
    try:
        yield
    finally:
        submission_ingested.connect(_plan_on_ingest, dispatch_uid="annotations-plan")


@pytest.fixture
def eager_unless_worker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run Celery tasks inline, except in tests that drive a real worker (`worker`)."""
    from kbpo.celery import app

    if request.node.get_closest_marker("worker"):
        yield
        return
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = old
