"""Celery entry points of the estimation app: planning a submission's sample, the
debounced per-corpus score recomputation, and their periodic re-drives."""

from __future__ import annotations

from celery import shared_task

from kbpo.celery import app

from . import planning, scoring

REDRIVE_INTERVAL_S = 300.0


@shared_task(name=planning.PLAN_TASK, acks_late=True)
def plan_submission_task(submission_id: int) -> str:
    return planning.plan_submission(submission_id).outcome


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
    app.add_periodic_task(REDRIVE_INTERVAL_S, redrive_scores.s(), name="estimation.redrive")
