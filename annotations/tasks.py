"""Celery tasks of the annotations app (autodiscovered by the worker)."""

from .exhaustive_tasks import *  # noqa: F403
