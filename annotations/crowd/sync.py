"""MTurk is the source of truth for MTurk work (run by Celery beat, by the check that
follows a task page's post, and from the admin's "sync now").

An MTurk assignment counts only once MTurk confirms it: same AssignmentId, HITId and
WorkerId, status Submitted or later. Its answers are read from MTurk's own copy (the
Answer XML, where the task page's externalSubmit put a hidden field `answers` holding
the same JSON our intake takes) and go through the one intake path,
`intake.submit_assignment`. The task page's direct post (`PagePost`) is only a fast
path: it is promoted when MTurk confirms it, marked forged when MTurk gives that
assignment to another worker or HIT, and expires otherwise. If the page's answers and
MTurk's differ, MTurk's are used.

Work MTurk holds that the intake refuses gets its verdict at once (`refusals`), and
its slot is replaced (`slots`); so does work submitted sooner after MTurk's AcceptTime
than `KBPO_MIN_SECONDS_PER_QUESTION` per question allows. Everything here is idempotent.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotations.interfaces.intake import (
    AnswerIn,
    IntakeError,
    from_page,
    parse_answers,
    submit_assignment,
    worker_for,
)
from annotations.models import (
    Assignment,
    AssignmentState,
    Backend,
    Hit,
    PagePost,
    PagePostState,
)

from . import backends, budget, mturk, refusals, slots
from .discount import discount

logger = logging.getLogger(__name__)
ANSWER_FIELD = "answers"
CONFIRM_TASK = "annotations.confirm_page_post"  # crowd/tasks.py
CONFIRM_HIT_TASK = "annotations.confirm_hit_posts"  # crowd/tasks.py
CONFIRMED_STATUSES = ("Submitted", "Approved", "Rejected")


@dataclass
class SyncResult:
    hits: int = 0
    reconciled: int = 0
    refused: int = 0
    replaced: int = 0
    extended: int = 0
    settled: int = 0
    status_copied: int = 0
    posts_confirmed: int = 0
    posts_forged: int = 0
    posts_expired: int = 0
    errors: list[str] = field(default_factory=list)


def answers_from_record(record: mturk.AssignmentRecord) -> list[AnswerIn]:
    """The intake answers inside an MTurk assignment's answer XML."""
    if record.answer_error:
        raise IntakeError(f"MTurk's copy of the answer could not be read "
                          f"({record.answer_error})", ANSWER_FIELD)
    values = record.answers.get(ANSWER_FIELD) or []
    if not values:
        raise IntakeError(f"the MTurk answer has no '{ANSWER_FIELD}' field", ANSWER_FIELD)
    try:
        payload = json.loads(values[0])
    except (ValueError, RecursionError) as exc:  # a worker's own externalSubmit: anything
        raise IntakeError(f"the '{ANSWER_FIELD}' field is not JSON: {exc}",
                          ANSWER_FIELD) from exc
    return parse_answers(payload)


def _key(answers: list[AnswerIn]) -> dict[int, tuple]:
    return {a.question_id: (a.choices, json.dumps(a.extra, sort_keys=True)) for a in answers}


def _resolve_posts(hit: Hit, record: mturk.AssignmentRecord, assignment: Assignment | None,
                   answers: list[AnswerIn] | None, result: SyncResult) -> None:
    """Settle the page posts claiming this assignment: MTurk says whose it is."""
    now = timezone.now()
    for post in PagePost.objects.filter(assignment_external_id=record.assignment_id,
                                        state=PagePostState.WAITING):
        if post.hit_id == hit.pk and post.worker_external_id == record.worker_id:
            note = ""
            if answers is not None:
                try:
                    if _key(parse_answers(post.payload)) != _key(answers):
                        note = "MTurk's copy of the answers differs from the page's post; " \
                               "MTurk's copy was used."
                except IntakeError:
                    note = "the page's post was unreadable; MTurk's copy was used."
            elif assignment is not None and assignment.refusal:
                note = f"refused: {assignment.refusal_reason}"[:500]
            post.state, post.assignment, post.note = PagePostState.CONFIRMED, assignment, note
            result.posts_confirmed += 1
        else:
            post.state = PagePostState.FORGED
            post.note = ("MTurk gives this assignment to another worker or HIT; the post "
                         "was never counted.")
            result.posts_forged += 1
        post.resolved_at = now
        post.save(update_fields=["state", "assignment", "note", "resolved_at"])


