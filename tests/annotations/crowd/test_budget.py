"""annotations/crowd/budget.py: what is spent, what is committed, and the caps.

A finished HIT's submitted but unreviewed work is still owed (approving it pays), a
rejected slot is released, a bonus is committed when granted and spent when paid, and
both the global and the submission's cap hold."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from annotations.crowd import budget
from annotations.interfaces.intake import worker_for
from annotations.models import (
    Assignment,
    AssignmentState,
    Bonus,
    BudgetSettings,
    Hit,
    HitState,
    SubmissionBudget,
)
from tests.annotations.crowd.helpers import small_world, system
from tests.factories import make_hit

pytestmark = pytest.mark.django_db
UNIT = Decimal("0.25")  # make_hit's reward; on-site work pays no fee


@pytest.fixture
def sub():
    BudgetSettings.current()
    BudgetSettings.objects.update(cap_usd=Decimal("100.00"),
                                  per_submission_default_usd=Decimal("50.00"))
    corpus, pairs = small_world()
    return system(corpus, pairs, ["born", "wed", "work"])


def hit_with(sub, state: str, *work: str) -> Hit:
    """A HIT of three slots (estimate: three units) holding assignments in `work`'s states."""
    pairs = [sub.instances.order_by("pk")[Hit.objects.count()].pair]  # one open question
    hit = make_hit(sub.corpus, pairs, state=state, submission=sub)
    Hit.objects.filter(pk=hit.pk).update(cost_estimate=3 * UNIT)
    for i, s in enumerate(work):
        Assignment.objects.create(hit=hit, worker=worker_for("simulated", f"w{hit.pk}-{i}"),
                                  external_id=f"A{hit.pk}-{i}", state=s,
                                  paid=UNIT if s == AssignmentState.APPROVED else 0)
    return hit


def test_a_finished_hits_unreviewed_work_stays_committed(sub) -> None:
    hit_with(sub, HitState.COMPLETE, *[AssignmentState.SUBMITTED] * 3)
    assert tuple(budget.spend(sub)) == (0, 3 * UNIT, Decimal("50.00"))
    assert tuple(budget.spend(None))[:2] == (0, 3 * UNIT)
    # Approving it will pay 0.75: a post that would take the cap past that is refused.
    SubmissionBudget.objects.create(submission=sub, cap_usd=Decimal("1.00"))
    with transaction.atomic(), pytest.raises(budget.BudgetExceeded,
                                             match="this submission's budget"):
        budget.check_and_lock(2 * UNIT, sub, "posting a HIT")
    with transaction.atomic():
        budget.check_and_lock(UNIT, sub, "posting a HIT")  # exactly to the cap


def test_a_finished_hit_releases_rejected_work_and_unused_slots(sub) -> None:
    hit_with(sub, HitState.EXPIRED, AssignmentState.APPROVED, AssignmentState.REJECTED)
    assert tuple(budget.spend(sub))[:2] == (UNIT, UNIT)


def test_a_posted_hit_holds_its_estimate_less_rejected_slots(sub) -> None:
    hit = hit_with(sub, HitState.POSTED)
    assert budget.spend(sub).committed == 3 * UNIT
    for i, state in enumerate((AssignmentState.REJECTED, AssignmentState.SUBMITTED)):
        Assignment.objects.create(hit=hit, worker=worker_for("simulated", f"v{i}"),
                                  external_id=f"V{i}", state=state)
    # The rejected slot's price is released (its replacement is in the estimate).
    assert tuple(budget.spend(sub))[:2] == (0, 2 * UNIT)


def test_approved_work_is_spent_and_submitted_work_is_not(sub) -> None:
    hit_with(sub, HitState.COMPLETE, AssignmentState.APPROVED, AssignmentState.SUBMITTED,
             AssignmentState.APPROVED)
    assert tuple(budget.spend(sub))[:2] == (2 * UNIT, 3 * UNIT)


def test_a_bonus_is_committed_when_granted_and_spent_when_paid(sub) -> None:
    hit = hit_with(sub, HitState.COMPLETE, AssignmentState.APPROVED)
    bonus = Bonus.objects.create(assignment=hit.assignments.get(), amount=Decimal("0.10"),
                                 reason="Careful work", token="t-1")
    assert tuple(budget.spend(sub))[:2] == (UNIT, UNIT + Decimal("0.10"))
    Bonus.objects.filter(pk=bonus.pk).update(paid_at=timezone.now())
    assert tuple(budget.spend(sub))[:2] == (UNIT + Decimal("0.10"), UNIT + Decimal("0.10"))


def test_both_caps_hold_and_the_message_says_which(sub) -> None:
    hit_with(sub, HitState.POSTED)  # 0.75 committed
    SubmissionBudget.objects.create(submission=sub, cap_usd=Decimal("1.00"))
    with transaction.atomic(), pytest.raises(budget.BudgetExceeded) as err:
        budget.check_and_lock(Decimal("0.50"), sub, "a $0.50 bonus")
    assert "$0.25 of this submission's budget ($1.00)" in str(err.value)
    BudgetSettings.objects.update(cap_usd=Decimal("1.00"))
    with transaction.atomic(), pytest.raises(budget.BudgetExceeded) as err:
        budget.check_and_lock(Decimal("0.50"), None, "a $0.50 bonus")
    assert "of the global budget ($1.00)" in str(err.value)
