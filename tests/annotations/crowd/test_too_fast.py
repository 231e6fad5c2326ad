"""Cheating through the fake MTurk requester: work submitted too soon after it was
accepted (MTurk's own AcceptTime and SubmitTime) is paid and not counted, and a worker
who keeps doing it is blocked; an answer marking more relations per pair than
KBPO_MAX_RELATIONS_PER_ANSWER is rejected with a reason that states the rule."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from annotations.crowd import backends, mturk, refusals, sync
from annotations.interfaces.intake import allowed_choices
from annotations.models import (
    Assignment,
    CrowdWorker,
    Hit,
    PagePost,
    PagePostState,
    PairLabel,
    Question,
    QuestionState,
    Refusal,
    Response,
)
from estimation import planning
from kbpo.core.schema import NO_RELATION
from tests.annotations.crowd.fake_mturk import FakeMTurk, WorkerCannotAccept
from tests.annotations.crowd.helpers import small_world, system
from tests.annotations.crowd.test_hostile_crowd import TRUTH, choices, plan, submit_on_mturk
from tests.annotations.crowd.test_hostile_crowd import crowd as crowd  # the fixture
from tests.annotations.crowd.test_hostile_crowd import fake as fake  # the fixture

pytestmark = pytest.mark.django_db


def submit(fake: FakeMTurk, hit: Hit, worker: str, answers: list[dict], seconds: float) -> str:
    """Work that reaches MTurk `seconds` after the worker accepted it."""
    return fake.worker_submits(hit.external_id, worker,
                               {"answers": json.dumps({"answers": answers})}, seconds=seconds)


def wrong(q: Question) -> list[str]:
    return [NO_RELATION]


def test_defaults(settings) -> None:
    assert (settings.KBPO_MIN_SECONDS_PER_QUESTION, settings.KBPO_TOO_FAST_LIMIT) == (1.0, 3)


def test_mturk_times_are_read_from_the_record(fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    submit(fake, hit, "AHONEST1", choices(hit), seconds=42)
    (record,) = mturk.list_all_assignments(backends.client(), hit.external_id)
    assert isinstance(record.accept_time, dt.datetime)
    assert isinstance(record.submit_time, dt.datetime)
    assert record.work_seconds == pytest.approx(42, abs=0.01)


def test_too_fast_work_is_paid_not_counted_and_replaced(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    # Three questions: 3 s at 1 s per question. Three bots answer in 2.9 s, all wrong.
    bots = [submit(fake, hit, f"AQUICK{i}", choices(hit, wrong), seconds=2.9)
            for i in range(3)]
    result = crowd.sync()
    assert (result.reconciled, result.refused, result.replaced) == (0, 3, 3)
    for aid in bots:
        a = Assignment.objects.get(external_id=aid)
        assert (a.refusal, a.refusal_code) == (Refusal.PAY, "too_fast")
        assert a.refusal_reason == refusals._OURS["too_fast"]
        assert not a.responses.exists()
        assert fake.assignment_status(aid) == "Approved"     # paid: our policy, not proof
        assert fake.assignments[aid].feedback == a.refusal_reason
    assert not PairLabel.objects.exists() and not Response.objects.exists()
    assert Question.objects.filter(state=QuestionState.OPEN).count() == 3
    assert not CrowdWorker.objects.filter(blocked=True).exists()  # one each: quick readers
    # Honest speed (the fake's workers take a minute) through the page and MTurk: counted,
    # and the labels are theirs alone.
    for i in range(3):
        crowd.work(hit, f"AHONEST{i}", choices(hit))
    crowd.sync()
    labels = {lab.pair.object_type: lab.predicates
              for lab in PairLabel.objects.select_related("pair")}
    assert labels == TRUTH
    assert set(PairLabel.objects.values_list("n_answers", flat=True)) == {3}
    assert set(Response.objects.values_list("worker__external_id", flat=True)) == {
        "AHONEST0", "AHONEST1", "AHONEST2"}


def test_page_post_confirmed_by_mturk_is_judged_on_mturks_times(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    answers = choices(hit)
    fast = fake.worker_accepts(hit.external_id, "AQUICK1")
    submit(fake, hit, "AQUICK1", answers, seconds=0.5)
    slow = fake.worker_accepts(hit.external_id, "AHONEST1")
    submit(fake, hit, "AHONEST1", answers, seconds=3.5)
    # The page's own "seconds" say 4 s per question: only MTurk's clock is believed.
    assert crowd.post(hit, "AQUICK1", fast, answers) == 200
    assert crowd.post(hit, "AHONEST1", slow, answers) == 200
    refused = Assignment.objects.get(external_id=fast)
    assert (refused.source, refused.refusal_code, refused.responses.count()) == (
        "confirm", "too_fast", 0)
    post = PagePost.objects.get(assignment_external_id=fast)
    assert post.state == PagePostState.CONFIRMED and post.note.startswith("refused: ")
    counted = Assignment.objects.get(external_id=slow)
    assert (counted.refusal, counted.responses.count()) == (Refusal.NONE, 3)


def test_a_worker_too_fast_again_and_again_is_blocked(
        crowd, fake, settings, django_capture_on_commit_callbacks) -> None:
    settings.KBPO_QUESTIONS_PER_HIT = 1      # one question per HIT: 1 s at least
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work", "hq", "mborn"])
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hits = list(Hit.objects.filter(submission=sub).order_by("pk"))
    assert len(hits) == 5
    late = fake.worker_accepts(hits[3].external_id, "ABOT")   # taken before the block
    for n, hit in enumerate(hits[:3], start=1):
        submit(fake, hit, "ABOT", choices(hit, wrong), seconds=0.2)
        crowd.sync()
        bot = CrowdWorker.objects.get(external_id="ABOT")
        assert bot.blocked == (n == settings.KBPO_TOO_FAST_LIMIT), n
    assert "3 assignments submitted sooner after accepting" in bot.blocked_reason
    assert [c["WorkerId"] for c in fake.calls_of("AssociateQualificationWithWorker")] == ["ABOT"]
    # Work accepted before the block and submitted at a plausible pace: refused as blocked.
    submit(fake, hits[3], "ABOT", choices(hits[3], wrong), seconds=60)
    crowd.sync()
    a = Assignment.objects.get(external_id=late)
    assert (a.refusal, a.refusal_code, a.responses.count()) == (Refusal.PAY, "blocked", 0)
    assert not Response.objects.filter(worker=bot).exists()
    with pytest.raises(WorkerCannotAccept):      # and MTurk offers it no more of our HITs
        fake.worker_accepts(hits[4].external_id, "ABOT")


@pytest.mark.parametrize("missing", [("AcceptTime",), ("SubmitTime",),
                                     ("AcceptTime", "SubmitTime")])
def test_a_record_without_mturk_times_is_not_refused_on_time(
        fake, missing, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    aid = submit(fake, hit, "AQUICK1", choices(hit), seconds=0.1)
    data = mturk.get_assignment(backends.client(), aid)
    assert mturk.AssignmentRecord.from_api(data).work_seconds < 1   # too fast if known
    for name in missing:
        del data[name]
    record = mturk.AssignmentRecord.from_api(data)
    assert record.work_seconds is None
    with django_capture_on_commit_callbacks(execute=True):
        a = sync.accept_record(hit, record)
    assert a is not None and (a.refusal, a.responses.count()) == (Refusal.NONE, 3)


def test_an_mturk_answer_over_the_relation_cap_is_rejected_with_the_rule(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    every_box = choices(hit, lambda q: sorted(allowed_choices(q) - {NO_RELATION}))
    assert all(len(a["choices"]) > 2 for a in every_box)
    aid = submit_on_mturk(fake, hit, "AGREEDY1", every_box)
    result = crowd.sync()
    assert result.refused == 1
    a = Assignment.objects.get(external_id=aid)
    assert (a.refusal, a.refusal_code, a.responses.count()) == (Refusal.REJECT, "invalid", 0)
    assert fake.assignment_status(aid) == "Rejected"
    feedback = fake.assignments[aid].feedback
    assert feedback == a.refusal_reason
    assert "relations are marked for one pair; mark at most 2" in feedback
