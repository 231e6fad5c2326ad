"""Real headless Chromium (Playwright, the system binary) against pytest-django's live server.

Which Chromium, and skipping (failing under CI=true) without one: tests/chromium.py.
On failure each test leaves a screenshot in test-artifacts/. Every test records how
long the scripted worker took; the medians per interface are printed at the end of the run
and written to test-artifacts/browser-timings.json.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from collections.abc import Iterator

import pytest

from tests import ROOT
from tests.annotations.interfaces.browser.helpers import TIMINGS, MturkSite
from tests.chromium import launched_chromium

ARTIFACTS = ROOT / "test-artifacts"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    with launched_chromium() as b:
        yield b


@pytest.fixture
def page(browser: object, request: pytest.FixtureRequest, live_server: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.js_errors = errors
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = request.node.nodeid.replace("/", "_").replace("::", "-")
        for i, frame_page in enumerate(context.pages):
            # A crashed page must not hide the test's own failure.
            with contextlib.suppress(Exception):
                frame_page.screenshot(path=str(ARTIFACTS / f"{name}-{i}.png"), full_page=True)
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def mturk(page: object) -> MturkSite:
    return MturkSite(page)


def pytest_terminal_summary(terminalreporter: object) -> None:
    if not TIMINGS:
        return
    ARTIFACTS.mkdir(exist_ok=True)
    summary = {k: {"median_s": round(statistics.median(v), 2), "runs": len(v)}
               for k, v in sorted(TIMINGS.items())}
    (ARTIFACTS / "browser-timings.json").write_text(json.dumps(summary, indent=2))
    terminalreporter.write_sep("-", "scripted worker, median seconds per task")
    for k, v in summary.items():
        terminalreporter.write_line(f"{k:28} {v['median_s']:6.2f} s  ({v['runs']} runs)")
