"""What a HIT or a bonus costs us, MTurk's commission included."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from .client import CENT, format_amount

# --------------------------------------------------------------------------- fees


@dataclass(frozen=True)
class FeeSchedule:
    """MTurk's commission, as published on requester.mturk.com/pricing.

    20% of reward and bonus; HITs with 10 or more assignments pay another 20% on the
    reward (not the bonus); at least $0.01 per assignment and per bonus. Fees are
    rounded half-up to the cent. Configurable because Amazon has changed them before
    (2015) and Masters qualifications add 5%.
    """

    base_rate: Decimal = Decimal("0.20")
    large_hit_extra_rate: Decimal = Decimal("0.20")
    large_hit_threshold: int = 10
    minimum_fee: Decimal = Decimal("0.01")

    def assignment_fee(self, reward: Decimal, assignments: int) -> Decimal:
        rate = self.base_rate
        if assignments >= self.large_hit_threshold:
            rate += self.large_hit_extra_rate
        return self._fee(reward, rate)

    def bonus_fee(self, amount: Decimal) -> Decimal:
        return self._fee(amount, self.base_rate)

    def _fee(self, amount: Decimal, rate: Decimal) -> Decimal:
        fee = (Decimal(amount) * rate).quantize(CENT, rounding=ROUND_HALF_UP)
        return max(fee, self.minimum_fee)


DEFAULT_FEES = FeeSchedule()


def hit_cost(
    reward: Decimal,
    assignments: int,
    fee_rate: Decimal | None = None,
    fees: FeeSchedule = DEFAULT_FEES,
) -> Decimal:
    """What posting one HIT can cost at most: (reward + fee) per assignment.

    ``fee_rate`` overrides the schedule's rate (e.g. Decimal("0.45") with Masters);
    the minimum fee per assignment still applies.
    """
    if assignments < 1:
        raise ValueError("assignments must be >= 1")
    reward = Decimal(format_amount(reward))
    if fee_rate is None:
        fee = fees.assignment_fee(reward, assignments)
    else:
        fee = max((reward * Decimal(fee_rate)).quantize(CENT, ROUND_HALF_UP), fees.minimum_fee)
    return (reward + fee) * assignments


def bonus_cost(amount: Decimal, fees: FeeSchedule = DEFAULT_FEES) -> Decimal:
    """A bonus plus MTurk's fee on it."""
    amount = Decimal(format_amount(amount))
    return amount + fees.bonus_fee(amount)


