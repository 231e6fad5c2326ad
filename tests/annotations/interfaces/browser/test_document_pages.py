"""Entity detection & linking and exhaustive relations in Chromium, mouse and keyboard."""

from __future__ import annotations

import time

import pytest

from annotations.models import Assignment, PagePost, TaskKind
from tests.annotations.interfaces.browser.helpers import record_time, task_url
from tests.annotations.interfaces.builders import document_hit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Token indices of the factories' TEXT:
# Ada(0) Byron(1) was born in London(5) .(6) Ada(7) Byron(8) married Tom(10) King(11)
# in Paris(13) .(14) Tom(15) King(16) works(17) for Acme(19) .(20) Acme(21) ... London(25)


def tok(page, i: int):
    return page.locator(f'.tok[data-t="{i}"]')


def drag(frame, mouse, a: int, b: int) -> None:
    tok(frame, a).hover()
    mouse.down()
    tok(frame, b).hover()
    mouse.up()


def cursor(page) -> int:
    return int(page.locator(".tok.cursor").get_attribute("data-t"))


def move_to(page, target: int) -> None:
    key = "ArrowRight" if target > cursor(page) else "ArrowLeft"
    for _ in range(abs(target - cursor(page))):
        page.keyboard.press(key)
    assert cursor(page) == target


def stored_extra(assignment_id: str) -> dict:
    """What the server kept of the page's post (provisional until MTurk confirms it)."""
    (item,) = PagePost.objects.get(assignment_external_id=assignment_id).payload["answers"]
    assert item["choices"] == ["done"] and not Assignment.objects.exists()
    return item["extra"]


def check_entities(extra: dict, text: str) -> None:
    """The marks both entity tests make: Ada Byron ×2 (linked), Tom King, Paris."""
    got = {(text[m["begin"]:m["end"]], m["begin"]): m for m in extra["mentions"]}
    ada1_at, tom_at, paris_at = text.index("Ada Byron", 1), text.index("Tom"), text.index("Paris")
    assert sorted(got) == [("Ada Byron", 0), ("Ada Byron", ada1_at), ("Paris", paris_at),
                           ("Tom King", tom_at)]
    ada0, ada1 = got[("Ada Byron", 0)], got[("Ada Byron", ada1_at)]
    tom, paris = got[("Tom King", tom_at)], got[("Paris", paris_at)]
    assert ada0["entity"] == ada1["entity"] != tom["entity"] != paris["entity"]
    assert (ada0["canonical"], ada1["canonical"], tom["canonical"], paris["canonical"]) == (
        True, False, True, True)
    assert [m["type"] for m in (ada0, ada1, tom, paris)] == ["PER", "PER", "PER", "GPE"]
    assert ada0["link"] == ada1["link"] == "Wikipedia:Ada_Lovelace"
    assert tom["link"] == paris["link"] == ""


def test_entity_with_the_mouse(page, mturk, live_server) -> None:
    hit = document_hit(TaskKind.ENTITY)
    text = hit.items.get().question.document.text
    started = time.monotonic()
    frame = mturk.open_framed(task_url(live_server, hit))
    # Work in the framed page through its own Page-like frame object.
    page_frame = page.frame(url=lambda u: "/annotate/hit/" in u)
    assert frame.locator("#submit-btn").is_disabled()
    drag(page_frame, page.mouse, 0, 1)
    page_frame.locator('#editor .type-btn[data-type="PER"]').click()
    page_frame.locator("#suggestions button").first.click()      # the repeated "Ada Byron"
    drag(page_frame, page.mouse, 10, 11)
    page_frame.locator('#editor .type-btn[data-type="PER"]').click()
    tok(page_frame, 13).click()
    page_frame.locator('#editor .type-btn[data-type="ORG"]').click()   # wrong type ...
    page_frame.locator('#editor .type-btn[data-type="GPE"]').click()   # ... corrected
    tok(page_frame, 17).click()
    page_frame.locator('#editor .type-btn[data-type="TITLE"]').click()
    tok(page_frame, 17).click()                                  # select it again ...
    page_frame.locator("#remove-btn").click()                     # ... and remove it
    page_frame.locator("#entities input").first.fill("https://en.wikipedia.org/wiki/Ada_Lovelace")
    page_frame.locator("#submit-btn").click()
    posted = mturk.wait_for_submit()
    record_time("entity", "mouse", time.monotonic() - started)
    assert posted["assignmentId"] == "A1"
    check_entities(stored_extra("A1"), text)


