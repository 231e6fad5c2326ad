from django.apps import AppConfig


class KbpoConfig(AppConfig):
    name = "kbpo"
    verbose_name = "KBPO core"
    default_auto_field = "django.db.models.BigAutoField"
