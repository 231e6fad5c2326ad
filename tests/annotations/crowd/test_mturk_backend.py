"""The crowd pipeline against the fake MTurk endpoint (tests/annotations/crowd/fake_mturk.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from annotations.crowd import backends, budget, mturk, periodic, review, workers
from annotations.models import (
    Assignment,
    AssignmentState,
    Bonus,
    CrowdWorker,
    Hit,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    SubmissionBudget,
)
from estimation import planning
from submissions.models import State
from tests.annotations.crowd.fake_mturk import (
    EXTERNAL_QUESTION_NS,
    MODEL,
    FakeMTurk,
    validate_shape,
)
from tests.annotations.crowd.helpers import small_world, system
from tests.conftest import held_in_another_connection
from tests.factories import AFTER_CROWD, make_hit

pytestmark = pytest.mark.django_db
PUBLIC = "https://kbpo.example.org"


@pytest.fixture
def fake(monkeypatch, settings):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDKBPOTESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeMTurk(balance="100.00") as server:
        settings.KBPO_CROWD_BACKEND = "mturk"
        settings.MTURK_ENDPOINT_URL = server.endpoint_url
        settings.KBPO_PUBLIC_URL = PUBLIC
        settings.KBPO_MTURK_MAX_ATTEMPTS = 4
        settings.KBPO_QUESTIONS_PER_HIT = 3
        settings.KBPO_ANSWERS_PER_QUESTION = 3
        settings.KBPO_REJECT_MIN_QUESTIONS = 3
        yield server
    assert not server.internal_errors, server.internal_errors


@pytest.fixture
def posted(fake, django_capture_on_commit_callbacks):
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work"])
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    sub.refresh_from_db()
    return sub, Hit.objects.get(submission=sub)


def answers_json(hit: Hit, choose) -> dict[str, str]:
    items = hit.items.select_related("question__pair").order_by("position")
    payload = {"answers": [{"question": i.question_id, "choices": choose(i.question)}
                           for i in items]}
    return {"answers": json.dumps(payload)}


def truth(q):
    return {"GPE": ["per:place_of_birth"], "PER": ["per:spouse"],
            "ORG": ["per:employee_or_member_of"]}[q.pair.object_type]


def test_hit_is_created_with_our_question_and_token(posted, fake) -> None:
    sub, hit = posted
    assert sub.state == State.ANNOTATING and hit.state == HitState.POSTED
    ops = [op for op, _ in fake.calls]
    assert ops.index("GetAccountBalance") < ops.index("CreateHITWithHITType")
    (call,) = fake.calls_of("CreateHITWithHITType")
    assert call["UniqueRequestToken"] == hit.request_token == f"kbpo-hit-{hit.pk}"
    assert call["MaxAssignments"] == 3 and hit.external_id in fake.hits
    root = ET.fromstring(call["Question"])
    assert root.tag == f"{{{EXTERNAL_QUESTION_NS}}}ExternalQuestion"
    url = root.findtext(f"{{{EXTERNAL_QUESTION_NS}}}ExternalURL")
    assert url == f"{PUBLIC}/annotate/hit/{hit.url_key}/" == backends.task_url(hit)
    # The page is named by the random key alone (32 URL-safe characters, 192 bits), never
    # by the sequential id (a random key holds the digit of a small id 40% of the time).
    assert fake.external_url(hit.external_id) == url
    assert len(hit.url_key) == 32 and hit.url_key != str(hit.pk)
    hit_type = fake.hits[hit.external_id].type
    assert hit_type.reward == Decimal("0.15") and "related" in hit_type.title
    comparators = {r["QualificationTypeId"]: r["Comparator"] for r in hit_type.requirements}
    assert comparators[mturk.QUAL_APPROVAL_RATE] == "GreaterThanOrEqualTo"
    assert comparators[mturk.QUAL_LOCALE] == "EqualTo"  # one country: US
    assert comparators[backends.block_qualification_id()] == "DoesNotExist"
    # Posting again (a redelivered task) does nothing.
    backends.post_hit(hit)
    planning.plan_submission(sub.pk)
    assert len(fake.calls_of("CreateHITWithHITType")) == 1 and len(fake.hits) == 1
    # Committed: (0.15 reward + 0.03 fee) x 3.
    assert budget.spend(sub).committed == Decimal("0.54")


def test_document_level_corpora_get_hit_types_that_say_so(fake) -> None:
    """A DocRED corpus's questions are on whole articles: MTurk's listing must not call
    them news sentences. The entity kind (TAC only) keeps its texts."""
    tac = backends.hit_type_config("relation", Decimal("0.10"), 3)
    for kind in ("relation", "exhaustive"):
        doc = backends.hit_type_config(kind, Decimal("0.10"), 3, "docred")
        assert "news" not in (doc.title + doc.description).lower()
        assert "article" in doc.title and doc.title != tac.title
        assert validate_shape(MODEL.operation_model("CreateHITType").input_shape,
                              doc.create_hit_type_params()) == []
    assert "news" in tac.description
    assert backends.hit_type_config("entity", Decimal("0.10"), 3, "docred").title == \
        backends.hit_type_config("entity", Decimal("0.10"), 3).title


def test_lost_answers_and_crashes_never_make_a_second_hit(fake, monkeypatch,
                                                          django_capture_on_commit_callbacks):
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work", "hq", "mborn", "mwork"])
    # The first CreateHIT succeeds on MTurk but its answer is lost; botocore retries.
    fake.inject("CreateHITWithHITType", "ServiceFault", after=True)
    # The second one dies after MTurk made the HIT, before we stored its id.
    real = mturk.create_hit
    calls = {"n": 0}

    def crash_on_second(*args, **kwargs):
        hit_id = real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("worker killed")
        return hit_id

    monkeypatch.setattr(mturk, "create_hit", crash_on_second)
    with pytest.raises(SystemExit), django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    first, second = Hit.objects.filter(submission=sub).order_by("pk")
    assert first.state == HitState.POSTED and first.external_id
    assert second.state == HitState.PENDING and second.request_token and not second.external_id
    fake.advance(25 * 3600)  # MTurk has forgotten the token by now: our row must suffice
    monkeypatch.setattr(mturk, "create_hit", real)
    planning.plan_submission(sub.pk)  # the re-run
    second.refresh_from_db()
    assert second.state == HitState.POSTED and second.external_id in fake.hits
    assert len(fake.hits) == 2
    tokens = [c["UniqueRequestToken"] for c in fake.calls_of("CreateHITWithHITType")]
    assert tokens == [first.request_token] * 2 + [second.request_token]


def test_throttling_is_retried(fake, django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born"])
    fake.inject("CreateHITWithHITType", "ThrottlingException", times=2)
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hit = Hit.objects.get()
    assert hit.state == HitState.POSTED and len(fake.hits) == 1
    assert len(fake.calls_of("CreateHITWithHITType")) == 3


def test_sync_collects_answers_only_mturk_saw_then_pays(posted, fake,
                                                        django_capture_on_commit_callbacks):
    sub, hit = posted
    for w in ("AWORKER1", "AWORKER2", "AWORKER3"):
        fake.worker_submits(hit.external_id, w, answers_json(hit, truth))
    with django_capture_on_commit_callbacks(execute=True):
        result = periodic.sync_all()
    assert result.reconciled == 3 and not result.errors
    assert set(Assignment.objects.values_list("source", flat=True)) == {"sync"}
    assert PairLabel.objects.count() == 3
    hit.refresh_from_db()
    sub.refresh_from_db()
    assert hit.state == HitState.COMPLETE and sub.state in AFTER_CROWD
    assert {fake.assignment_status(a) for a in fake.assignments} == {"Approved"}
    assert set(Assignment.objects.values_list("state", flat=True)) == {"approved"}
    assert fake.hit_status(hit.external_id) == "Reviewable"
    with django_capture_on_commit_callbacks(execute=True):
        again = periodic.sync_all()
    assert again.hits == 0 and Assignment.objects.count() == 3
    assert len(fake.calls_of("ApproveAssignment")) == 3


def test_bad_answer_xml_is_rejected_with_a_reason_and_replaced(posted, fake) -> None:
    _, hit = posted
    aid = fake.worker_submits(hit.external_id, "AWORKER9", {"answers": "not json"})
    result = periodic.sync_all()
    assert (result.reconciled, result.refused, result.replaced) == (0, 1, 1)
    # Rejected at once, with a reason the worker can act on; nothing of it counts.
    assert fake.assignment_status(aid) == "Rejected"
    feedback = fake.assignments[aid].feedback
    assert "not JSON" in feedback and "Submit button" in feedback
    a = Assignment.objects.get()
    assert (a.state, a.refusal, a.responses.count()) == (AssignmentState.REJECTED, "reject", 0)
    # Its slot is replaced: the three answers the questions need can still arrive.
    assert fake.hits[hit.external_id].max_assignments == 4
    assert Hit.objects.get(pk=hit.pk).max_assignments == 4
    again = periodic.sync_all()
    assert (again.refused, again.replaced) == (0, 0)
    assert len(fake.calls_of("RejectAssignment")) == 1


def test_unreadable_answer_xml_is_refused_without_stopping_the_sync(
        posted, fake, django_capture_on_commit_callbacks) -> None:
    """A hand-made externalSubmit with a control character makes MTurk's answer XML
    unreadable (as the fake writes it). That one assignment is rejected with a reason;
    the sync of the HIT and of the others goes on (it raised ValueError and stopped)."""
    _, hit = posted
    bad = fake.worker_submits(hit.external_id, "AWORKER9", {"answers": "\x01"})
    good = fake.worker_submits(hit.external_id, "AWORKER1",
                               answers_json(hit, truth))
    with django_capture_on_commit_callbacks(execute=True):
        result = periodic.sync_all()
    assert (result.reconciled, result.refused, result.errors) == (1, 1, [])
    assert fake.assignment_status(bad) == "Rejected"
    assert "could not be read" in fake.assignments[bad].feedback
    assert Assignment.objects.get(external_id=good).responses.count() == hit.items.count()
    assert not Assignment.objects.get(external_id=bad).responses.exists()


def test_rejected_garbage_holds_no_budget(posted, fake) -> None:
    """Work we reject is never paid, and its slot is replaced: the HIT's estimate grows
    by one slot while the rejected one is released. A budget that just covers the HIT
    keeps replacing slots burnt by garbage (each held a slot's price until the HIT
    ended: here the first replacement was refused; a few cheaters stalled a budget)."""
    sub, hit = posted
    committed = budget.spend(sub).committed
    SubmissionBudget.objects.create(submission=sub, cap_usd=committed)
    for i in range(3):
        fake.worker_submits(hit.external_id, f"AGARBAGE{i}", {"answers": "not json"})
        result = periodic.sync_all()
        assert (result.refused, result.replaced, result.errors) == (1, 1, [])
    assert Hit.objects.get(pk=hit.pk).max_assignments == 6
    assert budget.spend(sub).committed == committed


def test_tie_adds_an_assignment_on_mturk_once(posted, fake,
                                              django_capture_on_commit_callbacks) -> None:
    _, hit = posted
    split = iter([["no_relation"], ["per:siblings"], ["per:spouse"]])
    wed = Question.objects.get(pair__object_type="PER")
    for w in ("AWORKER1", "AWORKER2", "AWORKER3"):
        fake.worker_submits(hit.external_id, w, answers_json(
            hit, lambda q: next(split) if q.pk == wed.pk else truth(q)))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.sync_all()
    hit.refresh_from_db()
    assert hit.max_assignments == 4 and fake.hits[hit.external_id].max_assignments == 4
    (call,) = fake.calls_of("CreateAdditionalAssignmentsForHIT")
    assert call["UniqueRequestToken"] == f"kbpo-extra-{hit.pk}-4"
    backends.ensure_assignments(hit)  # a retry compares with MTurk: nothing to add
    assert len(fake.calls_of("CreateAdditionalAssignmentsForHIT")) == 1
    # spouse now has 2 of 4 answers: still no strict majority, so one more (the cap).
    fake.worker_submits(hit.external_id, "AWORKER4", answers_json(hit, truth))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.sync_all()
    assert fake.hits[hit.external_id].max_assignments == 5
    assert len(fake.calls_of("CreateAdditionalAssignmentsForHIT")) == 2
    fake.worker_submits(hit.external_id, "AWORKER5", answers_json(hit, truth))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.sync_all()
    wed.refresh_from_db()
    assert wed.state == QuestionState.COMPLETE
    assert PairLabel.objects.get(pair=wed.pair).predicates == ["per:spouse"]
    assert Hit.objects.get(pk=hit.pk).state == HitState.COMPLETE


def test_bonus_is_never_paid_twice(posted, fake, django_capture_on_commit_callbacks) -> None:
    _, hit = posted
    for w in ("AWORKER1", "AWORKER2", "AWORKER3"):
        fake.worker_submits(hit.external_id, w, answers_json(hit, truth))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.sync_all()
    a = Assignment.objects.order_by("pk").first()
    fake.inject("SendBonus", "ServiceFault", after=True)  # paid, answer lost, retried
    bonus = review.grant_bonus(a, Decimal("0.25"), "Thorough work")
    assert bonus.paid_at is not None and len(fake.bonuses) == 1
    Bonus.objects.filter(pk=bonus.pk).update(paid_at=None)  # as if we died before saving
    assert review.pay_bonus(bonus.pk) is True
    assert len(fake.bonuses) == 1
    assert fake.bonuses[0]["BonusAmount"] == "0.25"
    assert len(fake.calls_of("SendBonus")) == 3


def test_expired_hit_with_open_questions_is_extended(posted, fake) -> None:
    _, hit = posted
    backends.expire(hit)
    assert fake.hit_status(hit.external_id) == "Reviewable"
    result = periodic.sync_all()
    assert result.extended == 1
    assert fake.hit_status(hit.external_id) == "Assignable"
    hit.refresh_from_db()
    assert hit.state == HitState.POSTED and hit.expires_at is not None


def test_balance_and_production_guards_refuse_to_post(fake, settings,
                                                      django_capture_on_commit_callbacks):
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born"])
    fake.set_balance("0.10")
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hit = Hit.objects.get()
    assert hit.state == HitState.PENDING and "balance is $0.10" in hit.post_error
    assert not fake.calls_of("CreateHITWithHITType") and hit.request_token is None
    assert "Crowd work on hold" in sub.events.last().message
    assert budget.spend(sub).committed == 0
    settings.MTURK_USE_PRODUCTION = True
    budget.BudgetSettings.objects.update(cap_usd=0)
    fake.set_balance("100")
    with pytest.raises(backends.ProductionNotAllowed):
        backends.post_hit(hit)
    assert not fake.calls_of("CreateHITWithHITType")


def test_blocking_uses_the_block_qualification(fake) -> None:
    worker = CrowdWorker.objects.create(backend="mturk", external_id="AWORKERX")
    workers.block_worker(worker, "spam")
    qual = fake.qual_types[backends.block_qualification_id()]
    assert "AWORKERX" in qual.grants
    worker.refresh_from_db()
    assert worker.blocked
    workers.unblock_worker(worker)
    assert "AWORKERX" not in qual.grants
    assert Assignment.objects.filter(state=AssignmentState.APPROVED).count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_slow_mturk_call_locks_neither_the_hit_nor_the_worker(
        needs_postgres, posted, fake, monkeypatch) -> None:
    """Paying a bonus calls MTurk inside the bonus's transaction; FOR UPDATE with
    select_related also locked the HIT's and the worker's rows for that network call, so
    the worker's next answer (an assignment referencing both) waited at COMMIT."""
    _, hit = posted
    for w in ("AWORKER1", "AWORKER2", "AWORKER3"):  # complete: reviewed and approved
        fake.worker_submits(hit.external_id, w, answers_json(hit, truth))
    periodic.sync_all()
    a = Assignment.objects.order_by("pk").first()
    bonus = review.grant_bonus(a, Decimal("0.25"), "Thorough work")
    Bonus.objects.filter(pk=bonus.pk).update(paid_at=None)  # paid again below, held
    with held_in_another_connection(monkeypatch, mturk, "send_bonus",
                                    lambda: review.pay_bonus(bonus.pk)) as paid:
        # Another worker's answer to the HIT, and this worker's answer to another.
        other = type(a.worker).objects.create(backend=a.worker.backend,
                                              external_id="AWORKER9")
        Assignment.objects.create(hit=hit, worker=other, external_id="NEXT-1")
        Assignment.objects.create(hit=make_hit(hit.corpus, [], backend=hit.backend),
                                  worker=a.worker, external_id="NEXT-2")
    assert paid == [True]
