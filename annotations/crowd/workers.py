"""Blocking and unblocking crowd workers, here and on their backend."""

from __future__ import annotations

from annotations.models import (
    Backend,
    CrowdWorker,
)

from ..quality.workers import control_outliers
from . import backends, mturk


def block_worker(worker: CrowdWorker, reason: str) -> None:
    """Stop a worker from taking our tasks (MTurk: our block qualification)."""
    if not reason.strip():
        raise ValueError("blocking a worker needs a reason for our records")
    backends.block_on_backend(worker, reason)
    CrowdWorker.objects.filter(pk=worker.pk).update(blocked=True,
                                                    blocked_reason=reason.strip()[:500])


def unblock_worker(worker: CrowdWorker, reason: str = "unblocked by an operator") -> None:
    if worker.backend == Backend.MTURK and worker.blocked:
        try:
            backends.unblock_on_backend(worker, reason)
        except mturk.MTurkError as err:
            if err.code != "RequestError":  # "not blocked there" is what we want anyway
                raise
    CrowdWorker.objects.filter(pk=worker.pk).update(blocked=False, blocked_reason="")



def block_control_outliers() -> list[str]:
    """Block every worker far below the crowd on control questions (the quality pass
    has counted them); the names of those blocked."""
    blocked = []
    for worker in control_outliers():
        rate = worker.control_right / worker.control_answers
        block_worker(worker, f"right on {worker.control_right} of {worker.control_answers} "
                             f"control questions ({rate:.0%}), far below the crowd")
        blocked.append(str(worker))
    return blocked
