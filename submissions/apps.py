from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import tasks  # noqa: F401  (registers the app's Celery tasks, queued by name)
