"""Fixtures for the exhaustive-annotation tests: a small demo world (tasks run inline:
tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbpo.demo.world import generate as demo_world

WORLD_DOCS, WORLD_SYSTEMS, WORLD_SEED = 40, 5, 7


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exh-world")
    demo_world.generate(out, WORLD_DOCS, WORLD_SYSTEMS, WORLD_SEED)
    return out

