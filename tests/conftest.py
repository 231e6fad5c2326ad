"""Shared fixtures: real services check, Celery modes, a separate Celery worker process,
the Hypothesis profiles, and the rule that nothing is skipped under CI=true.

Every fixture here restores what it changes, so the suite passes in any order
(pytest-randomly shuffles it; the header prints `--randomly-seed=N`, and passing that
option again reproduces the order).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests import ROOT

IN_CI = os.environ.get("CI", "").lower() == "true"

# Hypothesis: CI replays the same examples on every run (derandomised, no example
# database), so a red CI is reproducible with the same command. Neither profile has a
# deadline or the too_slow health check: both time the machine, and a timing assertion
# on a shared 2-core machine is a flaky test. Developers get fresh random examples
# unless they ask for the CI profile with HYPOTHESIS_PROFILE=ci.
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev")
hypothesis_settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.register_profile("dev", deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)


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


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"hypothesis profile: {HYPOTHESIS_PROFILE}; CI={'true' if IN_CI else 'false'} "
            f"({'skips fail' if IN_CI else 'skips allowed'})"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under CI=true a skipped test is a failed test: CI has every service and browser,
    so a skip there can only hide a test that no longer runs."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where nothing may be skipped: {reason}"


@pytest.fixture
def needs_postgres() -> None:
    """For tests that need Postgres itself (row locks, concurrent connections): skipped
    on SQLite, which CI=true never allows."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres (set DATABASE_URL); SQLite cannot run this test")


@contextmanager
def held_in_another_connection(monkeypatch: pytest.MonkeyPatch, owner: object, name: str,
                               work: Callable[[], object]) -> Iterator[list[object]]:
    """Run work() in a thread (its own DB connection) and hold it inside owner.name, with
    whatever locks work took so far, for the body of the block; the body runs with a 3 s
    lock_timeout, so a lock it would wait on fails the test instead of hanging it. Yields
    the list work()'s result lands in once the block has released it."""
    import threading

    from django.db import connection, connections

    inside, release = threading.Event(), threading.Event()
    real = getattr(owner, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        inside.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, held)
    results: list[object] = []

    def run() -> None:
        try:
            results.append(work())
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert inside.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '3s'")
        try:
            yield results
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = 0")
    finally:
        release.set()
        thread.join(60)


# --- Celery -----------------------------------------------------------------------


