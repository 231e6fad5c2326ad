"""Issue 41, anonymous answer posts against the MTurk side (the fake requester): posts
with invented ids cannot drive MTurk calls one to one, and what they leave behind is
dropped soon after they expire."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from annotations.crowd import periodic, sync
from annotations.models import Assignment, PagePost, PagePostState
from tests.annotations.crowd.test_hostile_crowd import WINDOW, choices, later, plan
from tests.annotations.crowd.test_hostile_crowd import crowd as crowd  # the fixtures
from tests.annotations.crowd.test_hostile_crowd import fake as fake

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _windows(settings) -> None:
    # Fixed rate-limit windows no test straddles; eager Celery ignores the countdown.
    settings.KBPO_ANSWER_RATE_PER_IP = 10**6
    settings.KBPO_ANSWER_RATE_PER_WORKER = 10**6
    settings.KBPO_MTURK_CONFIRM_DELAY = WINDOW
    settings.KBPO_MTURK_CONFIRM_RATE_WINDOW = WINDOW


def _flood(crowd, hit, n: int, tag: str = "") -> None:
    wrong = choices(hit, lambda q: ["no_relation"])
    for i in range(n):
        assert crowd.post(hit, f"AFORGER{tag}{i}", f"INVENTED{tag}{i:020d}", wrong,
                          ip=f"203.0.{i // 250}.{i % 250}") == 200


def test_a_flood_of_invented_posts_costs_one_mturk_call_per_hit(
        crowd, fake, settings, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    before = len(fake.calls)
    _flood(crowd, hit, 100)
    calls = [op for op, _ in fake.calls[before:]]
    assert calls == ["ListAssignmentsForHIT"]  # not 100 GetAssignment
    assert PagePost.objects.filter(state=PagePostState.WAITING).count() == \
        settings.KBPO_PAGE_POSTS_WAITING_PER_HIT == 50  # and only 50 kept


def test_the_site_wide_cap_holds_across_hits(crowd, fake, settings,
                                             django_capture_on_commit_callbacks) -> None:
    settings.KBPO_MTURK_CONFIRM_RATE = 1
    first = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    second = plan(["hq", "mborn", "mwork"], django_capture_on_commit_callbacks, tag="d")
    before = len(fake.calls)
    _flood(crowd, first, 3)
    _flood(crowd, second, 3, tag="B")
    assert [op for op, _ in fake.calls[before:]] == ["ListAssignmentsForHIT"]
    # The periodic sync still reads both HITs.
    crowd.sync()
    assert {p["HITId"] for p in fake.calls_of("ListAssignmentsForHIT")} == {
        first.external_id, second.external_id}


def test_honest_work_is_confirmed_by_the_batched_check(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    _flood(crowd, hit, 5)  # the HIT's check for this window is spent on the flood ...
    answers = choices(hit)
    aid = fake.worker_accepts(hit.external_id, "AHONEST1")
    fake.worker_submits(hit.external_id, "AHONEST1", {"answers": json.dumps(
        {"answers": answers})})
    assert crowd.post(hit, "AHONEST1", aid, answers) == 200
    assert not Assignment.objects.exists()  # ... so the honest post waits for the next
    result = sync.confirm_hit_posts(hit.pk)
    assert result.posts_confirmed == 1 and result.reconciled == 1
    assert Assignment.objects.get().source == "confirm"
    assert PagePost.objects.get(worker_external_id="AHONEST1").state == \
        PagePostState.CONFIRMED


def test_expired_posts_lose_their_answers_at_once_and_their_rows_within_a_day(
        crowd, fake, settings, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    _flood(crowd, hit, 3)
    assert all(PagePost.objects.values_list("payload", flat=True))
    assert sync.expire_page_posts(later(settings.KBPO_PAGE_POST_TTL + 1)) == 3
    assert not any(PagePost.objects.values_list("payload", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.redrive()
    assert PagePost.objects.count() == 3  # kept a day for the operator, without answers
    PagePost.objects.update(resolved_at=timezone.now() - dt.timedelta(days=1, seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.redrive()
    assert not PagePost.objects.exists()


def test_hits_posted_before_keyed_urls_are_posted_again(
        fake, django_capture_on_commit_callbacks) -> None:
    """After the migration gives a live HIT a key, MTurk still frames its old URL:
    `repost_unkeyed_hits` retires it and posts its questions under a keyed URL."""
    from django.core.management import call_command

    from annotations.models import Hit, HitState, new_url_key

    old = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    keyed = plan(["hq", "mborn", "mwork"], django_capture_on_commit_callbacks, tag="d")
    Hit.objects.filter(pk=old.pk).update(url_key=new_url_key())  # as the migration does
    with django_capture_on_commit_callbacks(execute=True):
        call_command("repost_unkeyed_hits")
    old.refresh_from_db()
    assert old.state == HitState.EXPIRED and fake.hit_status(old.external_id) != "Assignable"
    new = Hit.objects.filter(submission=old.submission, state=HitState.POSTED).get()
    assert fake.external_url(new.external_id).endswith(f"/annotate/hit/{new.url_key}/")
    assert Hit.objects.get(pk=keyed.pk).state == HitState.POSTED  # already keyed: kept


def test_a_hit_keeps_a_bounded_number_of_unconfirmed_posts(
        crowd, fake, settings, django_capture_on_commit_callbacks) -> None:
    """However many addresses post, a HIT keeps at most KBPO_PAGE_POSTS_WAITING_PER_HIT
    unconfirmed posts; honest work beyond them still counts, from MTurk's copy."""
    settings.KBPO_PAGE_POSTS_WAITING_PER_HIT = 10
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    _flood(crowd, hit, 30)
    assert PagePost.objects.filter(hit=hit).count() == 10
    for w in ("AHONEST1", "AHONEST2", "AHONEST3"):
        crowd.work(hit, w)  # each post answered 200, none kept
    assert PagePost.objects.filter(hit=hit).count() == 10
    crowd.sync()
    assert set(Assignment.objects.values_list("worker__external_id", flat=True)) == {
        "AHONEST1", "AHONEST2", "AHONEST3"}
