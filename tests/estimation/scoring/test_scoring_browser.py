"""Headless Chromium on the leaderboard and the evaluation report (live server).

Screenshots go to test-artifacts/ when a check fails (always with KBPO_SCREENSHOTS=1).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.test import Client

from annotations.models import PairLabel
from estimation import scoring
from submissions.models import State, Submission
from tests import ROOT
from tests.chromium import launched_chromium
from tests.estimation.scoring.scoring_demo import draw, exhaustive, label_from_gold, load_demo
from tests.factories import make_user

ARTIFACTS = ROOT / "test-artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_page() -> Iterator[object]:
    # tests/chromium.py decides which Chromium runs (and fails under CI=true without one).
    with launched_chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        try:
            yield page
        finally:
            page.goto("about:blank")  # stop the report's polling before the server stops
            context.close()


def _shot(page: object, name: str, always: bool = False) -> None:
    if always and os.environ.get("KBPO_SCREENSHOTS") != "1":
        return
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


@pytest.fixture
def demo_scores(tmp_path: Path, settings) -> dict:
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = make_user("demo")
    demo = load_demo(tmp_path / "world", owner, docs=40, systems=6, seed=7, tag="demo")
    names = sorted(demo.submissions)
    Submission.objects.filter(pk=demo.submissions[names[0]].pk).update(is_baseline=True)
    private = demo.submissions[names[1]]
    Submission.objects.filter(pk=private.pk).update(public=False)
    Submission.objects.filter(corpus=demo.corpus).update(state=State.SCORING)
    rng = np.random.default_rng(3)
    exhaustive(demo, 0.5, seed=3)
    for n in (20, 40, 80):  # three runs: the report's history narrows
        for sub in demo.submissions.values():
            draw(sub, n, rng)
        label_from_gold(demo)
        scoring.recompute(demo.corpus)
    return {"demo": demo, "private": private, "owner": owner}


def _login(page: object, live_server: object, user: object) -> None:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{  # type: ignore[attr-defined]
        "name": django_settings.SESSION_COOKIE_NAME, "value": cookie.value,
        "url": live_server.url}])  # type: ignore[attr-defined]


def _values(page: object) -> list[float]:
    raw = page.eval_on_selector_all(  # type: ignore[attr-defined]
        "#leaderboard tbody tr", "rows => rows.map(r => r.dataset.value)")
    return [float(v) for v in raw if v]


def test_leaderboard_sorts_and_draws_error_bars(browser_page: object, live_server: object,
                                                demo_scores: dict) -> None:
    page = browser_page
    try:
        page.goto(f"{live_server.url}/leaderboard/demo/")
        rows = page.locator("#leaderboard tbody tr")
        assert rows.count() == 5  # the private system is hidden from visitors
        assert page.locator("svg.errbar").count() == 5
        # Error bars really render: whiskers have width, points are on screen.
        box = page.locator("svg.errbar line.whisker").first.bounding_box()
        assert box is not None and box["width"] > 5
        assert page.locator("svg.errbar circle.point").first.is_visible()
        assert page.locator(".badge", has_text="baseline").count() == 1
        f1 = _values(page)
        assert f1 == sorted(f1, reverse=True) and len(f1) >= 4
        _shot(page, "leaderboard-f1", always=True)

        page.click("th.sortable a[data-sort-key=precision]")
        page.wait_for_url("**sort=precision**")
        assert page.locator("#leaderboard").get_attribute("data-sort") == "precision"
        p = _values(page)
        assert p == sorted(p, reverse=True) and p != f1

        page.click("a.seg-item[data-scheme=entity]")
        page.wait_for_url("**scheme=entity&**")
        assert page.locator("a.seg-item.active[data-scheme=entity]").count() == 1
        assert page.locator("svg.errbar").count() == 5
    except Exception:
        _shot(page, "leaderboard-failure")
        raise


def test_report_shows_progress_history_and_samples(browser_page: object, live_server: object,
                                                   demo_scores: dict) -> None:
    page = browser_page
    sub = demo_scores["private"]
    try:
        _login(page, live_server, demo_scores["owner"])
        page.goto(f"{live_server.url}/leaderboard/demo/")
        assert page.locator("#leaderboard tbody tr").count() == 6  # owner sees the private one
        assert page.locator("tr.mine .badge", has_text="private").count() >= 1

        # The page's timers run on Playwright's clock, paused: the report's first poll
        # happens exactly when the test lets the clock run, never before or after.
        page.clock.install()
        page.clock.pause_at(dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
        page.goto(f"{live_server.url}/submissions/{sub.pk}/report/")
        fill = page.locator("#progress-fill")
        assert fill.evaluate("el => el.style.width") == "100%"
        assert page.locator("#history svg").count() == 3
        assert page.locator("#history polygon.band").count() == 3
        assert page.locator("table.samples tbody tr").count() > 0
        assert page.locator("table.samples mark.subject").count() > 0
        _shot(page, "report", always=True)
        # The polled endpoint answers and the page keeps its numbers: mark the number
        # stale, let the poll's timer fire, and wait until the poll has written it again.
        page.locator("#progress-pct").evaluate("el => { el.textContent = 'stale'; }")
        with page.expect_response(lambda r: "/progress.json" in r.url) as polled:
            page.clock.run_for(30_000)
        assert polled.value.ok
        # A locator expectation, not wait_for_function: the page's CSP forbids eval, and
        # a string predicate that is not true at once is re-evaluated by eval in the page.
        from playwright.sync_api import expect

        expect(page.locator("#progress-pct")).to_have_text("100")
        assert fill.evaluate("el => el.style.width") == "100%"
        page.click("a.seg-item:has-text('wrong')")
        page.wait_for_url("**verdict=wrong**")
        badges = page.locator("table.samples tbody .badge").all_inner_texts()
        assert badges and all("wrong" in b for b in badges)
    except Exception:
        _shot(page, "report-failure")
        raise


def test_long_names_do_not_widen_the_pages(browser_page: object, live_server: object,
                                           scored: object) -> None:
    """A system name is up to 100 characters with no space: the compare form's select
    took its width and the page scrolled sideways (1,351 px at a 375 px viewport)."""
    Submission.objects.filter(pk=scored.a.pk).update(name="W" * 100)  # type: ignore[attr-defined]
    page = browser_page
    a, b = scored.a.pk, scored.b.pk  # type: ignore[attr-defined]
    urls = ["/leaderboard/", "/leaderboard/t/", f"/leaderboard/t/compare/?a={a}&b={b}",
            f"/submissions/{a}/report/"]
    try:
        for width in (375, 1280):
            page.set_viewport_size({"width": width, "height": 800})  # type: ignore[attr-defined]
            for url in urls:
                page.goto(live_server.url + url)  # type: ignore[attr-defined]
                assert "W" * 100 in page.content()  # type: ignore[attr-defined]
                wide = page.evaluate("document.documentElement.scrollWidth")  # type: ignore[attr-defined]
                assert wide <= width, (width, url, wide)
    except Exception:
        _shot(page, "long-names-failure")
        raise


def test_report_stops_polling_in_a_final_state_or_once_hidden(
        browser_page: object, live_server: object, scored: object) -> None:
    """The poller stopped only in a final state at 100% labelled: a report of a
    withdrawn submission with unlabelled draws (or one made private meanwhile, 404)
    polled every 30-60 s for as long as it stayed open."""
    beta, alpha = scored.b, scored.a  # type: ignore[attr-defined]
    PairLabel.objects.filter(pair__instances__submission=beta).exclude(
        pair__instances__submission=alpha).delete()  # Beta keeps an unlabelled draw
    Submission.objects.filter(pk=beta.pk).update(state=State.WITHDRAWN)
    page = browser_page
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "progress.json" in r.url else None)  # type: ignore[attr-defined]
    page.clock.install()  # type: ignore[attr-defined]
    page.clock.pause_at(dt.datetime(2030, 1, 1, tzinfo=dt.UTC))  # type: ignore[attr-defined]
    try:
        for sub, hide in ((beta, False), (alpha, True)):
            polls.clear()
            page.goto(f"{live_server.url}/submissions/{sub.pk}/report/")  # type: ignore[attr-defined]
            if hide:
                Submission.objects.filter(pk=sub.pk).update(public=False)
            with page.expect_response(lambda r: "/progress.json" in r.url) as first:  # type: ignore[attr-defined]
                page.clock.run_for(30_000)  # type: ignore[attr-defined]
            assert first.value.status == (404 if hide else 200)
            if not hide:
                assert first.value.json()["state"] == "withdrawn"
                assert first.value.json()["percent"] < 100
            page.clock.run_for(10 * 60_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(200)  # type: ignore[attr-defined]
            assert len(polls) == 1, (sub.pk, polls)
    except Exception:
        _shot(page, "report-polling-failure")
        raise