@contextmanager
def celery_conf(**values: object) -> Iterator[None]:
    """Set Celery app options for a block and put the old values back."""
    from kbpo.celery import app

    old = {k: getattr(app.conf, k) for k in values}
    for k, v in values.items():
        setattr(app.conf, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(app.conf, k, v)


@pytest.fixture(autouse=True)
def _celery_inline_unless_worker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tasks run inline in every test, except those that drive a real worker (`worker`).

    With a broker configured (CI) a `.delay` would otherwise go to Redis: lost while the
    test's data is uncommitted, or, after a worker test, run by that worker against a
    later test's data. Worker tests get their queue from `celery_worker_process`.
    """
    if request.node.get_closest_marker("worker"):
        yield
        return
    with celery_conf(task_always_eager=True):
        yield


@pytest.fixture
def eager_unless_worker() -> None:
    """Kept for the folder conftests that ask for it; `_celery_inline_unless_worker`
    (autouse) now does this for every test."""


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
    # The session's worker serves many tests: a re-drive it queued at start would act
    # on whichever test's data is there when its countdown ends.
    env["KBPO_REDRIVE_ON_WORKER_START"] = "0"
    # The repository first; keep what the caller had (scripts/mutation_check.sh injects
    # its mutations into every process through PYTHONPATH).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return env


def _wait_until_disconnected(timeout: float = 5) -> None:
    """Wait until no other session uses the test database, so it can be dropped.

    A stopped worker's Postgres backends go away within a moment of its processes
    exiting. What is left after `timeout` belongs to this process (the live server's
    request threads keep their persistent connections, CONN_MAX_AGE): waiting longer
    would not end those, so they are logged and terminated.
    """
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    query = ("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
             "AND pid <> pg_backend_pid()")
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while True:
            cursor.execute(query)
            pids = [r[0] for r in cursor.fetchall()]
            if not pids:
                break
            if time.monotonic() > deadline:
                cursor.execute("SELECT pid, application_name, state, backend_start, "
                               "left(query, 200) FROM pg_stat_activity WHERE pid = ANY(%s)",
                               [pids])
                with open(ROOT / "test-artifacts" / "lingering-connections.log", "a") as f:
                    for row in cursor.fetchall():
                        print(*row, sep=" | ", file=f)
                cursor.execute(f"SELECT pg_terminate_backend(pid) FROM ({query}) AS others")
                break
            time.sleep(0.1)  # polling a condition, not timing an assertion
    connection.close()


@pytest.fixture(scope="session")
def _celery_worker_session(django_db_setup: None, django_db_blocker) -> Iterator[dict]:
    """Start `celery worker` once per session as a separate OS process on the real broker.

    It consumes a queue unique to this session, so a stray worker from another run can
    never steal its tasks. Changes no global state: `celery_worker_process` routes a
    test's tasks to it for the duration of that test.
    """
    from django.conf import settings
    from django.db import connection

    from kbpo.celery import app

    if settings.CELERY_TASK_ALWAYS_EAGER:
        if IN_CI:
            pytest.fail("CI=true but Celery is in eager mode: set CELERY_BROKER_URL")
        pytest.skip("no CELERY_BROKER_URL: the separate-worker tests need Redis")
    queue = f"kbpo-test-{uuid.uuid4().hex[:10]}"
    name = f"{queue}@{os.uname().nodename}"
    log_path = ROOT / "test-artifacts" / f"celery-worker-{queue}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = open(log_path, "w")  # noqa: SIM115 - kept open for the worker's lifetime
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbpo", "worker", "-Q", queue, "-c", "2",
         "--without-gossip", "--without-mingle", "--loglevel", "INFO", "-n", name],
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
                app.send_task("kbpo.ping", args=["ready"], queue=queue).get(timeout=5)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
        yield {"pid": proc.pid, "queue": queue, "name": name, "log": log_path}
    finally:
        # Idle by now (each test's teardown made it so): a cold shutdown is enough.
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log.close()
        with django_db_blocker.unblock():
            _wait_until_disconnected()


class KillableWorkers:
    """Celery workers of one test, on a queue of its own, that the test may kill -9
    (`kill`) and start again (`start`): for recovery tests. Teardown stops what runs
    and removes the queue, including the killed worker's unacknowledged message."""

    def __init__(self, db_name: str, env: dict[str, str]) -> None:
        self.queue = f"kbpo-kill-{uuid.uuid4().hex[:10]}"
        self.env = {**_worker_env(db_name), "CELERY_TASK_DEFAULT_QUEUE": self.queue,
                    **env}
        self.procs: list[subprocess.Popen] = []
        self.logs: list[object] = []

    def start(self) -> subprocess.Popen:
        """Start a worker (2 pool processes, the default queue routed to this test's)
        and wait until it answers."""
        from kbpo.celery import app

        n = len(self.procs)
        log_path = ROOT / "test-artifacts" / f"celery-{self.queue}-{n}.log"
        log_path.parent.mkdir(exist_ok=True)
        log = open(log_path, "w")  # noqa: SIM115 - closed at teardown
        self.logs.append(log)
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "kbpo", "worker", "-Q", self.queue,
             "-c", "2", "--without-gossip", "--without-mingle", "--loglevel", "INFO",
             "-n", f"{self.queue}-{n}@{os.uname().nodename}"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group: kill() reaches the pool
        self.procs.append(proc)
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"celery worker exited with {proc.returncode}; see {log_path}")
            try:
                app.send_task("kbpo.ping", args=["ready"], queue=self.queue).get(timeout=5)
                return proc
            except Exception:
                if time.monotonic() > deadline:
                    raise

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        """kill -9 the worker and its pool processes at once: no shutdown, no ack."""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGQUIT)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=20)
        for log in self.logs:
            log.close()  # type: ignore[attr-defined]
        import redis
        from django.conf import settings

        with redis.Redis.from_url(settings.CELERY_BROKER_URL) as r:
            r.delete(self.queue, f"_kombu.binding.{self.queue}",
                     f"_kombu.binding_permanent.{self.queue}")
            for tag, payload in r.hgetall("unacked").items():
                if self.queue.encode() in payload:
                    r.hdel("unacked", tag)
                    r.zrem("unacked_index", tag)


