from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "kbpo.demo"
    label = "demo"
    verbose_name = "KBPO demo world"
