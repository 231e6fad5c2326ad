"""Celery entry points of the submissions app (the work is in `processing`)."""

from __future__ import annotations

from celery import Task, shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import connection

from . import processing
from .services import INGEST_TASK


@shared_task(name=INGEST_TASK, acks_late=True, bind=True,
             soft_time_limit=settings.KBPO_SUBMISSION_TIME_LIMIT,
             time_limit=settings.KBPO_SUBMISSION_TIME_LIMIT + 60)
def ingest_submission(self: Task, submission_id: int) -> str:
    try:
        return processing.run_ingestion(submission_id)
    except Exception as exc:
        # The database went away (mid-file, or before the file was opened): try again
        # once it is back, never `failed`.
        if not isinstance(exc, processing.Interrupted) and not processing.connection_lost(exc):
            raise
        if not connection.in_atomic_block:  # (a test's wrapping transaction)
            connection.close()
        raise self.retry(countdown=settings.KBPO_SUBMISSION_RETRY_DELAY,
                         max_retries=settings.KBPO_SUBMISSION_RETRIES, exc=exc) from exc


@shared_task(name="submissions.redrive_stuck")
def redrive_stuck() -> int:
    return processing.redrive_stuck()


@worker_ready.connect
def _redrive_on_start(**kwargs: object) -> None:
    """A worker back after a crash re-drives what the dead one held, beat or not: once
    the dead ingestion counts as lost (KBPO_SUBMISSION_LOST_AFTER)."""
    if settings.KBPO_REDRIVE_ON_WORKER_START:
        redrive_stuck.apply_async(countdown=settings.KBPO_SUBMISSION_LOST_AFTER + 1)
