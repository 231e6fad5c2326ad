from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the exhaustive workflow's answers_stored receiver in every process.
        from . import exhaustive  # noqa: F401
