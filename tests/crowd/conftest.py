"""Crowd-pipeline tests run Celery tasks inline unless they drive a real worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def eager_crowd_tasks(request: pytest.FixtureRequest) -> Iterator[None]:
    """With a broker configured (CI), `.delay` would send tasks to Redis while the
    test's data is uncommitted; tests marked `worker` use a real worker instead."""
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
