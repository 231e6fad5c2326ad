"""Celery tasks: the debounced per-corpus score recomputation and its periodic re-drive."""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.db.models import F, Q
from django.utils import timezone

from kbpo.celery import app

from .models import ScoringState

logger = logging.getLogger(__name__)

# A queued task that has not started after this long was lost (broker flush, worker
# crash before ack): the re-drive queues a fresh one.
STALE_QUEUE = dt.timedelta(minutes=10)
REDRIVE_INTERVAL_S = 300.0


@shared_task(name="estimation.recompute_corpus", acks_late=True)
def recompute_corpus(corpus_id: int) -> str:
    """Recompute every active system's scores on one corpus (see estimation/scoring.py).

    Idempotent: a delivery that finds the scores up to date does nothing, and one that
    finds another run in progress re-queues itself.
    """
    from .scoring import run_scheduled

    outcome = run_scheduled(corpus_id)
    if outcome.run is not None:
        return f"run {outcome.run.pk}: {outcome.run.n_systems} systems"
    return outcome.status


@shared_task(name="estimation.redrive_scores", acks_late=True)
def redrive_scores() -> int:
    """Queue a recompute for every corpus whose scores lag and that nothing will serve.

    Catches a failed run (which does not re-queue itself, to avoid a hot loop) and a
    queued task that was lost.
    """
    from .scoring import _enqueue

    now = timezone.now()
    lagging = (ScoringState.objects.filter(scored_generation__lt=F("generation"))
               .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
               .filter(Q(scheduled=False) | Q(scheduled_at__lt=now - STALE_QUEUE)))
    n = 0
    for state in lagging:
        ScoringState.objects.filter(pk=state.pk).update(scheduled=True, scheduled_at=now)
        _enqueue(state.corpus_id, 0)
        n += 1
    if n:
        logger.info("re-drove score recomputation for %d corpora", n)
    return n


@app.on_after_finalize.connect
def _schedule_redrive(sender: object, **kwargs: object) -> None:
    app.add_periodic_task(REDRIVE_INTERVAL_S, redrive_scores.s(), name="estimation.redrive")
