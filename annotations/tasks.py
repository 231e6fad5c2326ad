"""Celery tasks of the crowd pipeline; every one is idempotent and acknowledged late.

Triggered by signals (`submission_ingested` → plan, `answers_stored` → aggregate, a
complete HIT → review) and by Celery beat (`CELERY_BEAT_SCHEDULE`: re-drive, MTurk sync,
worker quality).
"""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from submissions.models import State, Submission
from submissions.services import TransitionError, transition

from . import pipeline, planning, sync
from .models import Hit, HitState, Question, QuestionState, TaskKind

logger = logging.getLogger(__name__)


@shared_task(name="annotations.plan_submission", acks_late=True)
def plan_submission_task(submission_id: int) -> str:
    return planning.plan_submission(submission_id).outcome


@shared_task(name="annotations.aggregate", acks_late=True)
def aggregate_task(question_ids: list[int]) -> dict:
    out = pipeline.aggregate(question_ids)
    return {"labelled": len(out.labelled), "extra": len(out.extra_requested),
            "waiting": out.waiting, "scoring": out.scoring}


@shared_task(name="annotations.review_hit", acks_late=True)
def review_hit_task(hit_id: int) -> dict:
    approved, rejected = pipeline.review_hit(hit_id)
    return {"approved": approved, "rejected": rejected}


@shared_task(name="annotations.pay_bonus", acks_late=True)
def pay_bonus_task(bonus_id: int) -> bool:
    return pipeline.pay_bonus(bonus_id)


@shared_task(name="annotations.sync_mturk", acks_late=True)
def sync_mturk_task(hit_ids: list[int] | None = None) -> dict:
    result = sync.sync_all(hit_ids)
    return {"hits": result.hits, "reconciled": result.reconciled,
            "extended": result.extended, "settled": result.settled,
            "errors": result.errors[:20]}


@shared_task(name="annotations.worker_quality", acks_late=True)
def worker_quality_task() -> dict:
    report = pipeline.update_worker_quality()
    return {"answers": report.answers, "workers": report.workers, "flagged": report.flagged}


def enqueue_plan(submission_id: int) -> None:
    """Plan a submission once the current transaction commits."""
    transaction.on_commit(lambda: plan_submission_task.delay(submission_id))


@shared_task(name="annotations.redrive", acks_late=True)
def redrive_task() -> dict:
    """Re-drive crowd work that stopped moving; nothing stays in planning for ever.

    * `ingested` submissions whose planning never started, and `planning` ones whose
      planner died (rows locked by a live planner are skipped), are re-planned; after
      KBPO_SUBMISSION_MAX_ATTEMPTS re-drives a planning submission is marked failed;
    * `annotating` submissions with HITs still pending (budget raised, MTurk back) are
      re-planned, which posts what now fits;
    * questions holding enough answers but never aggregated are aggregated;
    * fully labelled `annotating` submissions move on to scoring.
    """
    cutoff = timezone.now() - dt.timedelta(seconds=settings.KBPO_CROWD_REDRIVE_AFTER)
    replanned = failed = 0
    stuck = Submission.objects.filter(state__in=(State.INGESTED, State.PLANNING),
                                      state_changed_at__lt=cutoff).values_list("pk", flat=True)
    for pk in list(stuck):
        with transaction.atomic():
            sub = (Submission.objects.select_for_update(skip_locked=True)
                   .filter(pk=pk, state__in=(State.INGESTED, State.PLANNING)).first())
            if sub is None:
                continue
            if sub.state == State.PLANNING and \
                    sub.redrives >= settings.KBPO_SUBMISSION_MAX_ATTEMPTS:
                try:
                    transition(sub, State.FAILED,
                               f"Planning gave up after {sub.redrives} automatic re-runs.",
                               error="Planning never finished; check the worker logs, then "
                                     "re-run.")
                    failed += 1
                except TransitionError:
                    pass
                continue
            Submission.objects.filter(pk=pk).update(redrives=F("redrives") + 1)
            enqueue_plan(pk)
            replanned += 1
    pending = (Hit.objects.filter(state=HitState.PENDING, created_at__lt=cutoff,
                                  submission__state=State.ANNOTATING)
               .values_list("submission_id", flat=True).distinct())
    for pk in list(pending):
        enqueue_plan(pk)
        replanned += 1
    # Pending HITs of other work (exhaustive annotation) are posted here too.
    orphans = Hit.objects.filter(state=HitState.PENDING, created_at__lt=cutoff,
                                 submission__isnull=True)
    posted = 0
    if orphans.exists():
        posted, _ = planning.post_pending_hits(orphans)
    ready = list(Question.objects.filter(state=QuestionState.OPEN, kind=TaskKind.RELATION)
                 .annotate(n=Count("responses")).filter(n__gte=F("answers_needed"))
                 .values_list("pk", flat=True)[:5000])
    aggregated = len(pipeline.aggregate(ready).labelled) if ready else 0
    # Complete HITs whose review was lost, and HITs fully labelled but never settled.
    for hit_id in Hit.objects.filter(state=HitState.COMPLETE,
                                     assignments__state="submitted").values_list(
            "pk", flat=True).distinct():
        pipeline.review_hit(hit_id)
    unsettled = (Hit.objects.filter(state=HitState.POSTED, kind=TaskKind.RELATION,
                                    items__isnull=False)
                 .exclude(items__question__state=QuestionState.OPEN)
                 .values_list("pk", flat=True).distinct())
    settled = len(pipeline.settle_hits(list(unsettled)))
    scoring = pipeline.finish_submissions()
    return {"replanned": replanned, "failed": failed, "posted": posted,
            "aggregated": aggregated, "settled": settled, "scoring": scoring}


# The exhaustive-annotation workflow keeps its tasks in their own module.
from .exhaustive_tasks import *  # noqa: E402, F403
