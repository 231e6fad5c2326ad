"""The relation task on a DocRED corpus in Chromium: the whole document, answered with
the mouse at 1280 px, with the keyboard only, and by tapping on a 390 px phone."""

from __future__ import annotations

import json
import time

import pytest

from annotations.interfaces.taskdata import schema_options
from annotations.models import PagePost
from kbpo.core.schemas import DOCRED, get_schema
from tests.annotations.interfaces.browser.helpers import MturkSite, record_time, task_url
from tests.annotations.interfaces.browser.test_narrow_screen import COVERED
from tests.annotations.interfaces.builders import docred_relation_hit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONTROLS = ".option, #next-btn, #prev-btn, .dot, #rel-filter, .show-all, #submit-btn"


def stored(assignment_id: str) -> list[list[str]]:
    post = PagePost.objects.get(assignment_external_id=assignment_id)
    return [item["choices"] for item in post.payload["answers"]]


def first_match(head: str, tail: str, words: str) -> str:
    """The relation the search box lists first for `words` (the page's own rule)."""
    options = schema_options(get_schema(DOCRED), head, tail)[:-1]
    ws = words.lower().split()
    return next(o["value"] for o in options
                if all(w in f"{o['label']} {o['value']} {o['description']}".lower() for w in ws))


def test_mouse_worker_in_mturk_iframe(page, mturk, live_server) -> None:
    hit = docred_relation_hit()
    started = time.monotonic()
    frame = mturk.open_framed(task_url(live_server, hit))
    # every mention of X and of Y, Y's "Byron" nested inside X's "Ada Byron"
    assert frame.locator("#context .m-subj").count() == 1
    assert frame.locator("#context .m-obj").all_inner_texts() == ["ByronY", "Lord ByronY"]
    assert frame.locator("#context .sent-evidence").count() == 1
    assert "Her father" in frame.locator("#context .sent-evidence").inner_text()
    # only the relations usual for PER → PER at first; the others behind "Show all"
    assert frame.locator('.option[data-value="P1441"]').count() == 0
    frame.locator('.option[data-value="P22"]').click()
    frame.locator("#next-btn").click()
    assert frame.locator("#context .sent-evidence").count() == 0
    frame.locator(".show-all").click()
    frame.locator('.option[data-value="P1441"]').click()          # any relation of the 96
    assert "present in work" in frame.locator("#chosen").inner_text()
    frame.locator('.option[data-value="P1441"]').click()          # changed my mind
    frame.locator("#rel-filter").fill("country")
    assert frame.locator('.option[data-value="P22"]').count() == 0  # filtered out
    frame.locator('.option[data-value="P17"]').click()
    frame.locator("#submit-btn").click()
    posted = mturk.wait_for_submit()
    record_time("relation-document", "mouse", time.monotonic() - started)
    assert [a["choices"] for a in json.loads(posted["answers"])["answers"]] == [["P22"], ["P17"]]
    assert stored("A1") == [["P22"], ["P17"]]


def test_keyboard_only_worker(page, mturk, live_server) -> None:
    hit = docred_relation_hit()
    started = time.monotonic()
    page.goto(task_url(live_server, hit, worker="W2", assignment="A2"))
    frame = page
    frame.locator(".option").first.wait_for()
    kb = page.keyboard
    kb.press("/")                                # the search box
    kb.type("father")
    kb.press("Enter")                            # the first match, chosen
    kb.press("Enter")                            # next question
    kb.press("1")                                # the first usual LOC → LOC relation ...
    first_usual = get_schema(DOCRED).candidates("LOC", "LOC")[0].id
    assert frame.locator(f'.option[data-value="{first_usual}"]').get_attribute(
        "aria-checked") == "true"
    kb.press("n")                                # ... replaced by none of these
    kb.press("ArrowLeft")
    assert frame.locator('.option[data-value="P22"]').get_attribute("aria-checked") == "true"
    kb.press("ArrowRight")
    kb.press("/")
    kb.type("administrative")
    kb.press("ArrowDown")                        # into the results
    kb.press("Space")                            # the focused one, replacing "none"
    kb.press("Escape")
    kb.press("Enter")                            # last question: focus moves to Submit
    kb.press("Enter")
    posted = mturk.wait_for_submit()
    record_time("relation-document", "keyboard", time.monotonic() - started)
    assert posted["assignmentId"] == "A2"
    assert stored("A2") == [["P22"], [first_match("LOC", "LOC", "administrative")]]


def test_usable_by_tapping_at_390px(browser, live_server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    mturk = MturkSite(page)
    try:
        hit = docred_relation_hit()
        page.goto(task_url(live_server, hit, worker="W3", assignment="A3"))
        page.wait_for_selector(".option")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
        footer = page.evaluate("document.querySelector('.task-footer').offsetHeight")
        assert footer < 844 / 4, f"the footer takes {footer} of 844 px"
        assert page.eval_on_selector_all(CONTROLS, COVERED) == []
        page.locator('.option[data-value="P22"]').tap()
        page.locator("#next-btn").tap()
        page.locator("#rel-filter").tap()
        page.keyboard.type("capital")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
        assert page.eval_on_selector_all(CONTROLS, COVERED) == []
        page.locator('.option[data-value="P36"]').tap()
        page.locator("#submit-btn").tap()
        mturk.wait_for_submit()
        assert stored("A3") == [["P22"], ["P36"]]
    finally:
        context.close()


def test_phone_buttons_show_no_stray_shortcut_text(browser, live_server) -> None:
    """The footer's shortcuts are hidden on a phone: Submit read "Submit +" (the "+"
    between Ctrl and Enter stayed)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    try:
        page.goto(task_url(live_server, docred_relation_hit()))
        page.wait_for_selector(".option")
        assert page.locator("#submit-btn").inner_text().strip() == "Submit"
    finally:
        context.close()
