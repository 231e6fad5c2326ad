"""Celery entry points of the submissions app (the work is in `processing`)."""

from __future__ import annotations

from celery import Task, shared_task
from django.conf import settings

from . import processing
from .services import INGEST_TASK


@shared_task(name=INGEST_TASK, acks_late=True, bind=True,
             soft_time_limit=settings.KBPO_SUBMISSION_TIME_LIMIT,
             time_limit=settings.KBPO_SUBMISSION_TIME_LIMIT + 60)
def ingest_submission(self: Task, submission_id: int) -> str:
    try:
        return processing.run_ingestion(submission_id)
    except processing.Interrupted as exc:
        # The database went away mid-file: try again once it is back, not `failed`.
        raise self.retry(countdown=settings.KBPO_SUBMISSION_RETRY_DELAY,
                         max_retries=settings.KBPO_SUBMISSION_RETRIES, exc=exc) from exc


@shared_task(name="submissions.redrive_stuck")
def redrive_stuck() -> int:
    return processing.redrive_stuck()
