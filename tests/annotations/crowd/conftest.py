"""Crowd-pipeline tests run Celery tasks inline unless they drive a real worker."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _inline_tasks(eager_unless_worker: None) -> None:
    """With a broker configured (CI), `.delay` would send tasks to Redis while the test's
    data is uncommitted: run them inline unless the test drives a real worker."""
