"""Tables at 1280 px: no word, number, header or predicate name broken across lines
("0.44/5", "Relatio/ns" in My submissions), and the page never wider than the window."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from submissions.models import Submission
from tests.estimation.scoring.scoring_demo import scored_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-passphrase-for-tables-7"

# Every word of every table cell (outside the key-value tables that may break a run id
# anywhere) on one line. Dashes and slashes are break points: "0.281–0.328" may wrap.
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('.table th, .table td')) {
    if (cell.closest('.wrap-any')) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      for (const m of node.textContent.matchAll(/[^\\s\\u2013\\-\\/]+/g)) {
        const r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0)
                                                       .map(x => Math.round(x.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


@pytest.fixture
def scored(tmp_path: Path, settings) -> dict[str, Submission]:
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = User.objects.create_user("grace", password=PASSWORD, is_staff=True)
    demo, _ = scored_demo(tmp_path / "world", owner, docs=30, systems=4, draws=60)
    return demo.submissions


def test_tables_keep_words_whole_at_1280px(page, live_server, scored) -> None:
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "grace")
    page.fill("input[name=password]", PASSWORD)
    page.locator("main button[type=submit]").click()
    page.wait_for_url(f"{base}/")
    sub = next(iter(scored.values()))
    for path in ("/submissions/", f"/submissions/{sub.pk}/", f"/submissions/{sub.pk}/report/",
                 "/leaderboard/demo/", "/operator/"):
        page.goto(base + path)
        assert page.locator(".table").count(), path
        assert page.evaluate(BROKEN_WORDS) == [], path
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 1280, path
    # My submissions fits the window: no column scrolled out of sight.
    page.goto(base + "/submissions/")
    assert page.evaluate("[...document.querySelectorAll('.table-wrap')]"
                         ".every(w => w.scrollWidth <= w.clientWidth)")
