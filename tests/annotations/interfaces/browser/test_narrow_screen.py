"""The task pages on a 390 px wide phone screen: nothing is covered or cut off, and the
entity editor stays beside the tapped word."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotations.models import Backend, Hit, HitQuestion, HitState, Question, TaskKind
from kbpo.core.models import Document
from tests.annotations.interfaces.browser.helpers import task_url
from tests.annotations.interfaces.builders import relation_hit
from tests.factories import make_corpus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every control a worker uses, in the page and in the footer.
CONTROLS = ".option, #next-btn, #prev-btn, .dot, input[type=checkbox], #submit-btn"

COVERED = """els => els.filter(e => e.offsetParent !== null).map(e => {
  e.scrollIntoView({block: 'nearest'});
  const r = e.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const top = document.elementFromPoint(x, y);
  const inside = x >= 0 && x <= innerWidth && y >= 0 && y <= innerHeight;
  const label = e.closest('label');
  return {id: e.id || e.dataset.value || e.className, ok: inside && !!top &&
          (top === e || e.contains(top) || (!!label && label.contains(top)))};
}).filter(c => !c.ok).map(c => c.id)"""


def test_relation_task_is_usable_at_390px(browser, live_server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    try:
        page.goto(task_url(live_server, relation_hit()))
        page.wait_for_selector(".option")
        footer = page.evaluate("document.querySelector('.task-footer').offsetHeight")
        assert footer < 844 / 4, f"the footer takes {footer} of 844 px"
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
        for question in range(2):
            covered = page.eval_on_selector_all(CONTROLS, COVERED)
            assert covered == [], f"question {question + 1}: covered or off screen: {covered}"
            page.locator(".option").first.tap()
            if question == 0:
                page.locator("#next-btn").tap()
        assert page.locator("#submit-btn").is_enabled()
    finally:
        context.close()


# A document as long as the demo's (about forty sentences): stacked under it, the
# entity editor sat about 3,000 px below a tapped word.
LONG_TEXT = " ".join(f"Ada Byron met Tom King in Paris on day {i} of the long congress, "
                     f"and they spoke about Acme and its plans for London at length."
                     for i in range(1, 41))

# Visible in the window and not covered by anything (the footer, the sheet).
VISIBLE = """e => {
  const r = e.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const top = document.elementFromPoint(x, y);
  return r.top >= 0 && r.bottom <= innerHeight && !!top && (top === e || e.contains(top));
}"""


def test_entity_type_chooser_is_next_to_the_tapped_word_at_390px(browser, live_server) -> None:
    corpus = make_corpus("long", {"LONG1": LONG_TEXT})
    doc = Document.objects.get(corpus=corpus)
    hit = Hit.objects.create(corpus=corpus, kind=TaskKind.ENTITY, backend=Backend.MTURK,
                             state=HitState.POSTED, reward=Decimal("1.00"), external_id="H-L")
    q = Question.objects.create(corpus=corpus, kind=TaskKind.ENTITY, document=doc)
    HitQuestion.objects.create(hit=hit, question=q, position=0)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    try:
        page.goto(task_url(live_server, hit))
        page.wait_for_selector(".tok")
        assert page.locator("#submit-btn").inner_text().strip() == "Submit"  # not "Submit +"
        for nth in (3, 200):  # a word near the top, one far down the document
            word = page.locator(".tok").nth(nth)
            word.scroll_into_view_if_needed()
            word.tap()
            chooser = page.locator("#editor .type-btn").first
            chooser.wait_for()
            assert chooser.evaluate(VISIBLE), f"token {nth}: the type chooser is off screen"
            assert word.evaluate(VISIBLE), f"token {nth}: the sheet covers the tapped word"
            chooser.tap()  # a mention: its editor stays beside it too
            assert page.locator("#editor .type-btn").first.evaluate(VISIBLE)
    finally:
        context.close()
