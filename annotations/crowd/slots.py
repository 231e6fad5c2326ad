"""Keeping enough MTurk slots on a HIT for the answers its open questions still need.

A slot is used up by every assignment MTurk accepts, also by work we refused. MTurk
itself puts returned and abandoned assignments back on the market while the HIT is
alive; everything else is ours to replace. `replenish` compares what the open
questions still need with what can still arrive (slots available, assignments in
progress, submitted work not yet stored) and raises the HIT's MaxAssignments by the
difference (budget first; `backends.ensure_assignments` then calls
CreateAdditionalAssignmentsForHIT once per target count). MTurk will not take a HIT
from under 10 assignments to 10 or more, so such a HIT is retired and its open
questions are posted again in a new HIT (`repost`).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotations.models import Backend, Hit, HitState, Question, QuestionState, TaskKind
from kbpo.core import jobs

from . import backends, budget, mturk, posting

logger = logging.getLogger(__name__)
REVIEW_TASK = "annotations.review_hit"  # crowd/tasks.py (review imports this module)
MTURK_SMALL_HIT_LIMIT = 10  # MTurk: under 10 assignments cannot be raised to 10 or more


def still_needed(hit: Hit) -> int:
    """The most answers any open question of the HIT still lacks."""
    rows = (Question.objects.filter(hit_items__hit=hit, state=QuestionState.OPEN)
            .annotate(n=Count("responses", filter=Q(responses__counted=True)))
            .values_list("answers_needed", "n"))
    return max((need - n for need, n in rows), default=0)


def replenish(hit: Hit) -> int:
    """Slots added (or re-posted) so the open questions can get their answers."""
    if hit.backend != Backend.MTURK or hit.state != HitState.POSTED or not hit.external_id:
        return 0
    if still_needed(hit) <= 0:
        return 0
    with transaction.atomic():
        # Under the HIT's row lock, so two syncs never both add the same slots.
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        needed = still_needed(locked)
        remote = mturk.get_hit(backends.client(), locked.external_id)
        if needed <= 0 or remote["Expiration"] <= timezone.now():
            return 0  # nothing owed, or expired: the sync extends an expired HIT first
        remote_max = int(remote["MaxAssignments"])
        available = int(remote.get("NumberOfAssignmentsAvailable", 0))
        pending = int(remote.get("NumberOfAssignmentsPending", 0))
        stored = locked.assignments.count()
        unseen = max(0, remote_max - available - pending - stored)  # submitted, not stored
        owed = max(0, locked.max_assignments - remote_max)  # ours, not yet on MTurk
        deficit = needed - (available + pending + unseen + owed)
        if deficit <= 0:
            return 0
        target = max(locked.max_assignments, remote_max) + deficit
        if remote_max < MTURK_SMALL_HIT_LIMIT <= target:
            if locked.kind == TaskKind.RELATION and locked.submission is not None:
                transaction.on_commit(lambda: repost(hit))
            else:  # document tasks are planned by the exhaustive workflow: an operator
                locked.post_error = (
                    f"Needs {deficit} more assignment(s), but MTurk cannot grow a HIT "
                    "under 10 assignments to 10 or more: expire it and re-plan.")
                locked.save(update_fields=["post_error"])
            return 0
        new_cost = budget.hit_cost(locked.backend, locked.reward, target)
        budget.check_and_lock(new_cost - locked.cost_estimate, locked.submission,
                              f"{deficit} replacement answer(s) on HIT {locked.pk}")
        locked.max_assignments = target
        locked.cost_estimate = new_cost
        locked.save(update_fields=["max_assignments", "cost_estimate"])
    logger.info("HIT %s: %s slot(s) replaced (MaxAssignments %s)", hit.pk, deficit, target)
    backends.ensure_assignments(locked)
    return deficit


def repost(hit: Hit) -> Hit | None:
    """Retire a HIT that cannot grow on MTurk and post its open questions anew."""
    with transaction.atomic():
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        if locked.state != HitState.POSTED:
            return None
        backends.expire(locked)
        locked.state = HitState.EXPIRED
        locked.post_error = ("Retired: its open questions needed more answers than MTurk "
                             "lets a HIT under 10 assignments grow to; they were posted "
                             "again in a new HIT.")
        locked.save(update_fields=["state", "post_error"])
        if locked.submission is None:
            return None
        posting.regroup(locked.submission)
    jobs.enqueue(REVIEW_TASK, locked.pk)  # its confirmed work still gets its verdicts
    posted, held = posting.post_pending(locked.submission)
    logger.info("HIT %s retired; %s new HIT(s) posted, held: %s", hit.pk, posted, held)
    return (Hit.objects.filter(submission=locked.submission, state=HitState.POSTED)
            .order_by("-pk").first())


def repost_unkeyed(dry_run: bool = False) -> tuple[list[int], list[int]]:
    """Posted MTurk HITs whose ExternalQuestion does not point at their `url_key` (HITs
    posted before task pages were keyed: their old /annotate/hit/<id>/ answers 404)
    are retired and their open questions posted again under keyed URLs.

    Returns (HITs re-posted, HITs left alone because they have no submission to
    re-plan: an operator expires those and re-plans their work).
    """
    reposted: list[int] = []
    skipped: list[int] = []
    client = backends.client()
    for hit in Hit.objects.filter(backend=Backend.MTURK, state=HitState.POSTED,
                                  external_id__isnull=False).order_by("pk"):
        question = mturk.get_hit(client, hit.external_id).get("Question", "")
        if f"/annotate/hit/{hit.url_key}/" in question:
            continue
        if hit.submission_id is None:
            skipped.append(hit.pk)
            continue
        if not dry_run:
            repost(hit)
        reposted.append(hit.pk)
    return reposted, skipped