def accept_record(hit: Hit, record: mturk.AssignmentRecord, result: SyncResult | None = None,
                  source: str = "sync") -> Assignment | None:
    """Store (or refuse) one assignment MTurk confirmed for this HIT; copy MTurk's verdict."""
    result = result or SyncResult()
    if record.hit_id != hit.external_id or record.status not in CONFIRMED_STATUSES:
        return None
    assignment = Assignment.objects.filter(external_id=record.assignment_id).first()
    answers: list[AnswerIn] | None = None
    if assignment is None:
        worker = worker_for(Backend.MTURK, record.worker_id)
        try:
            answers = from_page(hit, answers_from_record(record))
            # MTurk's AcceptTime and SubmitTime: work faster than we count is refused.
            assignment = submit_assignment(hit=hit, worker=worker,
                                           assignment_id=record.assignment_id,
                                           answers=answers, source=source,
                                           work_seconds=record.work_seconds)
            result.reconciled += 1
        except IntakeError as exc:
            answers = None
            if exc.code == "conflict":
                message = (f"HIT {hit.pk}: MTurk assignment {record.assignment_id}: "
                           f"{exc.message}")
                result.errors.append(message)
                logger.error(message)
                return None
            assignment = refusals.record(hit, worker, record.assignment_id, exc, source)
            result.refused += 1
            if assignment is None:
                result.errors.append(f"HIT {hit.pk}: MTurk assignment {record.assignment_id} "
                                     "could not be stored (see the log)")
    _resolve_posts(hit, record, assignment, answers, result)
    if (assignment is not None and assignment.state == AssignmentState.SUBMITTED
            and record.status in ("Approved", "Rejected")):
        # Auto-approval (or a verdict given on MTurk's site) already moved the money.
        approved = record.status == "Approved"
        with transaction.atomic():
            copied = Assignment.objects.filter(
                pk=assignment.pk, state=AssignmentState.SUBMITTED).update(
                state=AssignmentState.APPROVED if approved else AssignmentState.REJECTED,
                reviewed_at=timezone.now(), paid=hit.reward if approved else 0)
            if copied and not approved:
                discount(assignment.pk)  # rejected on MTurk's site: its answers stop counting
        result.status_copied += copied
    return assignment


def collect(hit: Hit, result: SyncResult | None = None, source: str = "sync") -> SyncResult:
    """Store every assignment MTurk holds for this HIT that we lack; copy MTurk's
    verdicts; give refused work its verdict."""
    result = result or SyncResult()
    for record in mturk.list_all_assignments(backends.client(), hit.external_id):
        accept_record(hit, record, result, source=source)
    result.errors += refusals.finish_refusals(hit)
    return result


def confirm_page_post(post_id: int) -> str:
    """Ask MTurk about the assignment a task page posted (GetAssignment); the post's state.

    Before the worker's submission reaches MTurk the assignment is invisible there
    (as is an invented one): the post keeps waiting, and the periodic sync and expiry
    take it from there.
    """
    post = PagePost.objects.select_related("hit").filter(pk=post_id).first()
    if post is None or post.state != PagePostState.WAITING:
        return post.state if post else "gone"
    hit = post.hit
    if hit.backend != Backend.MTURK or not hit.external_id:
        return post.state
    try:
        data = mturk.get_assignment(backends.client(), post.assignment_external_id)
    except mturk.MTurkError as exc:
        if exc.code == "RequestError":  # not (yet) submitted on MTurk, or invented
            return post.state
        raise
    record = mturk.AssignmentRecord.from_api(data)
    result = SyncResult()
    if record.hit_id == hit.external_id:
        accept_record(hit, record, result, source="confirm")
    else:
        other = Hit.objects.filter(backend=Backend.MTURK, external_id=record.hit_id).first()
        if other is not None:
            accept_record(other, record, result, source="confirm")
        PagePost.objects.filter(pk=post.pk, state=PagePostState.WAITING).update(
            state=PagePostState.FORGED, resolved_at=timezone.now(),
            note="MTurk gives this assignment to another HIT; the post was never counted.")
    if result.refused:
        try:
            slots.replenish(Hit.objects.get(pk=hit.pk))  # the refused work's slot, now
        except (mturk.MTurkError, budget.BudgetExceeded) as exc:
            logger.warning("HIT %s: replacement slot not added yet (the sync retries): %s",
                           hit.pk, exc)
    post.refresh_from_db()
    return post.state


def confirm_hit_posts(hit_id: int) -> SyncResult:
    """Settle every waiting page post of one HIT with one ListAssignmentsForHIT.

    What a task page's post queues (`annotations.apps`), at most once per HIT per
    KBPO_MTURK_CONFIRM_DELAY seconds and KBPO_MTURK_CONFIRM_RATE times per
    KBPO_MTURK_CONFIRM_RATE_WINDOW seconds in all:
    anonymous posts, however many, cannot drive MTurk calls one to one. Posts it
    misses wait for the periodic sync, which reads the same list.
    """
    result = SyncResult()
    hit = Hit.objects.filter(pk=hit_id, backend=Backend.MTURK,
                             external_id__isnull=False).first()
    if hit is None or not PagePost.objects.filter(hit=hit,
                                                  state=PagePostState.WAITING).exists():
        return result
    collect(hit, result, source="confirm")
    if result.refused:
        try:
            slots.replenish(Hit.objects.get(pk=hit.pk))  # the refused work's slot, now
        except (mturk.MTurkError, budget.BudgetExceeded) as exc:
            logger.warning("HIT %s: replacement slot not added yet (the sync retries): %s",
                           hit.pk, exc)
    return result


def expire_page_posts(now: dt.datetime | None = None) -> int:
    """Posts MTurk never confirmed within KBPO_PAGE_POST_TTL seconds: expired, and their
    answers dropped at once (anyone may post; only the ids stay, for the operator, until
    `periodic.redrive` deletes the row a day later)."""
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.KBPO_PAGE_POST_TTL)
    return PagePost.objects.filter(state=PagePostState.WAITING, received_at__lt=cutoff).update(
        state=PagePostState.EXPIRED, resolved_at=now, payload={},
        note="MTurk never confirmed this assignment; the post was never counted.")


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
