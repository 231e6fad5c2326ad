"""Real headless Chromium (Playwright, the system binary) against pytest-django's live server.

No Chromium: the browser tests skip with the reason — except under CI=true, where they
fail. On failure each test leaves a screenshot in test-artifacts/. Every test records how
long the scripted worker took; the medians per interface are printed at the end of the run
and written to test-artifacts/browser-timings.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.helpers import TIMINGS, MturkSite

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
IN_CI = os.environ.get("CI", "").lower() == "true"
# The stand-in MTurk site counts as public and the live server is on localhost: Chrome's
# Local Network Access checks would block that frame (a public HTTPS deployment never
# meets them), so they are switched off for the tests.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,"
                 "PrivateNetworkAccessForNavigations"]

ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CHROMIUM_PATH"), shutil.which("chromium"),
                      shutil.which("chromium-browser"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    path = chromium_path()
    if path is None:
        reason = ("no Chromium found (looked for $CHROMIUM_PATH, chromium, chromium-browser, "
                  "/usr/bin/chromium): install it with `apt-get install -y chromium`")
        if IN_CI:
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if IN_CI:
            pytest.fail("CI=true but the playwright package is not installed")
        pytest.skip("the playwright package is not installed (requirements-dev.txt)")
    # Playwright's sync API keeps an event loop running in this thread while the tests
    # (and pytest-django's flushes) use the database synchronously, which Django refuses
    # unless told otherwise. Only while this package runs: the variable leaking into
    # later tests would fail their `check --deploy`.
    previous = os.environ.get(ASYNC_UNSAFE)
    os.environ[ASYNC_UNSAFE] = "true"
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
            yield b
            b.close()
    finally:
        if previous is None:
            os.environ.pop(ASYNC_UNSAFE, None)
        else:
            os.environ[ASYNC_UNSAFE] = previous


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
