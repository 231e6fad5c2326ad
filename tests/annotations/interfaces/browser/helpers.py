"""Helpers of the browser tests (imported under one name by conftest and the tests)."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlencode

SANDBOX = "https://workersandbox.mturk.com"
TIMINGS: dict[str, list[float]] = {}


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


def task_url(live_server: object, hit: object, worker: str = "W1", assignment: str = "A1",
             submit_to: str = SANDBOX) -> str:
    params = {"assignmentId": assignment, "hitId": hit.external_id or "", "workerId": worker,
              "turkSubmitTo": submit_to}
    return f"{live_server.url}/annotate/hit/{hit.url_key}/?{urlencode(params)}"


def record_time(interface: str, method: str, seconds: float) -> None:
    TIMINGS.setdefault(interface, []).append(seconds)
    TIMINGS.setdefault(f"{interface}/{method}", []).append(seconds)
