"""Aggregation, ties, payments, spam, worker quality, and the pages that show them."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from annotations.crowd import budget, labels, review
from annotations.crowd import workers as crowd_workers
from annotations.models import (
    Assignment,
    AssignmentState,
    Bonus,
    CrowdWorker,
    Hit,
    HitBatch,
    HitState,
    PairLabel,
    Question,
    QuestionState,
)
from annotations.quality import workers as quality_workers
from annotations.signals import labels_changed
from estimation import planning
from tests.annotations.crowd.helpers import add_control, answer, small_world, system
from tests.factories import AFTER_CROWD, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def crowd_settings(settings):
    settings.KBPO_CROWD_BACKEND = "simulated"
    settings.KBPO_QUESTIONS_PER_HIT = 3
    settings.KBPO_ANSWERS_PER_QUESTION = 3
    settings.KBPO_MAX_EXTRA_ANSWERS = 2
    settings.KBPO_REJECT_MIN_QUESTIONS = 3
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def planned(django_capture_on_commit_callbacks):
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work"])
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    return sub, Hit.objects.get(submission=sub)


def submit(hit, worker, choose, capture):
    with capture(execute=True):
        return answer(hit, worker, choose)


TRUTH = {"PER-GPE": ["per:place_of_birth"], "PER-PER": ["per:spouse"],
         "PER-ORG": ["per:employee_or_member_of"]}


def truth(q):
    return TRUTH[f"{q.pair.subject_type}-{q.pair.object_type}"]


def test_majority_labels_pay_and_move_to_scoring(planned,
                                                 django_capture_on_commit_callbacks) -> None:
    sub, hit = planned
    seen: list[int] = []
    labels_changed.connect(lambda sender, corpus_id, **kw: seen.append(corpus_id),
                           weak=False, dispatch_uid="test-agg")
    try:
        submit(hit, "w1", truth, django_capture_on_commit_callbacks)
        submit(hit, "w2", truth, django_capture_on_commit_callbacks)
        assert not PairLabel.objects.exists()  # two of three answers: nothing yet
        submit(hit, "w3", lambda q: truth(q) if q.pair.object_type == "GPE" else ["no_relation"],
               django_capture_on_commit_callbacks)
    finally:
        labels_changed.disconnect(dispatch_uid="test-agg")
    by_types = {lab.pair.subject_type + "-" + lab.pair.object_type: lab
              for lab in PairLabel.objects.select_related("pair")}
    assert by_types["PER-PER"].predicates == ["per:spouse"]
    assert by_types["PER-PER"].support == pytest.approx(2 / 3)
    assert by_types["PER-PER"].method == "majority" and by_types["PER-PER"].n_answers == 3
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()
    assert seen and set(seen) == {sub.corpus_id}
    hit.refresh_from_db()
    sub.refresh_from_db()
    assert hit.state == HitState.COMPLETE and sub.state in AFTER_CROWD
    # Everyone approved (w3 got one of three right: careless, not spam) and paid.
    assert set(Assignment.objects.values_list("state", "paid")) == {
        (AssignmentState.APPROVED, Decimal("0.15"))}
    assert budget.spend(sub).spent == budget.spend(sub).committed == Decimal("0.45")
    # Aggregating again is a no-op.
    assert labels.aggregate(Question.objects.values_list("pk", flat=True)).labelled == []


def test_questions_still_short_of_answers_cost_one_query(
        planned, django_capture_on_commit_callbacks) -> None:
    """Most aggregations find every question still waiting for answers: they are told
    apart in one unlocked read, whatever the number of questions (no lock, no savepoint
    each); the one that brings the last answer labels."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _sub, hit = planned
    submit(hit, "w1", truth, django_capture_on_commit_callbacks)
    ids = list(hit.items.values_list("question_id", flat=True))
    assert len(ids) == 3
    with CaptureQueriesContext(connection) as ctx:
        out = labels.aggregate(ids)
    assert out.waiting == 3 and out.labelled == []
    # The read, then settling HITs (none complete) and finishing submissions (no label).
    assert not any("FOR UPDATE" in q["sql"] or "SAVEPOINT" in q["sql"]
                   for q in ctx.captured_queries), [q["sql"] for q in ctx.captured_queries]
    assert len(ctx.captured_queries) <= 3
    submit(hit, "w2", truth, django_capture_on_commit_callbacks)
    submit(hit, "w3", truth, django_capture_on_commit_callbacks)
    assert PairLabel.objects.filter(question_id__in=ids).count() == 3


