"""Finished HITs and money: a HIT whose questions are all labelled is complete; its
assignments are approved (MTurk `ApproveAssignment`; on-site backends record the
payment), except clear spam, which is rejected with a reason. Bonuses: the `Bonus`
row and its token exist before the money moves, so paying twice is impossible."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotations.models import (
    Assignment,
    AssignmentState,
    Backend,
    Bonus,
    Hit,
    HitState,
    PairLabel,
    QuestionState,
)
from kbpo.core import jobs

from . import backends, budget, mturk
from .refusals import finish_refusal
from .sync import settle_mturk_hit
from .verdicts import approve_assignment, reject_assignment

__all__ = [
    "approve_assignment",
    "grant_bonus",
    "pay_bonus",
    "reject_assignment",
    "review_hit",
    "settle_hits",
    "spam_reason",
]

logger = logging.getLogger(__name__)
REVIEW_TASK = "annotations.review_hit"  # crowd/tasks.py


def settle_hits(hit_ids: Iterable[int]) -> list[int]:
    """Complete the HITs whose questions are all labelled, then review their work.

    An MTurk HIT is expired first (no new worker takes it) and completed only once
    MTurk has no assignment in progress; the periodic sync collects late answers and
    settles it then, so an answer MTurk saw is never left behind.
    """
    completed = []
    for hit in Hit.objects.filter(pk__in=list(hit_ids), state=HitState.POSTED):
        if hit.items.filter(question__state=QuestionState.OPEN).exists():
            continue
        if hit.backend == Backend.MTURK:
            try:
                if not settle_mturk_hit(hit):
                    continue
            except mturk.MTurkError:
                logger.exception("HIT %s: could not settle on MTurk yet", hit.pk)
                continue
        with transaction.atomic():
            n = Hit.objects.filter(pk=hit.pk, state=HitState.POSTED).update(
                state=HitState.COMPLETE)
        if n:
            completed.append(hit.pk)
            transaction.on_commit(lambda h=hit.pk: enqueue_review(h))
    return completed


def enqueue_review(hit_id: int) -> None:
    """Queue the approval and payment of a complete HIT's assignments."""
    jobs.send(REVIEW_TASK, hit_id)


def spam_reason(assignment: Assignment) -> str | None:
    """Why an assignment is clear spam, or None.

    Only evidence with a known answer rejects work: the assignment must hold at least
    KBPO_REJECT_MIN_CONTROLS control questions and miss every one of them, and (in a
    HIT of at least KBPO_REJECT_MIN_QUESTIONS questions) contradict the label of every
    other question too. Disagreeing with peers alone never rejects: two workers who
    agree on a wrong answer could otherwise get an honest third unpaid; the worker
    models weigh such disagreement instead. The reason names the controls missed, so
    the worker can see the evidence.
    """
    minimum = settings.KBPO_REJECT_MIN_QUESTIONS
    if minimum <= 0:
        return None
    responses = list(assignment.responses.select_related("question__pair__document"))
    if len(responses) < minimum:
        return None
    controls = [r for r in responses if r.question.control_answer is not None]
    if not controls or len(controls) < settings.KBPO_REJECT_MIN_CONTROLS:
        return None
    if any(sorted(r.choices) == sorted(r.question.control_answer) for r in controls):
        return None
    others = [r for r in responses if r.question.control_answer is None]
    labels = dict(PairLabel.objects.filter(
        question_id__in=[r.question_id for r in others]).values_list("question_id",
                                                                    "predicates"))
    if len(labels) < len(others):
        return None  # some questions were labelled through another question: be lenient
    if any(sorted(r.choices) == sorted(labels[r.question_id]) for r in others):
        return None
    order = {qid: n for n, qid in enumerate(
        assignment.hit.items.order_by("position", "pk").values_list("question_id", flat=True))}
    missed = "; ".join(_control_evidence(r, order.get(r.question_id)) for r in controls)
    return (f"This task held {len(controls)} question(s) whose answer we already knew, and "
            f"every one was answered wrongly: {missed}. No other answer matched the "
            "sentence either; this looks like random clicking. Please read each sentence "
            "before choosing.")[:1000]


