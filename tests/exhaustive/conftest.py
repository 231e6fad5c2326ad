"""Fixtures for the exhaustive-annotation tests: a small demo world, eager Celery."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbpo import demo_world

WORLD_DOCS, WORLD_SYSTEMS, WORLD_SEED = 40, 5, 7


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exh-world")
    demo_world.generate(out, WORLD_DOCS, WORLD_SYSTEMS, WORLD_SEED)
    return out


@pytest.fixture(autouse=True)
def eager_tasks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run Celery tasks inline (with a broker configured, .delay would go to Redis)."""
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
