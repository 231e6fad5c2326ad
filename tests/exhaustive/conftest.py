"""Fixtures for the exhaustive-annotation tests: a small demo world, eager Celery."""

from __future__ import annotations

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
def _inline_tasks(eager_unless_worker: None) -> None:
    """With a broker configured (CI), `.delay` would send tasks to Redis while the test's
    data is uncommitted: run them inline unless the test drives a real worker."""
