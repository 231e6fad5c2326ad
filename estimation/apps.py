from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class EstimationConfig(AppConfig):
    name = "estimation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Wire planning to ingestion, and score recomputation to every event that
        changes a corpus's scores."""
        from django.contrib.auth import get_user_model
        from django.db import transaction
        from django.db.models.signals import post_save, pre_save

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
            # Annotating: the labels the corpus already holds for its sample give it
            # provisional scores at once (on the board as refining, numbers on its
            # report) instead of "No scores yet" until the crowd's first new label.
            if created and instance.to_state in (State.WITHDRAWN, State.SCORING,
                                                 State.ANNOTATING):
                corpus_id = instance.submission.corpus_id
                reason = f"submission {instance.submission_id} {instance.to_state}"
                transaction.on_commit(lambda: request_recompute(corpus_id, reason))

        def on_submission_saved(sender: object, instance: Submission, created: bool,
                                update_fields: frozenset[str] | None = None,
                                **kwargs: object) -> None:
            # Stored leaderboards bake in owner, baseline, paper and method: re-render
            # them when an edit may have changed one (state changes name their fields);
            # an owner's new username likewise (on_user_saved).
            if created or (update_fields is not None
                           and not set(update_fields) & snapshot.DISPLAY_FIELDS):
                return
            corpus_id = instance.corpus_id
            transaction.on_commit(lambda: snapshot.refresh_corpus(corpus_id))

        def on_user_saving(sender: object, instance: Any, raw: bool = False,
                           update_fields: frozenset[str] | None = None,
                           **kwargs: object) -> None:
            # Stored boards name each owner by username: note whether this save renames
            # one (a login saves last_login alone and is skipped without a query).
            instance._kbpo_renamed = False
            field = get_user_model().USERNAME_FIELD
            if raw or instance.pk is None or (update_fields is not None
                                              and field not in update_fields):
                return
            old = (get_user_model().objects.filter(pk=instance.pk)
                   .values_list(field, flat=True).first())
            instance._kbpo_renamed = old is not None and old != instance.get_username()

        def on_user_saved(sender: object, instance: Any, created: bool,
                          **kwargs: object) -> None:
            if created or not getattr(instance, "_kbpo_renamed", False):
                return
            corpora = list(Submission.objects.filter(owner_id=instance.pk)
                           .values_list("corpus_id", flat=True).distinct().order_by())
            for corpus_id in corpora:
                transaction.on_commit(lambda c=corpus_id: snapshot.refresh_corpus(c))

        submission_ingested.connect(_plan_on_ingest, dispatch_uid="estimation-plan")
        user_model = get_user_model()
        pre_save.connect(on_user_saving, sender=user_model, dispatch_uid="estimation.user_saving")
        post_save.connect(on_user_saved, sender=user_model, dispatch_uid="estimation.user_saved")
        labels_changed.connect(on_labels_changed, dispatch_uid="estimation.labels_changed")
        post_save.connect(on_event, sender=SubmissionEvent,
                          dispatch_uid="estimation.submission_event")
        post_save.connect(on_submission_saved, sender=Submission,
                          dispatch_uid="estimation.submission_saved")


def _plan_on_ingest(sender: object, submission: object, **kwargs: object) -> None:
    """An ingested submission gets its sample planned (estimation/planning.py)."""
    from .planning import enqueue_plan

    enqueue_plan(submission.pk)  # type: ignore[attr-defined]
