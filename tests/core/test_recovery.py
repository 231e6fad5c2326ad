"""Recovery from faults: a lost database connection is no 500."""

from __future__ import annotations

import io
import queue
import threading
from collections.abc import Iterator
from wsgiref.util import setup_testing_defaults

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection, connections


class WebWorker:
    """One thread serving requests one after another through Django's WSGI handler, on
    its own database connection kept between requests: a gunicorn sync worker."""

    def __init__(self) -> None:
        self.handler = WSGIHandler()
        self.jobs: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            while (job := self.jobs.get()) is not None:
                job()
        finally:
            connections.close_all()

    def _call(self, fn):  # type: ignore[no-untyped-def]
        done: queue.Queue = queue.Queue()
        self.jobs.put(lambda: done.put(fn()))
        return done.get(timeout=60)

    def get(self, path: str) -> int:
        def request() -> int:
            environ: dict = {"PATH_INFO": path, "HTTP_HOST": "testserver",
                             "wsgi.input": io.BytesIO(), "wsgi.errors": io.StringIO()}
            setup_testing_defaults(environ)
            status: list[str] = []
            body = self.handler(environ, lambda s, h, exc_info=None: status.append(s))
            b"".join(body)
            body.close()  # request_finished: Django decides whether to keep the connection
            return int(status[0].split()[0])
        return self._call(request)

    def backend_pid(self) -> int:
        return self._call(lambda: connection.connection.info.backend_pid)

    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join(30)


@pytest.fixture
def web_worker() -> Iterator[WebWorker]:
    worker = WebWorker()
    yield worker
    worker.stop()


@pytest.mark.django_db(transaction=True)
def test_a_terminated_database_connection_is_no_500(needs_postgres: None,
                                                    web_worker: WebWorker) -> None:
    """The worker keeps its connection between requests (CONN_MAX_AGE); after the
    backend is terminated (a database restart, a failover) the next request used the
    dead connection and answered 500. Health checks reconnect it first."""
    assert web_worker.get("/") == 200
    pid = web_worker.backend_pid()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cursor.fetchone()[0] is True
    assert [web_worker.get("/") for _ in range(3)] == [200, 200, 200]
    assert web_worker.backend_pid() != pid
