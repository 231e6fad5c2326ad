from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Wire the crowd pipeline to the rest of the service (see docs/crowd.md)."""
        from submissions.services import submission_ingested

        from .intake import answers_stored

        submission_ingested.connect(_plan_on_ingest, dispatch_uid="annotations-plan")
        answers_stored.connect(_aggregate_on_answers, dispatch_uid="annotations-aggregate")
        # The exhaustive workflow connects its own answers_stored receiver on import.
        from . import exhaustive  # noqa: F401


def _plan_on_ingest(sender: object, submission: object, **kwargs: object) -> None:
    from .tasks import enqueue_plan

    enqueue_plan(submission.pk)  # type: ignore[attr-defined]


def _aggregate_on_answers(sender: object, question_ids: list[int], **kwargs: object) -> None:
    from django.db import transaction

    from .tasks import aggregate_task

    ids = list(question_ids)
    transaction.on_commit(lambda: aggregate_task.delay(ids))
