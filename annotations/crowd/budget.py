"""Money: what crowd work has cost, what it may still cost, and the caps that bound it.

Three figures, per submission or for the whole service:

* **spent** — paid out: approved assignments (reward plus MTurk's fee on MTurk) and
  paid bonuses;
* **committed** — spent plus everything that may still be paid: every slot of a
  posted HIT (or one reserved for posting) at its full price, every submitted
  assignment of a finished HIT, and unpaid bonuses. Rejected assignments and the
  unused slots of finished HITs are released;
* **cap** — the submission's own `SubmissionBudget`, else the default in
  `BudgetSettings`, or the global cap.

Nothing is posted, extended or paid as a bonus unless `committed + cost <= cap` holds
for both the global and the submission's cap, checked under a lock on the single
`BudgetSettings` row so that two workers cannot both take the last dollars.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Count, Q

from annotations.models import (
    AssignmentState,
    Backend,
    Bonus,
    BudgetSettings,
    Hit,
    HitState,
    SubmissionBudget,
)

from . import mturk

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
LIVE_STATES = (HitState.POSTED,)
FINISHED_STATES = (HitState.COMPLETE, HitState.EXPIRED, HitState.CANCELLED)


class BudgetExceeded(Exception):
    """Posting or paying would pass a cap; the message says which and by how much."""


@dataclass(frozen=True)
class Spend:
    spent: Decimal
    committed: Decimal
    cap: Decimal

    @property
    def remaining(self) -> Decimal:
        """What may still be committed before the cap is reached (never negative)."""
        return max(ZERO, self.cap - self.committed)

    def __iter__(self):  # (spent, committed, cap) unpacking
        return iter((self.spent, self.committed, self.cap))


def unit_cost(backend: str, reward: Decimal, max_assignments: int) -> Decimal:
    """What one assignment costs: the reward, plus MTurk's commission on MTurk."""
    reward = Decimal(reward).quantize(CENT)
    if backend == Backend.MTURK:
        return reward + mturk.DEFAULT_FEES.assignment_fee(reward, max_assignments)
    return reward


def hit_cost(backend: str, reward: Decimal, assignments: int) -> Decimal:
    """The most a HIT can cost (all its assignments approved)."""
    if backend == Backend.MTURK:
        return mturk.hit_cost(Decimal(reward), assignments)
    return unit_cost(backend, reward, assignments) * assignments


def bonus_cost(backend: str, amount: Decimal) -> Decimal:
    if backend == Backend.MTURK:
        return mturk.bonus_cost(Decimal(amount))
    return Decimal(amount).quantize(CENT)


def cap_for(submission: object | None) -> Decimal:
    settings_row = BudgetSettings.current()
    if submission is None:
        return settings_row.cap_usd
    own = SubmissionBudget.objects.filter(submission=submission).first()
    return own.cap_usd if own is not None else settings_row.per_submission_default_usd


def spend(submission: object | None = None) -> Spend:
    """(spent, committed, cap) in dollars for one submission, or for everything."""
    hits = Hit.objects.all()
    bonuses = Bonus.objects.all()
    if submission is not None:
        hits = hits.filter(submission=submission)
        bonuses = bonuses.filter(assignment__hit__submission=submission)
    rows = hits.filter(Q(state__in=(*LIVE_STATES, *FINISHED_STATES))
                       | Q(state=HitState.PENDING, request_token__isnull=False)).annotate(
        n_live=Count("assignments", filter=~Q(assignments__state=AssignmentState.REJECTED)),
        n_rejected=Count("assignments", filter=Q(assignments__state=AssignmentState.REJECTED)),
        n_approved=Count("assignments", filter=Q(assignments__state=AssignmentState.APPROVED)),
    ).values_list("backend", "reward", "max_assignments", "cost_estimate", "state", "n_live",
                  "n_rejected", "n_approved")
    spent = committed = ZERO
    for (backend, reward, max_assignments, estimate, state, n_live, n_rejected,
         n_approved) in rows:
        unit = unit_cost(backend, reward, max_assignments)
        spent += unit * n_approved
        if state in FINISHED_STATES:
            committed += unit * n_live
        else:
            # A slot used by rejected work is never paid; the slot replacing it is in the
            # estimate. Left in, every garbage submission would hold one more slot's
            # price until the HIT ends, and a few cheaters could exhaust a budget.
            committed += max(estimate - unit * n_rejected, unit * n_live)
    for backend, amount, paid_at in bonuses.values_list("assignment__hit__backend", "amount",
                                                        "paid_at"):
        cost = bonus_cost(backend, amount)
        committed += cost
        if paid_at is not None:
            spent += cost
    return Spend(spent.quantize(CENT, ROUND_HALF_UP), committed.quantize(CENT, ROUND_HALF_UP),
                 cap_for(submission))


def check_and_lock(cost: Decimal, submission: object | None, what: str) -> None:
    """Raise BudgetExceeded unless `cost` fits under every cap; call inside a transaction.

    Locks the global budget row until the transaction ends, so concurrent reservations
    are serialised and each sees the others' commitments.
    """
    BudgetSettings.current()  # the row exists before it is locked
    BudgetSettings.objects.select_for_update().get(pk=1)
    total = spend(None)
    if total.committed + cost > total.cap:
        raise BudgetExceeded(
            f"{what} would cost ${cost} but only ${total.remaining} of the global budget "
            f"(${total.cap}) is left; an operator can raise it under Budget settings in the "
            "admin.")
    if submission is not None:
        own = spend(submission)
        if own.committed + cost > own.cap:
            raise BudgetExceeded(
                f"{what} would cost ${cost} but only ${own.remaining} of this submission's "
                f"budget (${own.cap}) is left; an operator can raise it with a submission "
                "budget in the admin.")
