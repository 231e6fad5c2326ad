from django.apps import AppConfig


class EstimationConfig(AppConfig):
    name = "estimation"
    default_auto_field = "django.db.models.BigAutoField"