def _control_evidence(response: object, position: int | None) -> str:
    """'question 2 (“Ada” and “Paris”): the sentence states per:city_of_birth; you
    answered no_relation', for the rejection the worker reads."""
    q = response.question  # type: ignore[attr-defined]
    where = f"question {position + 1}" if position is not None else "a question"
    pair = q.pair
    if pair is not None:
        text = pair.document.text
        where += (f" (“{text[pair.subject_begin:pair.subject_end][:60]}” and "
                  f"“{text[pair.object_begin:pair.object_end][:60]}”)")
    return (f"{where}: the known answer is {', '.join(q.control_answer)}; you answered "
            f"{', '.join(response.choices)}")  # type: ignore[attr-defined]


def review_hit(hit_id: int) -> tuple[int, int]:
    """Approve (or reject as spam) the submitted assignments of a finished HIT.

    Refused work (no counted answers) gets its own verdict: rejected with its reason,
    or paid when the fault was ours.
    """
    approved = rejected = 0
    hit = Hit.objects.get(pk=hit_id)
    if hit.state not in (HitState.COMPLETE, HitState.EXPIRED):
        return 0, 0
    for a in hit.assignments.filter(state=AssignmentState.SUBMITTED).order_by("pk"):
        if a.refusal:
            ok, bad = finish_refusal(a)
            approved, rejected = approved + ok, rejected + bad
            continue
        reason = spam_reason(a)
        if reason:
            rejected += reject_assignment(a, reason)
        else:
            approved += approve_assignment(a, "Thank you.")
    return approved, rejected


def grant_bonus(assignment: Assignment, amount: Decimal, reason: str) -> Bonus:
    """Record a bonus (row and token first, budget checked), then pay it."""
    if not reason or not reason.strip():
        raise ValueError("a bonus needs a reason; the worker sees it")
    amount = Decimal(mturk.format_amount(amount))
    if amount <= 0:
        raise ValueError("a bonus must be positive")
    with transaction.atomic():
        a = Assignment.objects.select_for_update(of=("self",)).select_related("hit").get(
            pk=assignment.pk)
        _check_bonusable(a)
        budget.check_and_lock(budget.bonus_cost(a.hit.backend, amount), a.hit.submission,
                              f"a ${amount} bonus")
        bonus = Bonus.objects.create(assignment=a, amount=amount, reason=reason.strip(),
                                     token=f"new-{a.pk}-{timezone.now().timestamp()}")
        bonus.token = mturk.unique_request_token("bonus", bonus.pk,
                                                 settings.KBPO_MTURK_TOKEN_NAMESPACE)
        bonus.save(update_fields=["token"])
    pay_bonus(bonus.pk)
    bonus.refresh_from_db()
    return bonus


def pay_bonus(bonus_id: int) -> bool:
    """Pay a recorded bonus once; True if paid now. Safe to retry after any crash."""
    with transaction.atomic():
        bonus = (Bonus.objects.select_for_update(of=("self",))
                 .select_related("assignment__hit", "assignment__worker").get(pk=bonus_id))
        if bonus.paid_at is not None:
            return False
        a = bonus.assignment
        _check_bonusable(a)  # it may have been rejected since the bonus was granted
        if a.hit.backend == Backend.MTURK:
            mturk.send_bonus(backends.client(), a.worker.external_id, a.external_id,
                             bonus.amount, bonus.reason, bonus.token)
        bonus.paid_at = timezone.now()
        bonus.save(update_fields=["paid_at"])
    return True




def _check_bonusable(a: Assignment) -> None:
    """Bonuses go to approved work only: never to rejected, refused or unreviewed work."""
    if a.state != AssignmentState.APPROVED or a.refusal:
        raise ValueError(f"assignment {a.external_id} is {a.get_state_display()}"
                         f"{' (refused)' if a.refusal else ''}: bonuses are paid on approved "
                         "work only")