def test_tie_asks_for_more_then_takes_the_plurality(planned,
                                                    django_capture_on_commit_callbacks):
    _sub, hit = planned
    answers = iter([["no_relation"], ["per:spouse"], ["per:siblings"], ["per:parents"],
                    ["per:children"]])
    spouse_q = Question.objects.get(pair__object_type="PER")

    def choose(q):
        return next(answers) if q.pk == spouse_q.pk else truth(q)

    for w in ("w1", "w2", "w3"):
        submit(hit, w, choose, django_capture_on_commit_callbacks)
    spouse_q.refresh_from_db()
    hit.refresh_from_db()
    assert spouse_q.state == QuestionState.OPEN and spouse_q.answers_needed == 4
    assert hit.max_assignments == 4 and hit.state == HitState.POSTED
    assert hit.cost_estimate == Decimal("0.60")
    assert PairLabel.objects.count() == 2  # the other two questions are settled
    submit(hit, "w4", choose, django_capture_on_commit_callbacks)
    spouse_q.refresh_from_db()
    assert spouse_q.answers_needed == 5  # still tied: the second and last extra answer
    submit(hit, "w5", choose, django_capture_on_commit_callbacks)
    label = PairLabel.objects.get(pair=spouse_q.pair)
    # All five differ: the plurality (ties broken by name) after the cap.
    assert label.method == "plurality" and label.predicates == ["no_relation"]
    assert label.n_answers == 5
    hit.refresh_from_db()
    assert hit.state == HitState.COMPLETE


def test_no_extra_answer_beyond_the_budget(planned, django_capture_on_commit_callbacks):
    _sub, hit = planned
    budget.BudgetSettings.objects.update(cap_usd=Decimal("0.45"))
    spouse_q = Question.objects.get(pair__object_type="PER")
    answers = iter([["no_relation"], ["per:spouse"], ["per:siblings"]])
    for w in ("w1", "w2", "w3"):
        submit(hit, w, lambda q: next(answers) if q.pk == spouse_q.pk else truth(q),
               django_capture_on_commit_callbacks)
    label = PairLabel.objects.get(pair=spouse_q.pair)
    assert label.method == "plurality" and label.n_answers == 3
    hit.refresh_from_db()
    assert hit.max_assignments == 3 and budget.spend().committed <= Decimal("0.45")


def test_clear_spam_is_rejected_with_a_reason(planned, django_capture_on_commit_callbacks):
    sub, hit = planned
    add_control(hit)  # the evidence: a question whose answer is known (PER-GPE)
    wrong = {"PER-GPE": ["per:place_of_death"], "PER-PER": ["per:siblings"],
             "PER-ORG": ["no_relation"]}
    submit(hit, "good1", truth, django_capture_on_commit_callbacks)
    submit(hit, "spam", lambda q: wrong[f"{q.pair.subject_type}-{q.pair.object_type}"],
           django_capture_on_commit_callbacks)
    submit(hit, "good2", truth, django_capture_on_commit_callbacks)
    states = dict(Assignment.objects.values_list("worker__external_id", "state"))
    assert states == {"good1": "approved", "good2": "approved", "spam": "rejected"}
    spam = Assignment.objects.get(worker__external_id="spam")
    assert spam.paid == 0 and "the known answer is per:place_of_birth; you answered " \
        "per:place_of_death" in spam.feedback and "“Mary Lane” and “Rome”" in spam.feedback
    assert budget.spend(sub).spent == Decimal("0.30")  # rejected work costs nothing


