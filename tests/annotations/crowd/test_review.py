"""annotations/crowd/review.py: finished HITs are reviewed (spam rejected with a reason,
the rest approved), and bonuses go to approved work only, within the budget, checked
again when the money moves."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotations.crowd import budget, review
from annotations.models import (
    Assignment,
    AssignmentState,
    Bonus,
    BudgetSettings,
    Hit,
    Refusal,
)
from tests.annotations.crowd.helpers import TRUTH, WRONG, add_control, answer, planned_hit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def crowd_settings(settings):
    settings.KBPO_CROWD_BACKEND = "simulated"
    settings.KBPO_QUESTIONS_PER_HIT = 3
    settings.KBPO_ANSWERS_PER_QUESTION = 3
    settings.KBPO_REJECT_MIN_QUESTIONS = 3


@pytest.fixture
def hit(django_capture_on_commit_callbacks) -> Hit:
    return planned_hit(django_capture_on_commit_callbacks)[1]


def work(hit: Hit, capture, *workers: tuple[str, dict]) -> None:
    for name, answers in workers:
        with capture(execute=True):  # the last one completes the HIT: review runs
            answer(hit, name, lambda q, a=answers: a[q.pair.object_type])


def test_review_rejects_clear_spam_with_a_reason_and_approves_the_rest(
        hit, django_capture_on_commit_callbacks) -> None:
    """Spam is rejected on evidence: it misses the HIT's control question (a known
    answer, per:place_of_birth for the GPE pair) and contradicts every other label."""
    add_control(hit)
    work(hit, django_capture_on_commit_callbacks,
         ("good1", TRUTH), ("spam", WRONG), ("good2", TRUTH))
    states = dict(Assignment.objects.values_list("worker__external_id", "state"))
    assert states == {"good1": "approved", "good2": "approved", "spam": "rejected"}
    spam = Assignment.objects.get(worker__external_id="spam")
    assert spam.paid == 0 and "the known answer is per:place_of_birth" in spam.feedback
    assert review.review_hit(hit.pk) == (0, 0)  # reviewed once


@pytest.fixture
def approved(hit, django_capture_on_commit_callbacks) -> Assignment:
    work(hit, django_capture_on_commit_callbacks,
         ("w1", TRUTH), ("w2", TRUTH), ("w3", TRUTH))
    a = Assignment.objects.get(worker__external_id="w1")
    assert a.state == AssignmentState.APPROVED
    return a


def test_a_bonus_is_not_paid_on_work_rejected_after_the_grant(approved) -> None:
    # The grant is recorded (row and token) but its payment did not go through; the work
    # is then found to be bad and rejected. The retried payment must not pay.
    bonus = Bonus.objects.create(assignment=approved, amount=Decimal("0.10"),
                                 reason="Careful work", token="kbpo-bonus-test")
    Assignment.objects.filter(pk=approved.pk).update(state=AssignmentState.REJECTED)
    with pytest.raises(ValueError, match="bonuses are paid on approved work only"):
        review.pay_bonus(bonus.pk)
    bonus.refresh_from_db()
    assert bonus.paid_at is None


def test_bonuses_go_to_approved_work_only(approved) -> None:
    for state, refusal in ((AssignmentState.SUBMITTED, Refusal.NONE),
                           (AssignmentState.REJECTED, Refusal.NONE),
                           (AssignmentState.APPROVED, Refusal.PAY)):
        Assignment.objects.filter(pk=approved.pk).update(state=state, refusal=refusal)
        with pytest.raises(ValueError, match="approved work only"):
            review.grant_bonus(approved, Decimal("0.10"), "Careful work")
    assert not Bonus.objects.exists()
    Assignment.objects.filter(pk=approved.pk).update(state=AssignmentState.APPROVED,
                                                     refusal=Refusal.NONE)
    bonus = review.grant_bonus(approved, Decimal("0.10"), "Careful work")
    assert bonus.paid_at is not None
    assert review.pay_bonus(bonus.pk) is False  # paid once


def test_a_bonus_is_held_to_the_budget(approved) -> None:
    BudgetSettings.objects.update(cap_usd=Decimal("0.50"))  # 0.45 of work already paid
    with pytest.raises(budget.BudgetExceeded, match="global budget"):
        review.grant_bonus(approved, Decimal("0.10"), "Careful work")
    assert not Bonus.objects.exists()
    review.grant_bonus(approved, Decimal("0.05"), "Careful work")  # exactly to the cap
