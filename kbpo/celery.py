"""The Celery application shared by every KBPO worker and beat process."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")

app = Celery("kbpo")
# Every CELERY_* Django setting configures Celery (broker, eager mode, acks_late...).
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every app's `tasks` module, and those of the annotations app's subpackages.
app.autodiscover_tasks()
app.autodiscover_tasks(["annotations.crowd", "annotations.exhaustive"])
