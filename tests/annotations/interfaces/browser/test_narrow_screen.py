"""The relation task on a 390 px wide phone screen: nothing is covered or cut off."""

from __future__ import annotations

import pytest

from tests.annotations.interfaces.browser.helpers import task_url
from tests.annotations.interfaces.builders import relation_hit

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
