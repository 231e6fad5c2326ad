"""Blocking and unblocking crowd workers, here and on their backend."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Q

from annotations.interfaces.intake import TOO_FAST
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


def block_too_fast(worker: CrowdWorker | None = None) -> list[str]:
    """Block every unblocked worker (or just this one) with `KBPO_TOO_FAST_LIMIT` or more
    assignments refused as too fast: one such is a quick reader, a run of them a bot.
    The names of those blocked."""
    limit = settings.KBPO_TOO_FAST_LIMIT
    if limit <= 0:
        return []
    candidates = CrowdWorker.objects.filter(blocked=False)
    if worker is not None:
        candidates = candidates.filter(pk=worker.pk)
    candidates = candidates.annotate(
        too_fast=Count("assignments", filter=Q(assignments__refusal_code=TOO_FAST))
    ).filter(too_fast__gte=limit)
    blocked = []
    for w in candidates:
        block_worker(w, f"{w.too_fast} assignments submitted sooner after accepting than "
                        "KBPO_MIN_SECONDS_PER_QUESTION allows (too fast to have been read)")
        blocked.append(str(w))
    return blocked
