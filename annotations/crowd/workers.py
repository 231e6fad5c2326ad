"""Blocking and unblocking crowd workers, here and on their backend."""

from __future__ import annotations

from annotations.models import (
    Backend,
    CrowdWorker,
)

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

