"""Control questions in relation HITs: inserted at the configured share from the
exhaustive gold, answered like any question, never a label; a spammer is blocked on
them."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from annotations.crowd import controls, workers
from annotations.interfaces.intake import AnswerIn, from_page, submit_assignment, worker_for
from annotations.interfaces.views import task_data
from annotations.models import (
    Assignment,
    AssignmentState,
    CrowdWorker,
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldRelation,
    Hit,
    PairLabel,
    Question,
    QuestionState,
    Response,
)
from annotations.quality import workers as quality_workers
from estimation import planning
from estimation import report as report_page
from tests.annotations.crowd.helpers import PREDICATE, answer, small_world, system
from tests.factories import make_user

pytestmark = pytest.mark.django_db

TESTED = ["born", "wed", "work"]
GOLD = ["hq", "mborn", "mwork", "bwork"]


@pytest.fixture(autouse=True)
def crowd_settings(settings):
    settings.KBPO_CROWD_BACKEND = "simulated"
    settings.KBPO_QUESTIONS_PER_HIT = 1
    settings.KBPO_ANSWERS_PER_QUESTION = 3
    settings.KBPO_MAX_EXTRA_ANSWERS = 0
    settings.KBPO_REJECT_MIN_QUESTIONS = 100  # keep the spam filter out of this test
    settings.KBPO_CONTROL_SHARE = 0.5        # one control beside each test question
    settings.KBPO_CONTROL_BLOCK_MIN_ANSWERS = 3
    settings.KBPO_REWARD_PER_QUESTION_USD = 0.05


@pytest.fixture
def world(django_capture_on_commit_callbacks):
    corpus, pairs = small_world()
    doc = pairs["born"].document
    ExhaustiveDocument.objects.create(corpus=corpus, document=doc, stage=ExhaustiveStage.SEED,
                                      state=ExhaustiveDocument.State.COMPLETE)
    for key in GOLD:
        p = pairs[key]
        GoldRelation.objects.create(document=doc, subject_begin=p.subject_begin,
                                    subject_end=p.subject_end, object_begin=p.object_begin,
                                    object_end=p.object_end, predicate=PREDICATE[key])
    sub = system(corpus, pairs, TESTED)
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    return sub, pairs


def test_share_spread_over_the_batch() -> None:
    assert controls.expected_controls(9, 0.1) == pytest.approx(1.0)
    assert controls.spread([9, 9, 9], 0.1) == [1, 1, 1]
    # Five questions a HIT at 0.1: 5/9 of a control each, so 5 controls over 9 HITs.
    five = controls.spread([5] * 9, 0.1)
    assert sum(five) == 5 and set(five) == {0, 1}
    assert sum(controls.spread([5] * 90, 0.1)) / (90 * 5 + 50) == pytest.approx(0.1)
    assert controls.spread([5, 5], 0.0) == [0, 0]
    with pytest.raises(ValueError, match="KBPO_CONTROL_SHARE"):
        controls.expected_controls(5, 1.0)


def test_controls_inserted_at_the_share_from_the_gold_and_paid(world) -> None:
    sub, pairs = world
    hits = list(Hit.objects.filter(submission=sub).order_by("pk"))
    assert len(hits) == 3
    by_pair = {p.pk: k for k, p in pairs.items()}
    seen = set()
    for hit in hits:
        qs = [i.question for i in hit.items.select_related("question")]
        ctrl = [q for q in qs if q.control_answer is not None]
        assert len(qs) == 2 and len(ctrl) == 1  # half of the HIT at share 0.5
        key = by_pair[ctrl[0].pair_id]
        assert key not in TESTED and key not in seen  # a pair under test is never a control
        seen.add(key)
        assert ctrl[0].control_answer == [PREDICATE[key]] and ctrl[0].requested_by is None
        assert hit.reward == Decimal("0.10")  # the control is paid like the test question
        # The task page's data is built the same way for both: nothing tells them apart.
        data = task_data("relation", [i.question for i in hit.items.order_by("position")])
        text = json.dumps(data)
        assert "control_answer" not in text and "requested_by" not in text
        assert len({frozenset(item) for item in data["questions"]}) == 1
    assert sum(h.cost_estimate for h in hits) > 0


def test_the_page_numbers_questions_so_controls_cannot_be_told_apart(world) -> None:
    """Controls are created after the batch's test questions: shown by id, the larger id
    would give each HIT's control away. The page numbers its questions 0, 1, … and the
    answers, keyed so, land on the questions shown."""
    sub, pairs = world
    by_pair = {p.pk: k for k, p in pairs.items()}
    for hit in Hit.objects.filter(submission=sub):
        shown = [i.question for i in hit.items.order_by("position", "pk")]
        assert max(q.pk for q in shown if q.control_answer is None) < max(q.pk for q in shown)
        data = task_data("relation", shown)
        assert [item["id"] for item in data["questions"]] == list(range(len(shown)))
        truth = {q.pk: list(q.control_answer) if q.control_answer is not None
                 else [PREDICATE[by_pair[q.pair_id]]] for q in shown}
        keyed = [AnswerIn(n, tuple(truth[q.pk])) for n, q in enumerate(shown)]
        submit_assignment(hit=hit, worker=worker_for("simulated", "a"),
                          assignment_id=f"a-{hit.pk}", answers=from_page(hit, keyed))
        assert dict(Response.objects.filter(assignment__hit=hit).values_list(
            "question_id", "choices")) == truth
    quality_workers.update_worker_quality()
    worker = CrowdWorker.objects.get(external_id="a")
    assert (worker.control_answers, worker.control_right) == (3, 3)


def test_spammer_blocked_on_controls_and_controls_never_become_labels(
        world, django_capture_on_commit_callbacks) -> None:
    sub, pairs = world

    def honest(q: Question) -> list[str]:
        if q.control_answer is not None:
            return list(q.control_answer)
        return [PREDICATE[next(k for k, p in pairs.items() if p.pk == q.pair_id)]]

    for hit in Hit.objects.filter(submission=sub):
        for name, choose in (("a", honest), ("b", honest),
                             ("spam", lambda q: ["no_relation"])):
            with django_capture_on_commit_callbacks(execute=True):
                answer(hit, name, choose)
    # Every question is complete; only the tested pairs got labels.
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()
    labelled = set(PairLabel.objects.values_list("pair_id", flat=True))
    assert labelled == {pairs[k].pk for k in TESTED}
    report = quality_workers.update_worker_quality()
    assert report.control_answers == 9 and report.control_right == 6
    by_id = {w.external_id: w for w in CrowdWorker.objects.all()}
    assert (by_id["a"].control_answers, by_id["a"].control_right) == (3, 3)
    assert (by_id["spam"].control_answers, by_id["spam"].control_right) == (3, 0)
    # The soft labels are fitted with the controls as anchors, on the test pairs only.
    assert report.soft_labels == 3
    assert workers.block_control_outliers() == ["simulated:spam"]
    by_id["spam"].refresh_from_db()
    assert by_id["spam"].blocked and "control questions" in by_id["spam"].blocked_reason
    assert not CrowdWorker.objects.filter(external_id__in=["a", "b"], blocked=True).exists()
    assert workers.block_control_outliers() == []  # already blocked: once
    # Their cost is shown: half of every HIT's cost went to its control.
    charged = sum(h.cost_estimate for h in Hit.objects.filter(submission=sub))
    assert report_page.control_cost(sub) == (charged / 2).quantize(Decimal("0.01")) > 0
    staff = make_user("ops", staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("submission-evaluation", args=[sub.pk])).content.decode()
    assert 'id="control-cost"' in page
    body = client.get(reverse("api-submission-scores", args=[sub.pk])).json()
    assert Decimal(body["control_cost_usd"]) == report_page.control_cost(sub)


def test_a_spammer_is_rejected_in_hits_holding_a_control(
        world, settings, django_capture_on_commit_callbacks) -> None:
    """Clear spam (every answer of the HIT contradicts what is known) is rejected also
    when one of the HIT's questions is a control, which has a known answer, no label."""
    settings.KBPO_REJECT_MIN_QUESTIONS = 2
    sub, pairs = world
    by_pair = {p.pk: k for k, p in pairs.items()}

    def honest(q: Question) -> list[str]:
        if q.control_answer is not None:
            return list(q.control_answer)
        return [PREDICATE[by_pair[q.pair_id]]]

    for hit in Hit.objects.filter(submission=sub):
        for name, choose in (("a", honest), ("b", honest),
                             ("spam", lambda q: ["no_relation"])):
            with django_capture_on_commit_callbacks(execute=True):
                answer(hit, name, choose)
    states = {(w, s) for w, s in Assignment.objects.values_list("worker__external_id",
                                                                "state")}
    assert states == {("a", AssignmentState.APPROVED), ("b", AssignmentState.APPROVED),
                      ("spam", AssignmentState.REJECTED)}
    assert Assignment.objects.filter(worker__external_id="spam").count() == 3


def test_pool_knows_absent_relations_and_skips_tested_pairs(world) -> None:
    sub, pairs = world
    GoldRelation.objects.filter(predicate=PREDICATE["bwork"],
                                subject_begin=pairs["bwork"].subject_begin).delete()
    pool = dict(controls.control_pool(sub.corpus_id))
    # The document's gold is complete: no gold relation on a pair means none holds.
    assert pool[pairs["bwork"].pk] == ["no_relation"]
    assert pool[pairs["hq"].pk] == [PREDICATE["hq"]]
    assert not {pairs[k].pk for k in TESTED} & set(pool)


def test_no_controls_without_a_complete_exhaustive_document(
        settings, django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world("n")
    sub = system(corpus, pairs, TESTED)
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    assert not Question.objects.filter(control_answer__isnull=False).exists()
    assert Hit.objects.filter(submission=sub).count() == 3
