from django.apps import AppConfig


class CoreConfig(AppConfig):
    # The label stays "kbpo": tables, migrations and content types keep their names.
    name = "kbpo.core"
    label = "kbpo"
    verbose_name = "KBPO core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import tasks  # noqa: F401  (registers the app's Celery tasks, queued by name)
