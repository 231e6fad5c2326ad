"""Relation verification in Chromium, inside a stand-in of MTurk's iframe."""

from __future__ import annotations

import json
import time

import pytest

from annotations.models import Assignment, CrowdWorker, PagePost
from tests.annotations.interfaces.browser.helpers import SANDBOX, record_time, task_url
from tests.annotations.interfaces.builders import relation_hit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Kept:
    """One answer of a task page's post, as the server kept it (provisionally: it
    counts once MTurk confirms the assignment, which the crowd tests cover)."""

    def __init__(self, item: dict, worker: str) -> None:
        self.choices, self.extra, self.seconds = item["choices"], item["extra"], item["seconds"]
        self.worker = worker


def stored(assignment_id: str) -> list[Kept]:
    post = PagePost.objects.get(assignment_external_id=assignment_id)
    assert post.state == "waiting" and not Assignment.objects.exists()
    return [Kept(item, post.worker_external_id) for item in post.payload["answers"]]


def test_mouse_worker_in_mturk_iframe(page, mturk, live_server) -> None:
    hit = relation_hit()
    started = time.monotonic()
    frame = mturk.open_framed(task_url(live_server, hit))
    submit = frame.locator("#submit-btn")
    frame.locator('.option[data-value="per:place_of_birth"]').click()
    assert submit.is_disabled()  # one of two questions answered
    frame.locator("#next-btn").click()
    frame.locator('.option[data-value="per:spouse"]').click()
    frame.locator('.option[data-value="per:other_family"]').click()   # two may hold
    frame.locator("#chk-link_ok").uncheck()                           # wrong link
    frame.locator(".dot").first.click()                               # back to question 1
    assert frame.locator('.option[data-value="per:place_of_birth"]').get_attribute(
        "aria-checked") == "true"
    submit.click()
    posted = mturk.wait_for_submit()
    record_time("relation", "mouse", time.monotonic() - started)

    assert posted["assignmentId"] == "A1"
    answers = json.loads(posted["answers"])["answers"]
    rows = stored("A1")
    assert [r.choices for r in rows] == [["per:place_of_birth"], ["per:other_family", "per:spouse"]]
    assert [a["choices"] for a in answers] == [r.choices for r in rows]
    assert rows[0].extra == {"subject_ok": True, "object_ok": True, "link_ok": None}
    assert rows[1].extra == {"subject_ok": True, "object_ok": True, "link_ok": False}
    assert all(r.seconds is not None and r.seconds >= 0 for r in rows)


def test_keyboard_only_worker(page, mturk, live_server) -> None:
    hit = relation_hit()
    started = time.monotonic()
    page.goto(task_url(live_server, hit, worker="W2", assignment="A2"))
    frame = page
    kb = page.keyboard
    # PER-GPE options: 1 employee, 2 place of birth, 3 place of death, 4 residence.
    kb.press("2")
    kb.press("4")
    kb.press("4")            # toggled off again
    kb.press("Enter")        # next question
    # PER-PER options: 1 children, 2 other family, 3 parents, 4 siblings, 5 spouse.
    kb.press("n")            # no relation ...
    kb.press("ArrowLeft")    # back to question 1: still answered
    assert frame.locator('.option[data-value="per:place_of_birth"]').get_attribute(
        "aria-checked") == "true"
    kb.press("ArrowRight")
    kb.press("5")            # ... changed to spouse
    kb.press("s")            # the second Ada Byron is not the first one
    kb.press("Enter")        # last question: focus moves to Submit
    assert frame.locator("#submit-btn").evaluate("b => b === document.activeElement")
    kb.press("Enter")
    posted = mturk.wait_for_submit()
    record_time("relation", "keyboard", time.monotonic() - started)

    assert posted["assignmentId"] == "A2"
    rows = stored("A2")
    assert [r.choices for r in rows] == [["per:place_of_birth"], ["per:spouse"]]
    assert rows[1].extra == {"subject_ok": False, "object_ok": True, "link_ok": True}
    assert rows[0].worker == "W2"