def test_entity_keyboard_only(page, mturk, live_server) -> None:
    hit = document_hit(TaskKind.ENTITY)
    text = hit.items.get().question.document.text
    started = time.monotonic()
    page.goto(task_url(live_server, hit, worker="W2", assignment="A2"))
    kb = page.keyboard
    assert cursor(page) == 0
    kb.press("Shift+ArrowRight")
    kb.press("p")                 # Ada Byron: person
    kb.press("a")                 # accept the suggested repeat
    move_to(page, 10)
    kb.press("Shift+ArrowRight")
    kb.press("p")                 # Tom King
    move_to(page, 13)
    kb.press("o")                 # Paris as an organisation ...
    kb.press("g")                 # ... no, a place
    move_to(page, 17)
    kb.press("t")                 # "works" as a title ...
    kb.press("Delete")            # ... removed
    kb.press("ArrowUp")           # start of sentence 2: the second Ada Byron
    assert cursor(page) == 7
    kb.press("w")                 # its entity's Wikipedia field
    kb.type("Ada Lovelace")
    kb.press("Enter")             # back to the text
    kb.press("Control+Enter")
    mturk.wait_for_submit()
    record_time("entity", "keyboard", time.monotonic() - started)
    check_entities(stored_extra("A2"), text)


EXPECTED = [["per:place_of_birth", "per:place_of_residence"], ["per:spouse"],
            ["per:place_of_residence"], ["no_relation"], ["per:employee_or_member_of"],
            ["org:place_of_headquarters"]]


def check_relations(extra: dict, text: str) -> None:
    rels = extra["relations"]
    pairs = [(text[r["subject"][0]:r["subject"][1]], text[r["object"][0]:r["object"][1]])
             for r in rels]
    assert pairs == [("Ada Byron", "London"), ("Ada Byron", "Tom King"), ("Ada Byron", "Paris"),
                     ("Tom King", "Paris"), ("Tom King", "Acme"), ("Acme", "London")]
    assert [r["choices"] for r in rels] == EXPECTED


def test_exhaustive_with_the_mouse(page, mturk, live_server) -> None:
    hit = document_hit(TaskKind.EXHAUSTIVE)
    text = hit.items.get().question.document.text
    started = time.monotonic()
    mturk.open_framed(task_url(live_server, hit))
    f = page.frame(url=lambda u: "/annotate/hit/" in u)

    def choose(value: str, then_next: bool = True) -> None:
        f.locator(f'.option[data-value="{value}"]').click()
        if then_next:
            f.locator("#next-btn").click()

    choose("per:place_of_birth")
    choose("per:spouse")
    choose("per:place_of_residence")
    choose("no_relation")
    choose("per:employee_or_member_of")
    choose("org:place_of_headquarters", then_next=False)
    f.locator("#pair-list li").first.click()                 # back to the first pair
    choose("per:place_of_residence", then_next=False)        # a second relation holds
    f.locator("#submit-btn").click()
    mturk.wait_for_submit()
    record_time("exhaustive", "mouse", time.monotonic() - started)
    check_relations(stored_extra("A1"), text)


def test_exhaustive_keyboard_only(page, mturk, live_server) -> None:
    hit = document_hit(TaskKind.EXHAUSTIVE)
    text = hit.items.get().question.document.text
    started = time.monotonic()
    page.goto(task_url(live_server, hit, worker="W2", assignment="A2"))
    kb = page.keyboard
    for key in ("2", "5", "4", "n", "1", "4"):
        kb.press(key)
        kb.press("Enter")
    assert page.locator("#submit-btn").is_enabled()
    for _ in range(5):
        kb.press("ArrowUp")      # back to the first pair
    kb.press("4")                # add "place of residence"
    assert "1 of 6" not in page.locator("#progress").inner_text()
    kb.press("Control+Enter")
    mturk.wait_for_submit()
    record_time("exhaustive", "keyboard", time.monotonic() - started)
    check_relations(stored_extra("A2"), text)
