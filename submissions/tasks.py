"""Celery entry points of the submissions app (the work is in `processing`)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from . import processing
from .services import INGEST_TASK


@shared_task(name=INGEST_TASK, acks_late=True,
             soft_time_limit=settings.KBPO_SUBMISSION_TIME_LIMIT,
             time_limit=settings.KBPO_SUBMISSION_TIME_LIMIT + 60)
def ingest_submission(submission_id: int) -> str:
    return processing.run_ingestion(submission_id)


@shared_task(name="submissions.redrive_stuck")
def redrive_stuck() -> int:
    return processing.redrive_stuck()
