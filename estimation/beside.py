"""One computation on a second thread beside the caller's: a recompute's noise-correction
replicates beside its final estimate (scoring.py).

On the recompute benchmark's data (100 systems × 10k predictions, 2 cores, one OpenBLAS
thread) the replicates and the final estimate took 2.05–2.1 s one after the other and
1.2–1.4 s side by side, the same floats (docs/internals/leaderboard.md §5).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.conf import settings

T = TypeVar("T")


def replicates_beside() -> bool:
    """Whether a recompute runs the correction's replicates on a thread beside its final
    estimate (KBPO_SCORE_THREADS ≥ 2): the same numbers either way."""
    return int(settings.KBPO_SCORE_THREADS) >= 2


class Beside:
    """Runs one computation on a second thread while the caller goes on, or (``threaded``
    false) at once; either way the same result, or its exception when it is asked for.

    The replicates' point estimates and the final estimate share no mutable state but
    the population's caches, which lock what they fill (core/population.py); their loops
    and numpy's large operations give the GIL up, so on two cores they overlap. Leaving
    the block waits for the thread, so a failed estimate never leaves it running."""

    def __init__(self, threaded: bool) -> None:
        self.threaded = bool(threaded)
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Beside:
        if self.threaded:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="kbpo-replicates")
        return self

    def run(self, fn: Callable[..., T], *args: object) -> Callable[[], T]:
        """Start ``fn(*args)`` (unthreaded: run it now, so that its inputs can be let go
        before what comes next); the returned function gives its result."""
        if self._pool is None:
            result = fn(*args)
            return lambda: result
        return self._pool.submit(fn, *args).result

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
