from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Wire answer intake to aggregation (see docs/internals/crowd.md): relation questions go
        to the crowd's labels, entity and exhaustive questions to the exhaustive
        workflow."""
        from .crowd import tasks as crowd_tasks  # noqa: F401  (registers the Celery tasks,
        from .exhaustive import tasks as exhaustive_tasks  # noqa: F401  queued by name)
        from .exhaustive import workflow
        from .interfaces.intake import answers_stored, page_post_received

        answers_stored.connect(_aggregate_on_answers, dispatch_uid="annotations-aggregate")
        page_post_received.connect(_confirm_page_post, dispatch_uid="annotations-confirm")
        answers_stored.connect(workflow.on_answers_stored,
                               dispatch_uid="exhaustive-answers-stored")
        from .signals import labels_changed

        labels_changed.connect(_refit_on_labels, dispatch_uid="annotations-refit")


def _aggregate_on_answers(sender: object, question_ids: list[int], **kwargs: object) -> None:
    from kbpo.core import jobs

    from .crowd.labels import AGGREGATE_TASK

    jobs.enqueue(AGGREGATE_TASK, list(question_ids))


def _refit_on_labels(sender: object, corpus_id: int, source: str = "",
                     **kwargs: object) -> None:
    """New or changed labels: refit the crowd model soon (debounced), not only in the
    hourly pass, so that no score rests on majority labels longer than the debounce.
    The pass's own label changes ask for no refit."""
    from .quality.workers import QUALITY_SOURCE, request_refit

    if source != QUALITY_SOURCE:
        request_refit(corpus_id)


def _confirm_page_post(sender: object, post_id: int, hit_id: int | None = None,
                       **kwargs: object) -> None:
    """Ask MTurk about a HIT's posts once the worker has had time to submit: one
    ListAssignmentsForHIT per HIT per KBPO_MTURK_CONFIRM_DELAY seconds, and at most
    KBPO_MTURK_CONFIRM_RATE per KBPO_MTURK_CONFIRM_RATE_WINDOW seconds in all (issue 41:
    each anonymous post cost a GetAssignment). The periodic sync settles what this
    skips."""
    from django.conf import settings

    from kbpo.core import jobs, security

    from .crowd.sync import CONFIRM_HIT_TASK
    from .models import PagePost

    if hit_id is None:
        hit_id = PagePost.objects.filter(pk=post_id).values_list("hit_id", flat=True).first()
        if hit_id is None:
            return
    delay = max(1, settings.KBPO_MTURK_CONFIRM_DELAY)
    if not security.take(f"mturk-confirm-hit:{hit_id}", 1, delay).allowed:
        return  # one is queued for this HIT already
    if not security.take("mturk-confirm", settings.KBPO_MTURK_CONFIRM_RATE,
                         settings.KBPO_MTURK_CONFIRM_RATE_WINDOW).allowed:
        return
    jobs.send(CONFIRM_HIT_TASK, hit_id, countdown=settings.KBPO_MTURK_CONFIRM_DELAY)
