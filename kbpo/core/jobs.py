"""Queueing background work by task name, once the current transaction commits.

Task modules are thin entry points that import the services; services never import
task modules (that is how import cycles start), so they queue work by the task's
registered name. Celery's eager mode (the no-broker default) runs the task inline.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction


def send(name: str, *args: object, countdown: float | None = None) -> None:
    """Send the registered task `name` now (inline in eager mode)."""
    task = current_app.tasks[name]
    if countdown:
        task.apply_async(args, countdown=countdown)
    else:
        task.delay(*args)


def enqueue(name: str, *args: object, countdown: float | None = None) -> None:
    """Send task `name` after the current transaction commits (at once outside one),
    so the worker finds the rows the task is about."""
    transaction.on_commit(lambda: send(name, *args, countdown=countdown))
