"""The DocRED exhaustive page in Chromium: a worker adds every fact of the task's head
entities with the keyboard only at 1280 px, and by tapping on a 390 px phone."""

from __future__ import annotations

import json
import time

import pytest

from annotations.models import PagePost
from kbpo.core.schemas import DOCRED, get_schema
from tests.annotations.interfaces.browser.helpers import MturkSite, record_time, task_url
from tests.annotations.interfaces.browser.test_narrow_screen import COVERED
from tests.annotations.interfaces.builders import docred_fact_hit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONTROLS = (".fact-head, .fact-tail, #tail-filter, #rel-filter, .option, .fact-remove, "
            ".fact-done-item input, #done-btn, #submit-btn")


def stored(assignment_id: str) -> list[dict]:
    post = PagePost.objects.get(assignment_external_id=assignment_id)
    [answer] = post.payload["answers"]
    assert answer["choices"] == ["done"]
    return answer["extra"]["facts"]


def first_match(head: str, tail: str, words: str) -> str:
    """The relation the page lists first for `words`: the matches, usual ones first."""
    schema = get_schema(DOCRED)
    usual = {r.id for r in schema.candidates(head, tail)}
    ws = words.lower().split()
    hits = [r for r in schema.relations.values()
            if all(w in f"{r.label} {r.id} {r.definition}".lower() for w in ws)]
    return sorted(hits, key=lambda r: r.id not in usual)[0].id


def test_keyboard_only_worker(page, mturk, live_server) -> None:
    hit = docred_fact_hit()
    started = time.monotonic()
    page.goto(task_url(live_server, hit, worker="W1", assignment="A1"))
    page.locator(".fact-head").first.wait_for()
    assert page.locator(".fact-head").all_inner_texts()[0].startswith("1 Ada Byron")
    # X's mentions are marked in the text: "Ada Byron" (with Y's "Byron" inside it later)
    assert page.locator("#context .m-subj").count() == 1
    kb = page.keyboard
    kb.press("/")                                    # find Y
    kb.type("lord")
    kb.press("Enter")                                # Lord Byron, and on to the relation
    assert page.locator("#context .m-obj").count() == 2   # "Byron" and "Lord Byron"
    kb.type("father")
    kb.press("Enter")                                # the first match: added at once
    kb.type("london")                                # the next Y, same X
    kb.press("Enter")
    kb.type("place of birth")
    kb.press("Enter")
    assert page.locator("#facts .fact").count() == 2
    kb.press("Escape")
    kb.press("d")                                    # Ada Byron done: X is now 1815
    assert page.locator('.fact-head[aria-checked="true"]').inner_text().startswith("2 1815")
    kb.press("3")                                    # X = London
    kb.press("/")
    kb.type("england")
    kb.press("Enter")
    kb.type("country")
    kb.press("Enter")
    kb.press("Escape")
    kb.press("u")                                    # undo the last fact ...
    assert page.locator("#facts .fact").count() == 2
    kb.press("/")                                    # ... and add it again
    kb.type("england")
    kb.press("Enter")
    kb.type("country")
    kb.press("Enter")
    kb.press("Escape")
    assert page.locator("#submit-btn").is_disabled()  # not every X is done
    kb.press("d")                                    # London done, then 1815 (no fact)
    page.screenshot(path="test-artifacts/docred-facts-1280.png")
    kb.press("d")
    assert page.locator("#submit-btn").is_enabled()
    kb.press("Enter")                                # Submit has the focus
    mturk.wait_for_submit()
    record_time("exhaustive-document", "keyboard", time.monotonic() - started)
    assert stored("A1") == [{"h": 0, "t": 3, "r": first_match("PER", "PER", "father")},
                            {"h": 0, "t": 2, "r": first_match("PER", "LOC", "place of birth")},
                            {"h": 2, "t": 4, "r": first_match("LOC", "LOC", "country")}]
    assert stored("A1")[0]["r"] == "P22" and stored("A1")[1]["r"] == "P19"


def test_usable_by_tapping_at_390px(browser, live_server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    mturk = MturkSite(page)
    try:
        hit = docred_fact_hit(heads=(0, 1))
        page.goto(task_url(live_server, hit, worker="W3", assignment="A3"))
        page.wait_for_selector(".fact-head")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
        footer = page.evaluate("document.querySelector('.task-footer').offsetHeight")
        assert footer < 844 / 4, f"the footer takes {footer} of 844 px"
        assert page.eval_on_selector_all(CONTROLS, COVERED) == []
        page.locator('#context .ent[data-e="3"]').last.tap()   # Lord Byron, in the text
        assert page.locator('.fact-tail[aria-selected="true"]').inner_text().startswith(
            "Lord Byron")
        page.locator("#rel-filter").tap()
        page.keyboard.type("father")
        page.locator('.option[data-value="P22"]').tap()
        page.locator('.fact-tail[data-e="1"]').tap()          # 1815
        page.locator("#rel-filter").tap()
        page.keyboard.type("date of birth")
        page.locator('.option[data-value="P569"]').tap()
        page.locator('.fact-tail[data-e="2"]').tap()          # London: added by mistake ...
        page.locator('.option[data-value="P19"]').tap()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
        assert page.eval_on_selector_all(CONTROLS, COVERED) == []
        page.locator(".fact-remove").nth(2).tap()             # ... and removed
        for h in (0, 1):
            page.locator(f"#done-{h}").tap()
        page.locator("#submit-btn").tap()
        mturk.wait_for_submit()
        assert stored("A3") == [{"h": 0, "t": 3, "r": "P22"}, {"h": 0, "t": 1, "r": "P569"}]
        assert not errors, errors
    finally:
        context.close()


def test_page_data_and_mturk_safety(client, live_server) -> None:
    hit = docred_fact_hit()
    response = client.get(task_url(live_server, hit).replace(live_server.url, ""))
    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    html = response.content.decode()
    assert "js/annotate-exhaustive-document.js" in html and "<script>" not in html
    data = json.loads(html.split('id="task-data" type="application/json">')[1]
                      .split("</script>")[0])
    assert data["document"]["heads"] == [0, 1, 2] and len(data["document"]["entities"]) == 6
    assert len(data["relations"]) == 96 and "P22" in data["pairs"]["PER|PER"]["usual"]
    # a preview shows the page, Submit stays off
    preview = client.get(f"/annotate/hit/{hit.url_key}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE")
    assert preview.status_code == 200 and b"This is a preview" in preview.content
