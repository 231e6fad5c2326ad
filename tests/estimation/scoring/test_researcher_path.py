"""A researcher's whole path in Chromium: sign up, upload, watch the progress, read the
report, compare with another system, find the row on the leaderboard."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db.models import F

from estimation import scoring
from estimation.models import ScoreRun
from submissions.models import State, Submission
from tests.estimation.scoring.scoring_demo import draw, label_from_gold, scored_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RUN_ID = "r" * 200  # a long token: the submission page must wrap it, not widen

# Every tick label of every chart lies inside its SVG's viewBox (none is clipped).
CLIPPED = """svgs => svgs.flatMap(svg => {
  const vb = svg.viewBox.baseVal;
  return [...svg.querySelectorAll('text')].map(t => {
    const b = t.getBBox();
    return (b.x < vb.x - 0.5 || b.x + b.width > vb.x + vb.width + 0.5) ? t.textContent : null;
  }).filter(x => x);
})"""


@pytest.fixture
def world(tmp_path: Path, settings) -> dict:
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = User.objects.create_user("demo-systems")
    demo, rng = scored_demo(tmp_path / "world", owner, docs=30, systems=4, draws=60)
    # The researcher's file: one of the world's systems under a very long run id.
    kb = sorted((demo.out / "systems").glob("*.kb"))[0].read_text().splitlines()
    upload = tmp_path / "my-system.kb"
    upload.write_text("\n".join([RUN_ID, *kb[1:]]) + "\n")
    return {"demo": demo, "upload": upload, "rng": rng}


def test_sign_up_upload_progress_report_compare_leaderboard(page, live_server,
                                                            world: dict) -> None:
    base = live_server.url
    demo = world["demo"]
    # 1. Sign up.
    page.goto(f"{base}/accounts/register/")
    page.fill("#id_username", "grace")
    page.fill("#id_email", "grace@example.org")
    page.fill("#id_password1", "a-long-passphrase-for-grace-42")
    page.fill("#id_password2", "a-long-passphrase-for-grace-42")
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{base}/")
    assert User.objects.filter(username="grace").exists()
    # A new account uploads once it has opened the link mailed to it.
    (message,) = mail.outbox
    link = re.search(r"(/accounts/confirm/\S+)", message.body).group(1)
    page.goto(f"{base}{link}")

    # 2. Upload (validation runs in the request: no worker here).
    page.goto(f"{base}/submissions/new/")
    page.fill("#id_name", "Grace's extractor")
    page.select_option("#id_corpus", "demo")
    page.set_input_files("#id_file", str(world["upload"]))
    page.check("#id_public")
    page.get_by_role("button", name="Upload and validate").click()
    page.wait_for_url("**/submissions/*/")
    sub = Submission.objects.get(owner__username="grace")
    assert page.locator("#state-badge").inner_text() == "ingested"
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1280  # RUN_ID wraps

    # The status page polls and reloads itself when the state changes (below): leave it
    # first, or its reload can abort the report's navigation.
    page.goto("about:blank")

    # 3. The crowd labels its sample (a perfect crowd here) and the scores are computed.
    Submission.objects.filter(pk=sub.pk).update(state=State.SCORING)
    for n in (30, 60):  # two runs: the report's history has two ends
        draw(sub, n, world["rng"])
        label_from_gold(demo)
        scoring.recompute(demo.corpus)
    sub.refresh_from_db()
    assert sub.state == State.SCORED

    # 4. Watch the progress and read the report (the poll runs on a paused clock).
    # Label counts of a big corpus make wide axis labels (1,000,xxx) at both ends.
    ScoreRun.objects.update(n_labels=F("n_labels") + 1_000_000)
    page.clock.install()
    page.clock.pause_at(dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    page.goto(f"{base}/submissions/{sub.pk}/report/")
    assert page.locator("#progress-fill").evaluate("el => el.style.width") == "100%"
    with page.expect_response(lambda r: "/progress.json" in r.url) as polled:
        page.clock.run_for(30_000)
    assert polled.value.json()["percent"] == 100
    assert page.locator("#history svg").count() == 3
    assert page.eval_on_selector_all("#history svg", CLIPPED) == []
    assert page.get_by_text("Simple recall").count() >= 1

    # 5. Compare with another system.
    other = next(iter(demo.submissions.values()))
    page.goto(f"{base}/leaderboard/demo/compare/")
    page.select_option("#cmp-a", str(sub.pk))
    page.select_option("#cmp-b", str(other.pk))
    page.click("form.compare-form button[type=submit]")
    page.wait_for_selector("#compare-result")
    verdicts = page.locator("#compare-result td.verdict").all_inner_texts()
    assert len(verdicts) == 3 and all(v.strip() for v in verdicts)

    # 6. Find the row on the leaderboard and follow it back to the report.
    page.goto(f"{base}/leaderboard/demo/")
    row = page.locator(f"#leaderboard tr[data-submission='{sub.pk}']")
    assert row.count() == 1 and "mine" in (row.get_attribute("class") or "")
    row.locator(".system-name a").first.click()
    page.wait_for_url(f"**/submissions/{sub.pk}/report/")
