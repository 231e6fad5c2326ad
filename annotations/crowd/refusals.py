"""Work MTurk holds that we cannot count, brought to a final state at once.

When MTurk confirms an assignment whose answers the intake refuses, the assignment is
stored without responses (nothing of it reaches labels, worker quality or review) and
given a verdict right away, so MTurk never auto-approves it later:

* the worker's fault — malformed answers, a label the page never offered — is
  **rejected** with a reason that says what was wrong and what to do;
* our fault — the HIT had closed, the worker had already answered one of its
  questions in another HIT, or was blocked after accepting it — is **paid** and not
  counted;
* our policy — submitted sooner after accepting than `KBPO_MIN_SECONDS_PER_QUESTION`
  per question (MTurk's own times; the preview shows the questions, so an honest worker
  may be quick) — is **paid** and not counted too, and the worker is blocked at the
  `KBPO_TOO_FAST_LIMIT`-th such assignment (`workers.block_too_fast`).

Its slot is then replaced (`slots.replenish`) while the HIT's questions need answers.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction

from annotations.interfaces.intake import TOO_FAST, IntakeError
from annotations.models import (
    Assignment,
    AssignmentState,
    CrowdWorker,
    Hit,
    Refusal,
)

from . import backends, mturk, workers
from .verdicts import approve_assignment, reject_assignment

logger = logging.getLogger(__name__)

_OURS = {
    "closed": "Thank you. Other workers had already completed this task when your answer "
              "arrived, so it was not needed; you are paid all the same.",
    "repeat": "Thank you. You had already answered one of these questions in another of our "
              "tasks, so this answer was not used; you are paid all the same.",
    "blocked": "Thank you for your work. We no longer use answers from your account on "
               "these tasks, so please do not accept more of them.",
    TOO_FAST: "Thank you. This task was submitted sooner after you accepted it than we "
                "can use answers for, so this answer was not used; you are paid all the "
                "same. Please take a little time over each question of our tasks.",
}


def verdict_for(error: IntakeError) -> tuple[str, str]:
    """(refusal kind, the reason the worker reads) for work the intake refused."""
    if error.code in _OURS:
        return Refusal.PAY, _OURS[error.code]
    return Refusal.REJECT, (
        f"Your submission could not be used: {error.message}. Answers must come from "
        "the task page's own Submit button, with one of the offered choices for every "
        "question; please use the page as shown next time.")[:1000]


def record(hit: Hit, worker: CrowdWorker, assignment_id: str, error: IntakeError,
           source: str) -> Assignment | None:
    """Store a refused assignment (no responses) and give it its verdict now."""
    kind, reason = verdict_for(error)
    try:
        with transaction.atomic():
            a, _ = Assignment.objects.get_or_create(
                external_id=assignment_id, defaults={
                    "hit": hit, "worker": worker, "source": source,
                    "state": AssignmentState.SUBMITTED, "refusal": kind,
                    "refusal_reason": reason, "refusal_code": error.code[:16]})
    except IntegrityError:
        # The same worker twice on one MTurk HIT: MTurk does not allow it, so this is
        # an inconsistency for the operator, not something to pay or reject blindly.
        logger.error("HIT %s: MTurk assignment %s of %s cannot be stored next to the "
                     "worker's other assignment", hit.pk, assignment_id, worker)
        return None
    logger.warning("HIT %s: refused MTurk assignment %s (%s): %s", hit.pk, assignment_id,
                   kind, error.message)
    try:
        finish_refusal(a)
    except mturk.MTurkError as exc:  # the sync and the re-drive retry it
        logger.warning("HIT %s: verdict on refused assignment %s not given yet: %s",
                       hit.pk, assignment_id, exc)
    if error.code == TOO_FAST:
        try:
            workers.block_too_fast(worker)
        except mturk.MTurkError as exc:  # the quality pass's sweep retries it
            logger.warning("worker %s: block for too-fast work not done yet: %s", worker, exc)
    return a


def finish_refusal(a: Assignment) -> tuple[int, int]:
    """Reject or pay a refused assignment once; (approved, rejected) now."""
    if a.state != AssignmentState.SUBMITTED or not a.refusal:
        return 0, 0
    try:
        if a.refusal == Refusal.PAY:
            return int(approve_assignment(a, a.refusal_reason)), 0
        return 0, int(reject_assignment(a, a.refusal_reason))
    except mturk.MTurkError:
        # MTurk may have decided already (auto-approval): its verdict stands.
        status = mturk.get_assignment(backends.client(), a.external_id)["AssignmentStatus"]
        if status not in ("Approved", "Rejected"):
            raise
        approved = status == "Approved"
        Assignment.objects.filter(pk=a.pk, state=AssignmentState.SUBMITTED).update(
            state=AssignmentState.APPROVED if approved else AssignmentState.REJECTED,
            paid=a.hit.reward if approved else 0)
        return int(approved), int(not approved)


def finish_refusals(hit: Hit) -> list[str]:
    """Give every refused assignment of the HIT still waiting its verdict; the MTurk
    failures (each is retried by the next sync or re-drive)."""
    errors = []
    for a in hit.assignments.filter(state=AssignmentState.SUBMITTED).exclude(
            refusal=Refusal.NONE).select_related("hit"):
        try:
            finish_refusal(a)
        except mturk.MTurkError as exc:
            errors.append(f"HIT {hit.pk}: verdict on refused assignment {a.external_id} "
                          f"not given yet: {exc}")
            logger.warning(errors[-1])
    return errors
