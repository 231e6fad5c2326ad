"""Reconciliation with MTurk (run by Celery beat, and from the admin's "sync now").

For every posted MTurk HIT: every assignment MTurk holds that we do not (the worker's
POST to our server was lost, the page crashed, the worker used externalSubmit only) is
fed through the one intake path, `intake.submit_assignment(source="sync")`, with the
answers parsed from the ExternalQuestion answer XML (the task page submits a hidden
field `answers` holding the same JSON our intake takes). Extra assignments a tie asked
for are created if MTurk lacks them; HITs whose questions still need answers are
extended when they expire; HITs whose questions are all labelled are expired and, once
no assignment is in progress on MTurk, completed. Approvals and rejections made on
MTurk's side (auto-approval) are copied. Everything here is idempotent.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from django.utils import timezone

from . import backends, mturk
from .intake import IntakeError, parse_answers, submit_assignment, worker_for
from .models import Assignment, AssignmentState, Backend, Hit, HitState, QuestionState

logger = logging.getLogger(__name__)
ANSWER_FIELD = "answers"


@dataclass
class SyncResult:
    hits: int = 0
    reconciled: int = 0
    extended: int = 0
    settled: int = 0
    status_copied: int = 0
    errors: list[str] = field(default_factory=list)


def answers_from_record(record: mturk.AssignmentRecord) -> list:
    """The intake answers inside an MTurk assignment's answer XML."""
    values = record.answers.get(ANSWER_FIELD) or []
    if not values:
        raise IntakeError(f"the MTurk answer has no '{ANSWER_FIELD}' field", ANSWER_FIELD)
    try:
        payload = json.loads(values[0])
    except ValueError as exc:
        raise IntakeError(f"the '{ANSWER_FIELD}' field is not JSON: {exc}",
                          ANSWER_FIELD) from exc
    return parse_answers(payload)


def collect(hit: Hit, result: SyncResult | None = None) -> SyncResult:
    """Store every answer MTurk has for this HIT that we lack; copy MTurk's verdicts."""
    result = result or SyncResult()
    records = mturk.list_all_assignments(backends.client(), hit.external_id)
    known = dict(Assignment.objects.filter(hit=hit).values_list("external_id", "state"))
    for record in records:
        if record.assignment_id not in known:
            try:
                submit_assignment(hit=hit, worker=worker_for(Backend.MTURK, record.worker_id),
                                  assignment_id=record.assignment_id,
                                  answers=answers_from_record(record), source="sync")
                result.reconciled += 1
                known[record.assignment_id] = AssignmentState.SUBMITTED
            except IntakeError as exc:
                # Kept for the operator; the assignment stays on MTurk for review.
                message = f"HIT {hit.pk}: MTurk assignment {record.assignment_id}: {exc.message}"
                result.errors.append(message)
                logger.warning(message)
                continue
        ours = known[record.assignment_id]
        if ours == AssignmentState.SUBMITTED and record.status in ("Approved", "Rejected"):
            # Auto-approval (or an approval made on MTurk's site) already moved the money.
            approved = record.status == "Approved"
            Assignment.objects.filter(external_id=record.assignment_id,
                                      state=AssignmentState.SUBMITTED).update(
                state=AssignmentState.APPROVED if approved else AssignmentState.REJECTED,
                reviewed_at=timezone.now(), paid=hit.reward if approved else 0)
            result.status_copied += 1
    return result


def settle_mturk_hit(hit: Hit) -> bool:
    """Expire a fully labelled HIT and collect its last answers; True once it can be
    completed (MTurk has no assignment in progress)."""
    client = backends.client()
    remote = mturk.get_hit(client, hit.external_id)
    if remote["HITStatus"] in ("Assignable", "Unassignable") and \
            remote.get("NumberOfAssignmentsAvailable", 0) > 0:
        mturk.expire_hit(client, hit.external_id)
        remote = mturk.get_hit(client, hit.external_id)
    collect(hit)
    return int(remote.get("NumberOfAssignmentsPending", 0)) == 0


def sync_hit(hit: Hit, result: SyncResult | None = None) -> SyncResult:
    """Reconcile one posted MTurk HIT with MTurk."""
    from .pipeline import settle_hits

    result = result or SyncResult()
    result.hits += 1
    collect(hit, result)
    hit.refresh_from_db()
    if hit.state != HitState.POSTED:
        return result
    open_questions = hit.items.filter(question__state=QuestionState.OPEN).exists()
    if open_questions:
        backends.ensure_assignments(hit)
        remote = mturk.get_hit(backends.client(), hit.external_id)
        if remote["Expiration"] <= timezone.now():
            # Questions still need answers: keep the HIT on the market.
            backends.extend(hit)
            result.extended += 1
    else:
        result.settled += len(settle_hits([hit.pk]))
    Hit.objects.filter(pk=hit.pk).update(last_synced_at=timezone.now())
    return result


def sync_all(hit_ids: list[int] | None = None) -> SyncResult:
    """Reconcile every posted MTurk HIT (or these); errors are collected, not raised."""
    result = SyncResult()
    qs = Hit.objects.filter(backend=Backend.MTURK, state=HitState.POSTED,
                            external_id__isnull=False).order_by("last_synced_at", "pk")
    if hit_ids is not None:
        qs = qs.filter(pk__in=hit_ids)
    for hit in qs:
        try:
            sync_hit(hit, result)
        except mturk.MTurkError as exc:
            result.errors.append(f"HIT {hit.pk}: {exc}")
            logger.warning("sync of HIT %s failed: %s", hit.pk, exc)
    return result
