"""Every way a test can skip; tests/test_ci_guards.py runs this file with and without CI."""

from __future__ import annotations

import pytest

from tests.chromium import require_chromium


def test_skips_itself() -> None:
    pytest.skip("a service is missing")


@pytest.mark.skipif(True, reason="a marker says so")
def test_marked_skip() -> None:
    pass


def test_needs_chromium() -> None:
    require_chromium()


@pytest.mark.xfail(reason="a known failure is not a skip", strict=True)
def test_expected_failure() -> None:
    raise AssertionError