def test_bonus_is_paid_once_and_counted(planned, django_capture_on_commit_callbacks):
    sub, hit = planned
    for w in ("w1", "w2", "w3"):
        submit(hit, w, truth, django_capture_on_commit_callbacks)
    a = Assignment.objects.first()
    bonus = review.grant_bonus(a, Decimal("0.10"), "Careful work")
    assert bonus.paid_at is not None and bonus.token == f"kbpo-bonus-{bonus.pk}"
    assert review.pay_bonus(bonus.pk) is False  # a retry pays nothing
    assert budget.spend(sub).spent == Decimal("0.55")
    with pytest.raises(ValueError):
        review.grant_bonus(a, Decimal("0.10"), "  ")
    budget.BudgetSettings.objects.update(cap_usd=Decimal("0.56"))
    with pytest.raises(budget.BudgetExceeded):
        review.grant_bonus(a, Decimal("0.10"), "More")
    assert Bonus.objects.count() == 1


def test_worker_quality_flags_and_batch_agreement(settings, django_capture_on_commit_callbacks):
    settings.KBPO_WORKER_FLAG_MIN_ANSWERS = 3
    settings.KBPO_REJECT_MIN_QUESTIONS = 0
    corpus, pairs = small_world()
    sub = system(corpus, pairs, list(pairs))
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    no = {"PER-GPE": ["per:place_of_death"], "PER-PER": ["per:siblings"],
          "PER-ORG": ["no_relation"], "ORG-GPE": ["no_relation"]}
    yes = {"PER-GPE": ["per:place_of_birth"], "PER-PER": ["per:spouse"],
           "PER-ORG": ["per:employee_or_member_of"], "ORG-GPE": ["org:place_of_headquarters"]}
    for hit in Hit.objects.all():
        for w in ("a", "b", "bad"):
            table = no if w == "bad" else yes
            submit(hit, w, lambda q, t=table: t[f"{q.pair.subject_type}-{q.pair.object_type}"],
                   django_capture_on_commit_callbacks)
    report = quality_workers.update_worker_quality()
    by_id = {w.external_id: w for w in CrowdWorker.objects.all()}
    assert by_id["bad"].flagged and by_id["bad"].agreement == 0.0
    # Each honest worker ties with "bad" among the others: half credit, not flagged.
    assert not by_id["a"].flagged and by_id["a"].agreement == 0.5
    assert by_id["a"].accuracy_ds > 0.9 > by_id["bad"].accuracy_ds
    assert by_id["a"].n_answers == 7
    assert report.flagged == ["simulated:bad"]
    batch = HitBatch.objects.get()
    assert batch.alpha is not None and batch.alpha < 1 and batch.n_answers == 21
    # Soft labels: every label carries its posterior; two honest workers against one
    # dissenter make the majority label likely but not certain.
    assert report.soft_labels == PairLabel.objects.count() == 7
    for label in PairLabel.objects.all():
        key = "|".join(label.predicates)
        assert 0.5 < label.p_correct < 1.0
        assert label.posterior[key] == pytest.approx(label.p_correct, abs=1e-6)
        assert sum(label.posterior.values()) == pytest.approx(1.0, abs=1e-4)
        assert set(label.prior) == set(label.posterior) == set(label.type_prior)
        assert all(0 < v < 1 for v in label.type_prior.values())
    # A second pass on the same answers moves nothing, so it writes (and stamps) no row:
    # the scores' next read of the labels has nothing to fetch (label_table.py).
    assert quality_workers.update_worker_quality().soft_labels == 0
    crowd_workers.block_worker(by_id["bad"], "disagrees with everyone")
    by_id["bad"].refresh_from_db()
    assert by_id["bad"].blocked and by_id["bad"].blocked_reason


