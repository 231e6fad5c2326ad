"""Tasks really run in a separate Celery worker process on the real broker."""

from __future__ import annotations

import os

import pytest

from kbpo.core.tasks import ping


@pytest.mark.worker
def test_ping_runs_in_a_separate_worker_process(celery_worker_process: dict) -> None:
    result = ping.delay("hello").get(timeout=30)
    assert result["token"] == "hello"
    assert result["pid"] != os.getpid()