def test_preview_blocks_submit(page, live_server) -> None:
    hit = relation_hit()
    page.goto(task_url(live_server, hit, assignment="ASSIGNMENT_ID_NOT_AVAILABLE"))
    assert "Accept the HIT" in page.locator("#mode-banner").inner_text()
    # A preview shows the first of the HIT's two questions only (issue 41).
    assert page.evaluate("() => JSON.parse(document.getElementById('task-data')"
                         ".textContent).questions.length") == 1
    page.locator('.option[data-value="per:place_of_birth"]').click()
    assert page.locator("#submit-btn").is_disabled()
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" else None)
    status = "() => document.getElementById('status').textContent"
    before = page.evaluate(status)
    page.keyboard.press("Control+Enter")
    # The key handler runs synchronously, and a submission would first say "Saving…"
    # and then post; this round trip returns after the handler, so no sleep is needed.
    assert page.evaluate(status) == before
    assert not posted
    assert not Assignment.objects.exists() and not PagePost.objects.exists()


def test_forged_turk_submit_to_is_refused(page, live_server) -> None:
    hit = relation_hit()
    # A link with a foreign turkSubmitTo does not even render the task ...
    response = page.goto(task_url(live_server, hit, submit_to="https://evil.example"))
    assert response.status == 400
    assert "Unknown MTurk site" in page.content()
    # ... and a page whose parameters are changed after loading is refused at intake.
    page.goto(task_url(live_server, hit))
    page.evaluate("() => { KBPO.cfg.mturk.turkSubmitTo = 'https://evil.example'; }")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    page.keyboard.press("5")
    page.keyboard.press("Control+Enter")
    page.locator("#status.error").wait_for()
    assert "turkSubmitTo" in page.locator("#status").inner_text()
    assert page.url.startswith(live_server.url)   # no redirect anywhere
    assert not Assignment.objects.exists()


def test_another_workers_confirmed_assignment_is_refused(page, mturk, live_server) -> None:
    hit = relation_hit()
    frame = mturk.open_framed(task_url(live_server, hit, worker="W1", assignment="A1"))
    frame.locator('.option[data-value="per:place_of_birth"]').click()
    frame.locator("#next-btn").click()
    frame.locator('.option[data-value="no_relation"]').click()
    frame.locator("#submit-btn").click()
    mturk.wait_for_submit()
    # MTurk confirmed A1 as W1's (the sync stores it): another worker's claim on A1 is
    # refused on the page, and never reaches MTurk.
    Assignment.objects.create(hit=hit, worker=CrowdWorker.objects.create(
        backend="mturk", external_id="W1"), external_id="A1")
    frame = mturk.open_framed(task_url(live_server, hit, worker="W9", assignment="A1"))
    frame.locator('.option[data-value="per:place_of_birth"]').click()
    frame.locator("#next-btn").click()
    frame.locator('.option[data-value="no_relation"]').click()
    frame.locator("#submit-btn").click()
    frame.locator("#status.error").wait_for()
    assert "another HIT or worker" in frame.locator("#status").inner_text()
    assert len(mturk.submissions) == 1
    assert list(PagePost.objects.values_list("worker_external_id", flat=True)) == ["W1"]
    assert SANDBOX  # the stand-in site served both pages


def test_relation_checkboxes_stop_at_the_cap(page, mturk, live_server) -> None:
    """KBPO_MAX_RELATIONS_PER_ANSWER (2): a third relation stays unticked with a message
    that says why; unticking one frees a place (the intake refuses more anyway)."""
    hit = relation_hit()
    frame = mturk.open_framed(task_url(live_server, hit))

    def option(value: str):
        return frame.locator(f'.option[data-value="{value}"]')

    option("per:place_of_birth").click()
    frame.locator("#next-btn").click()
    for value in ("per:spouse", "per:other_family"):
        option(value).click()
    assert option("per:children").get_attribute("aria-disabled") == "true"
    page.keyboard.press("1")                                     # per:children by key
    # aria-disabled: Playwright would wait for it to be enabled; a worker's click lands.
    option("per:siblings").click(force=True)
    assert option("per:children").get_attribute("aria-checked") == "false"
    assert option("per:siblings").get_attribute("aria-checked") == "false"
    assert "At most 2 relations per pair" in frame.locator("#status.error").inner_text()
    option("per:other_family").click()                           # untick one ...
    assert frame.locator("#status").inner_text() == ""
    option("per:siblings").click()                               # ... and another fits
    assert option("per:siblings").get_attribute("aria-checked") == "true"
    assert option("per:children").get_attribute("aria-disabled") == "true"
    frame.locator("#submit-btn").click()
    mturk.wait_for_submit()
    rows = stored("A1")
    assert [r.choices for r in rows] == [["per:place_of_birth"], ["per:siblings", "per:spouse"]]