def test_submission_page_and_admin_show_the_money(client, planned,
                                                  django_capture_on_commit_callbacks):
    sub, hit = planned
    submit(hit, "w1", truth, django_capture_on_commit_callbacks)
    client.force_login(sub.owner)
    page = client.get(reverse("submission-detail", args=[sub.pk])).content.decode()
    assert 'id="crowd-budget"' in page and "$0.45 of $100.00" in page
    # The plan's event: its draws (with replacement) cover 1 to 3 of the three pairs,
    # as the submission's seed falls.
    assert re.search(r"Sample of \d+ draws over [1-3] mention pairs", page), page
    staff = make_user("op", staff=True)
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    for name in ("hit", "hitbatch", "assignment", "crowdworker", "question", "pairlabel",
                 "bonus", "budgetsettings", "submissionbudget"):
        resp = client.get(reverse(f"admin:annotations_{name}_changelist"))
        assert resp.status_code == 200, name
    assert "0.45" in client.get(reverse("admin:annotations_budgetsettings_changelist")
                                ).content.decode()
    url = reverse("admin:annotations_crowdworker_changelist")
    worker = CrowdWorker.objects.get(external_id="w1")
    # Blocking asks for a reason first, then blocks.
    resp = client.post(url, {"action": "block_selected", "_selected_action": [worker.pk]})
    assert resp.status_code == 200 and "Reason" in resp.content.decode()
    client.post(url, {"action": "block_selected", "_selected_action": [worker.pk],
                      "confirm": "1", "reason": "test block"})
    worker.refresh_from_db()
    assert worker.blocked and worker.blocked_reason == "test block"
    client.post(url, {"action": "unblock_selected", "_selected_action": [worker.pk]})
    worker.refresh_from_db()
    assert not worker.blocked
    a = Assignment.objects.get()
    url = reverse("admin:annotations_assignment_changelist")
    client.post(url, {"action": "reject_selected", "_selected_action": [a.pk],
                      "confirm": "1", "reason": ""})
    a.refresh_from_db()
    assert a.state == AssignmentState.SUBMITTED  # no reason, no rejection
    client.post(url, {"action": "reject_selected", "_selected_action": [a.pk],
                      "confirm": "1", "reason": "random clicks"})
    a.refresh_from_db()
    assert a.state == AssignmentState.REJECTED and a.feedback == "random clicks"


@pytest.mark.parametrize("debounce", [10, 0])
def test_labels_refit_the_crowd_model_without_waiting_for_the_pass(
        planned, django_capture_on_commit_callbacks, settings, debounce) -> None:
    """New labels ask for a refit of the corpus's crowd model (debounced; eager Celery
    runs it at once): the soft labels exist before the hourly pass. With the debounce
    at 0 (off) they wait for the pass, as before."""
    from django.core.cache import cache

    settings.KBPO_CROWD_REFIT_DEBOUNCE = debounce
    sub, hit = planned
    cache.delete(quality_workers.refit_key(sub.corpus_id))
    for w in ("w1", "w2", "w3"):
        submit(hit, w, truth, django_capture_on_commit_callbacks)
    assert PairLabel.objects.count() == 3
    soft = [lab.posterior for lab in PairLabel.objects.all()]
    if debounce:
        assert all(soft), soft
        # The refit's own relabelling asks for no further refit: nothing waits.
        assert cache.get(quality_workers.refit_key(sub.corpus_id)) is None
    else:
        assert not any(soft), soft


def test_discounted_answers_take_no_part_in_the_vote(
        planned, django_capture_on_commit_callbacks) -> None:
    """An answer no longer counted (its assignment was rejected: crowd/discount.py) is
    kept for audit but never voted: with it, the spouse question's 2-of-3 majority below
    would be a 2-2 tie."""
    from django.db.models import F

    from annotations.crowd.discount import discount

    _, hit = planned
    other = {"PER-GPE": ["per:place_of_death"], "PER-PER": ["per:siblings"],
             "PER-ORG": ["no_relation"]}

    def wrong(q):
        return other[f"{q.pair.subject_type}-{q.pair.object_type}"]

    first = submit(hit, "gone", wrong, django_capture_on_commit_callbacks)
    discount(first.pk)
    Hit.objects.filter(pk=hit.pk).update(max_assignments=F("max_assignments") + 1)  # its slot
    def spouse_wrong(q):  # careless on one question, not spam
        return wrong(q) if q.pair.object_type == "PER" else truth(q)

    for w, choose in (("w1", truth), ("w2", truth), ("w3", spouse_wrong)):
        submit(hit, w, choose, django_capture_on_commit_callbacks)
    labels.aggregate(Question.objects.values_list("pk", flat=True))
    got = {f"{lab.pair.subject_type}-{lab.pair.object_type}": (lab.predicates, lab.n_answers)
           for lab in PairLabel.objects.select_related("pair")}
    assert got == {k: (v, 3) for k, v in TRUTH.items()}
    assert first.responses.filter(counted=False).count() == 3  # kept, not counted
