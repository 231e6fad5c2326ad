from __future__ import annotations

from django.apps import AppConfig


class EstimationConfig(AppConfig):
    name = "estimation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Wire planning to ingestion, and score recomputation to every event that
        changes a corpus's scores."""
        from django.db import transaction
        from django.db.models.signals import post_save

        from annotations.signals import labels_changed
        from submissions.models import State, Submission, SubmissionEvent
        from submissions.services import submission_ingested

        from . import (
            snapshot,
            tasks,  # noqa: F401  (registers the app's Celery tasks, queued by name)
        )
        from .scoring import request_recompute

        def on_labels_changed(sender: object, corpus_id: int, **kwargs: object) -> None:
            request_recompute(corpus_id, "labels changed")

        def on_event(sender: object, instance: SubmissionEvent, created: bool,
                     **kwargs: object) -> None:
            # Withdrawn: the system drops out of everyone's joint estimates.
            # Scoring: a submission that needed no new labels gets its scores (and
            # becomes `scored`) without waiting for the next label.
            if created and instance.to_state in (State.WITHDRAWN, State.SCORING):
                corpus_id = instance.submission.corpus_id
                reason = f"submission {instance.submission_id} {instance.to_state}"
                transaction.on_commit(lambda: request_recompute(corpus_id, reason))

        def on_submission_saved(sender: object, instance: Submission, created: bool,
                                update_fields: frozenset[str] | None = None,
                                **kwargs: object) -> None:
            # Stored leaderboards bake in owner, baseline, paper and method: re-render
            # them when an edit may have changed one (state changes name their fields).
            if created or (update_fields is not None
                           and not set(update_fields) & snapshot.DISPLAY_FIELDS):
                return
            corpus_id = instance.corpus_id
            transaction.on_commit(lambda: snapshot.refresh_corpus(corpus_id))

        submission_ingested.connect(_plan_on_ingest, dispatch_uid="estimation-plan")
        labels_changed.connect(on_labels_changed, dispatch_uid="estimation.labels_changed")
        post_save.connect(on_event, sender=SubmissionEvent,
                          dispatch_uid="estimation.submission_event")
        post_save.connect(on_submission_saved, sender=Submission,
                          dispatch_uid="estimation.submission_saved")


def _plan_on_ingest(sender: object, submission: object, **kwargs: object) -> None:
    """An ingested submission gets its sample planned (estimation/planning.py)."""
    from .planning import enqueue_plan

    enqueue_plan(submission.pk)  # type: ignore[attr-defined]
