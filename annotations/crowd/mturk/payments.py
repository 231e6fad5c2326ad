"""Money: bonuses (never paid twice) and the account balance."""

from __future__ import annotations

from decimal import Decimal

from .client import (
    MAX_TOKEN_LENGTH,
    MTurkClient,
    MTurkError,
    call,
    format_amount,
    looks_like_token_reuse,
    paginate,
)

# --------------------------------------------------------------------------- money


def send_bonus(
    client: MTurkClient,
    worker_id: str,
    assignment_id: str,
    amount: Decimal,
    reason: str,
    token: str,
) -> bool:
    """Pay a bonus once. True if paid now, False if this token was already paid.

    ``token`` comes from ``unique_request_token("bonus", bonus_row_id)``. When MTurk
    refuses the token as already used, the payment is confirmed in
    ListBonusPayments before it counts as done.
    """
    if not reason or not reason.strip():
        raise ValueError("a bonus needs a reason; the worker sees it")
    if not 1 <= len(token) <= MAX_TOKEN_LENGTH:
        raise ValueError("token must be 1..64 characters")
    value = format_amount(amount)
    if Decimal(value) <= 0:
        raise ValueError("a bonus must be positive")
    try:
        call(client, "send_bonus", WorkerId=worker_id, AssignmentId=assignment_id,
              BonusAmount=value, Reason=reason.strip(), UniqueRequestToken=token)
    except MTurkError as err:
        if not looks_like_token_reuse(err, token):
            raise
        if _bonus_exists(client, worker_id, assignment_id, Decimal(value)):
            return False
        raise
    return True


def _bonus_exists(client: MTurkClient, worker_id: str, assignment_id: str,
                  amount: Decimal) -> bool:
    return any(
        bonus.get("WorkerId") == worker_id and Decimal(bonus.get("BonusAmount", "0")) == amount
        for bonus in paginate(client, "list_bonus_payments", "BonusPayments",
                               AssignmentId=assignment_id)
    )


def get_balance(client: MTurkClient) -> Decimal:
    """The prepaid balance available for new HITs and bonuses."""
    return Decimal(call(client, "get_account_balance")["AvailableBalance"])


