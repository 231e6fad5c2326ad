"""Real headless Chromium (Playwright, the system binary) against pytest-django's live server.

No Chromium: the browser tests skip with the reason — except under CI=true, where they
fail. On failure each test leaves a screenshot in test-artifacts/. Every test records how
long the scripted worker took; the medians per interface are printed at the end of the run
and written to test-artifacts/browser-timings.json.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import pytest

# Playwright's sync API runs an event loop in this thread; the live server and the test
# still talk to the database synchronously, which Django would otherwise refuse.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
IN_CI = os.environ.get("CI", "").lower() == "true"
# The stand-in MTurk site counts as public and the live server is on localhost: Chrome's
# Local Network Access checks would block that frame (a public HTTPS deployment never
# meets them), so they are switched off for the tests.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,"
                 "PrivateNetworkAccessForNavigations"]
SANDBOX = "https://workersandbox.mturk.com"
TIMINGS: dict[str, list[float]] = {}

pytestmark = pytest.mark.browser


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


@pytest.fixture(scope="session")
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
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


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
            try:
                frame_page.screenshot(path=str(ARTIFACTS / f"{name}-{i}.png"), full_page=True)
            except Exception:  # a crashed page must not hide the test's own failure
                pass
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


class MturkSite:
    """Stands in for MTurk's worker site: frames task pages, captures externalSubmit."""

    def __init__(self, page: object) -> None:
        self.page = page
        self.submissions: list[dict[str, str]] = []
        page.route(f"{SANDBOX}/**", self._handle)
        self._frame_src = ""

    def _handle(self, route: object) -> None:
        request = route.request
        if request.url.startswith(f"{SANDBOX}/mturk/externalSubmit"):
            form = parse_qs(request.post_data or "")
            self.submissions.append({k: v[0] for k, v in form.items()})
            route.fulfill(status=200, content_type="text/html",
                          body="<!doctype html><title>MTurk</title><p id=thanks>HIT submitted")
            return
        route.fulfill(status=200, content_type="text/html", body=(
            "<!doctype html><title>Worker sandbox</title><h1>HIT</h1>"
            f'<iframe id="task" src="{self._frame_src}" width="1260" height="800"></iframe>'))

    def open_framed(self, task_url: str) -> object:
        """Open the task page the way MTurk shows it: in an iframe on MTurk's site."""
        self._frame_src = task_url
        self.page.goto(f"{SANDBOX}/projects/1/tasks/1")
        return self.page.frame_locator("#task")

    def wait_for_submit(self, timeout: float = 10.0) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while not self.submissions:
            if time.monotonic() > deadline:
                raise AssertionError("the page never posted to MTurk's externalSubmit")
            self.page.wait_for_timeout(50)
        return self.submissions[-1]


@pytest.fixture
def mturk(page: object) -> MturkSite:
    return MturkSite(page)


def task_url(live_server: object, hit: object, worker: str = "W1", assignment: str = "A1",
             submit_to: str = SANDBOX) -> str:
    params = {"assignmentId": assignment, "hitId": hit.external_id or "", "workerId": worker,
              "turkSubmitTo": submit_to}
    return f"{live_server.url}/annotate/hit/{hit.pk}/?{urlencode(params)}"


def record_time(interface: str, method: str, seconds: float) -> None:
    TIMINGS.setdefault(interface, []).append(seconds)
    TIMINGS.setdefault(f"{interface}/{method}", []).append(seconds)


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