@pytest.fixture
def killable_workers(request: pytest.FixtureRequest) -> Iterator[Callable[..., KillableWorkers]]:
    """`killable_workers(**env)`: a `KillableWorkers` whose workers get `env` on top of
    the test settings; this test's tasks go to their queue. Needs the `worker` mark."""
    from django.conf import settings
    from django.db import connection

    if not request.node.get_closest_marker("worker"):
        pytest.fail("a test that uses killable_workers must be marked @pytest.mark.worker")
    if settings.CELERY_TASK_ALWAYS_EAGER:
        if IN_CI:
            pytest.fail("CI=true but Celery is in eager mode: set CELERY_BROKER_URL")
        pytest.skip("no CELERY_BROKER_URL: the separate-worker tests need Redis")
    made: list[KillableWorkers] = []

    def make(**env: str) -> KillableWorkers:
        workers = KillableWorkers(connection.settings_dict["NAME"], env)
        made.append(workers)
        return workers

    try:
        yield make
    finally:
        for workers in made:
            workers.close()


def _quiesce(app: object, worker: dict, timeout: float = 60) -> None:
    """Wait until the worker has nothing queued, held back (countdown) or running.

    A worker test may leave tasks behind (a debounced recomputation, a re-queue); run
    later, they would write into the next test's data. Queued messages are purged,
    held-back and prefetched ones revoked (the worker discards them), running ones
    awaited.
    """
    # limit=1: return as soon as the one worker answers, not after the whole timeout
    inspect = app.control.inspect(destination=[worker["name"]], timeout=5.0, limit=1)
    deadline = time.monotonic() + timeout
    revoked: set[str] = set()
    quiet_rounds = 0
    while quiet_rounds < 2:  # twice in a row: a finishing task may queue another
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(worker["queue"])
        replies = [inspect.active(), inspect.reserved(), inspect.scheduled()]
        if any(r is None or worker["name"] not in r for r in replies):
            busy = ["(no reply from the worker)"]
        else:
            active, reserved, scheduled = (r[worker["name"]] for r in replies)
            waiting = [t["id"] for t in reserved] + [t["request"]["id"] for t in scheduled]
            new = [i for i in waiting if i not in revoked]
            if new:
                app.control.revoke(new, destination=[worker["name"]])
                revoked.update(new)
            busy = [t["id"] for t in active] + new
        if not busy:
            quiet_rounds += 1
            continue
        quiet_rounds = 0
        if time.monotonic() > deadline:
            raise AssertionError(f"the test worker is still busy after {timeout} s: {busy}")
        time.sleep(0.2)  # polling a condition


@pytest.fixture
def celery_worker_process(request: pytest.FixtureRequest, _celery_worker_session: dict,
                          transactional_db: None) -> Iterator[dict]:
    """Route this test's tasks to the session's worker process; restore afterwards.

    Tests that use it need committed data (`transactional_db`, requested here), since
    the worker has its own database connection. At teardown, before the database is
    flushed, the worker is made idle, so nothing it does leaks into another test.
    """
    from kbpo.celery import app

    if not request.node.get_closest_marker("worker"):
        pytest.fail("a test that uses celery_worker_process must be marked "
                    "@pytest.mark.worker")
    worker = _celery_worker_session
    try:
        with celery_conf(task_default_queue=worker["queue"], task_always_eager=False):
            yield worker
    finally:
        _quiesce(app, worker)


# --- signals ------------------------------------------------------------------------


@pytest.fixture
def no_planning(request: pytest.FixtureRequest) -> Iterator[None]:
    """Keep submissions in `ingested`: disconnect the crowd planner that follows
    ingestion, for tests that build draws and labels themselves. Real-worker tests
    (marker `worker`) keep it, since the planner runs in the worker process anyway."""
    from estimation.apps import _plan_on_ingest
    from submissions.services import submission_ingested

    if request.node.get_closest_marker("worker"):
        yield
        return
    was_connected = submission_ingested.disconnect(dispatch_uid="estimation-plan")
    try:
        yield
    finally:
        if was_connected:
            submission_ingested.connect(_plan_on_ingest, dispatch_uid="estimation-plan")


@pytest.fixture(autouse=True)
def _refit_only_when_asked(settings: Any) -> None:
    """Label changes do not refit the crowd model (KBPO_CROWD_REFIT_DEBOUNCE = 0): a test
    of the aggregation or the quality pass runs each step itself and checks the state
    between them. Tests of the refit's timing turn it on."""
    settings.KBPO_CROWD_REFIT_DEBOUNCE = 0


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Every test starts with an empty cache: rate-limit counters (and cached pages) of
    one test must not leak into the next."""
    from django.core.cache import cache

    cache.clear()
    yield


def pytest_terminal_summary(terminalreporter: object, config: pytest.Config) -> None:
    """Repeat the order's seed at the end (the header is hidden by -q)."""
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(  # type: ignore[attr-defined]
            f"test order: random, seed {seed}; `--randomly-seed={seed}` repeats it")
