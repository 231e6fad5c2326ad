"""Approving (paying) and rejecting one assignment, once, here and on MTurk.

Both hold the assignment's row lock around the MTurk call and are idempotent on
MTurk's side (an assignment already approved or rejected there is recognised), so a
retried task never pays twice. A rejected assignment's answers stop counting
(`discount`). Used by the review of complete HITs and by the prompt
handling of refused work (`refusals`).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotations.models import Assignment, AssignmentState, Backend

from . import backends, mturk
from .discount import discount


def approve_assignment(assignment: Assignment, feedback: str = "") -> bool:
    """Approve and pay once. True if approved now (MTurk or on-site)."""
    with transaction.atomic():
        a = (Assignment.objects.select_for_update(of=("self",)).select_related("hit", "worker")
             .get(pk=assignment.pk))
        if a.state != AssignmentState.SUBMITTED:
            return False
        if a.hit.backend == Backend.MTURK:
            # Idempotent on MTurk's side: an approved assignment is reported, not re-paid.
            mturk.approve(backends.client(), a.external_id, feedback or None)
        a.state = AssignmentState.APPROVED
        a.reviewed_at = timezone.now()
        a.paid = a.hit.reward
        a.feedback = feedback[:1000]
        a.save(update_fields=["state", "reviewed_at", "paid", "feedback"])
    return True


def reject_assignment(assignment: Assignment, reason: str) -> bool:
    """Reject with a reason the worker reads. True if rejected now."""
    if not reason or not reason.strip():
        raise ValueError("a rejection needs a reason the worker can read")
    with transaction.atomic():
        a = (Assignment.objects.select_for_update(of=("self",)).select_related("hit")
             .get(pk=assignment.pk))
        if a.state != AssignmentState.SUBMITTED:
            return False
        if a.hit.backend == Backend.MTURK:
            mturk.reject(backends.client(), a.external_id, reason)
        a.state = AssignmentState.REJECTED
        a.reviewed_at = timezone.now()
        a.feedback = reason.strip()[:1000]
        a.save(update_fields=["state", "reviewed_at", "feedback"])
        discount(a.pk)  # its answers stop counting; its labels are recounted after commit
    return True
