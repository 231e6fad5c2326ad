"""Queueing background work by task name, once the current transaction commits.

Task modules are thin entry points that import the services; services never import
task modules (that is how import cycles start), so they queue work by the task's
registered name. Celery's eager mode (the no-broker default) runs the task inline.

Debounced work (a score recomputation) is sent with `coalesce=True`: inside
`coalesced()` such sends are held and each distinct (task, arguments) goes out once
when the block ends. Eager mode ignores countdowns, so without this a batch command
(the demo, the simulated crowd) would run one recomputation per label batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from celery import current_app
from django.db import transaction

_held: ContextVar[dict[tuple, float] | None] = ContextVar("kbpo_jobs_held", default=None)


def send(name: str, *args: object, countdown: float | None = None,
         coalesce: bool = False) -> None:
    """Send the registered task `name` now (inline in eager mode); a `coalesce` send
    waits for the end of an enclosing `coalesced()` block."""
    held = _held.get()
    if coalesce and held is not None:
        held[(name, *args)] = max(countdown or 0.0, held.get((name, *args), 0.0))
        return
    task = current_app.tasks[name]
    if countdown:
        task.apply_async(args, countdown=countdown)
    else:
        task.delay(*args)


def enqueue(name: str, *args: object, countdown: float | None = None) -> None:
    """Send task `name` after the current transaction commits (at once outside one),
    so the worker finds the rows the task is about."""
    transaction.on_commit(lambda: send(name, *args, countdown=countdown))


@contextmanager
def coalesced() -> Iterator[None]:
    """Hold `coalesce` sends until the block ends, then send each distinct one once.

    Nested blocks flush with the outermost. The held sends go out even when the block
    raises: the work they stand for was already recorded (and a lost send would only
    wait for the periodic re-drive).
    """
    if _held.get() is not None:
        yield
        return
    held: dict[tuple, float] = {}
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)
        for (name, *args), countdown in held.items():
            send(name, *args, countdown=countdown)
