"""Celery entry points of the crowd pipeline; each is idempotent, acknowledged late and
requeued when its worker process dies (`reject_on_worker_lost`).

Queued by name (`kbpo.core.jobs.enqueue`): `answers_stored` → aggregate, a complete
HIT → review, a rejection → recount its labels (crowd/discount.py), a task page's
provisional post → confirm with MTurk; and by Celery beat (`CELERY_BEAT_SCHEDULE`):
re-drive, MTurk sync, worker quality. The work itself is in the modules named in each
task.
"""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache

from annotations.quality.workers import REFIT_TASK, refit_key, update_worker_quality

from . import discount, labels, periodic, review, sync, workers


@shared_task(name=labels.AGGREGATE_TASK, acks_late=True, reject_on_worker_lost=True)
def aggregate_task(question_ids: list[int]) -> dict:
    out = labels.aggregate(question_ids)
    return {"labelled": len(out.labelled), "extra": len(out.extra_requested),
            "waiting": out.waiting, "scoring": out.scoring}


@shared_task(name=discount.RECOUNT_TASK, acks_late=True, reject_on_worker_lost=True)
def recount_task(question_ids: list[int]) -> dict:
    out = labels.recount(question_ids)
    return {"relabelled": len(out.labelled), "extra": len(out.extra_requested),
            "waiting": out.waiting, "scoring": out.scoring}


@shared_task(name=review.REVIEW_TASK, acks_late=True, reject_on_worker_lost=True)
def review_hit_task(hit_id: int) -> dict:
    approved, rejected = review.review_hit(hit_id)
    return {"approved": approved, "rejected": rejected}


@shared_task(name="annotations.pay_bonus", acks_late=True, reject_on_worker_lost=True)
def pay_bonus_task(bonus_id: int) -> bool:
    return review.pay_bonus(bonus_id)


@shared_task(name="annotations.sync_mturk", acks_late=True, reject_on_worker_lost=True)
def sync_mturk_task(hit_ids: list[int] | None = None) -> dict:
    result = periodic.sync_all(hit_ids)
    return {"hits": result.hits, "reconciled": result.reconciled,
            "refused": result.refused, "replaced": result.replaced,
            "extended": result.extended, "settled": result.settled,
            "posts_forged": result.posts_forged, "posts_expired": result.posts_expired,
            "errors": result.errors[:20]}


@shared_task(name=sync.CONFIRM_TASK, acks_late=True, reject_on_worker_lost=True)
def confirm_page_post_task(post_id: int) -> str:
    return sync.confirm_page_post(post_id)  # queued before per-HIT confirmation; kept


@shared_task(name=sync.CONFIRM_HIT_TASK, acks_late=True, reject_on_worker_lost=True)
def confirm_hit_posts_task(hit_id: int) -> dict:
    result = sync.confirm_hit_posts(hit_id)
    return {"posts_confirmed": result.posts_confirmed, "posts_forged": result.posts_forged,
            "reconciled": result.reconciled, "refused": result.refused,
            "errors": result.errors[:20]}


@shared_task(name=REFIT_TASK, acks_late=True, reject_on_worker_lost=True)
def refit_quality_task(corpus_id: int) -> dict:
    """The quality pass for one corpus, asked for when its labels changed."""
    cache.delete(refit_key(corpus_id))  # a label from now on asks for another refit
    report = update_worker_quality(corpus_id)
    return {"answers": report.answers, "soft_labels": report.soft_labels}


@shared_task(name="annotations.worker_quality", acks_late=True, reject_on_worker_lost=True)
def worker_quality_task() -> dict:
    report = update_worker_quality()
    blocked = workers.block_control_outliers() + workers.block_too_fast()
    return {"answers": report.answers, "workers": report.workers, "flagged": report.flagged,
            "blocked": blocked}


@shared_task(name="annotations.redrive", acks_late=True, reject_on_worker_lost=True)
def redrive_task() -> dict:
    out = periodic.redrive()
    return {"posted": out.posted, "aggregated": out.aggregated, "settled": out.settled,
            "expired_posts": out.expired_posts, "scoring": out.scoring}
