"""Celery tasks of the exhaustive-annotation workflow (the work is in `workflow`).

Each task re-reads its rows under a lock and does nothing when its work is already
done, so a redelivered task (acks_late) or a duplicate enqueue is harmless.
"""

from __future__ import annotations

from celery import shared_task

from . import workflow


@shared_task(name=workflow.START_TASK, acks_late=True)
def start_entity_task(exdoc_id: int) -> int | None:
    """Create the entity question and HIT of a planned document."""
    return workflow.create_entity_task(exdoc_id)


@shared_task(name=workflow.POST_TASK, acks_late=True)
def post_document_hit(hit_id: int) -> str:
    """Post a pending entity/exhaustive HIT through the configured crowd backend."""
    return workflow.post_hit_safely(hit_id)


@shared_task(name=workflow.AGGREGATE_TASK, acks_late=True)
def aggregate_document_question(question_id: int) -> str:
    """Aggregate an entity or exhaustive question that has all its answers."""
    return workflow.complete_document_question(question_id)

