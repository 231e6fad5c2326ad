"""Tests of the production stack: docker-compose.yml and deploy/ (the Caddy proxy)."""

from __future__ import annotations

import os
import shutil

import pytest


def require_caddy() -> str:
    """The caddy binary; under CI=true its absence fails the test, never skips it."""
    path = shutil.which("caddy")
    if path:
        return path
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI=true but caddy is not installed (apt-get install caddy; .ci/run does)")
    pytest.skip("caddy is not installed (apt-get install caddy)")
