"""Celery entry points of the estimation app: planning a submission's sample, the
debounced per-corpus score recomputation, and their periodic re-drives."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from kbpo.celery import app

from . import planning, scoring


@shared_task(name=planning.PLAN_TASK, acks_late=True)
def plan_submission_task(submission_id: int) -> str:
    return planning.plan_submission(submission_id).outcome


@shared_task(name=planning.TOP_UP_TASK, acks_late=True)
def top_up_submission_task(submission_id: int, round_: int, extra: int,
                           halfwidth: float) -> str:
    return planning.top_up(submission_id, round_, extra, halfwidth).outcome


@shared_task(name="estimation.redrive_planning", acks_late=True)
def redrive_planning_task() -> dict:
    out = planning.redrive_planning()
    return {"replanned": out.replanned, "failed": out.failed}


@shared_task(name=scoring.RECOMPUTE_TASK, acks_late=True)
def recompute_corpus(corpus_id: int) -> str:
    """Recompute every active system's scores on one corpus (see estimation/scoring.py).

    Idempotent: a delivery that finds the scores up to date does nothing, and one that
    finds another run in progress re-queues itself.
    """
    outcome = scoring.run_scheduled(corpus_id)
    if outcome.run is not None:
        return f"run {outcome.run.pk}: {outcome.run.n_systems} systems"
    return outcome.status


@shared_task(name=scoring.FOLLOW_UP_TASK, acks_late=True)
def recompute_reweighted(corpus_id: int) -> str:
    """The reweighted schemes of the latest run, carried from an older one by a live run
    (see estimation/scoring.py `run_follow_up`). Idempotent like `recompute_corpus`."""
    outcome = scoring.run_follow_up(corpus_id)
    return outcome.status if outcome.run is None else f"run {outcome.run.pk}: completed"


@shared_task(name="estimation.redrive_scores", acks_late=True)
def redrive_scores() -> int:
    return scoring.redrive_scores()


@app.on_after_finalize.connect
def _schedule_redrive(sender: object, **kwargs: object) -> None:
    app.add_periodic_task(float(settings.KBPO_SCORE_REDRIVE_INTERVAL), redrive_scores.s(),
                          name="estimation.redrive")


@worker_ready.connect
def _redrive_on_start(**kwargs: object) -> None:
    """A worker back after a crash re-drives the recomputation a dead one held, beat or
    not: once that run's lease has expired; and its planning (see redrive_planning)."""
    if settings.KBPO_REDRIVE_ON_WORKER_START:
        redrive_scores.apply_async(countdown=scoring.lease_seconds() + 1)
        # and the planning a dead planner left, once it counts as lost
        redrive_planning_task.apply_async(countdown=settings.KBPO_SUBMISSION_LOST_AFTER + 1)
