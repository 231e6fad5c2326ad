"""In-house annotators: log in, take the next task, answer, get the next one."""

from __future__ import annotations

import time

import pytest

from annotations.models import Assignment
from tests.annotations.interfaces.browser.helpers import record_time
from tests.annotations.interfaces.builders import annotator, local_hits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_next_task_queue_with_keyboard(page, live_server) -> None:
    first, second = local_hits()
    user = annotator()
    page.goto(f"{live_server.url}/accounts/login/?next=/annotate/next/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "pw-for-tests-123")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/annotate/hit/{first.url_key}/")
    started = time.monotonic()
    for key in ("2", "Enter", "5", "Control+Enter"):   # birth; spouse; submit
        page.keyboard.press(key)
    page.wait_for_url(f"**/annotate/hit/{second.url_key}/")
    record_time("relation", "keyboard", time.monotonic() - started)
    page.keyboard.press("1")                           # employee or member of
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/annotate/next/")
    assert "No in-house task is waiting" in page.content()
    rows = {a.hit_id: a for a in Assignment.objects.all()}
    assert set(rows) == {first.pk, second.pk}
    assert rows[first.pk].worker.user == user
    assert [r.choices for r in rows[first.pk].responses.order_by("question_id")] == [
        ["per:place_of_birth"], ["per:spouse"]]
    assert [r.choices for r in rows[second.pk].responses.all()] == [
        ["per:employee_or_member_of"]]
