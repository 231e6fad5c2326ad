"""One computation on a second thread beside the caller's: a recompute's noise-correction
replicates beside its final estimate (scoring.py), shared by both threads once the
estimate is done (`SharedReplicates`).

On the recompute benchmark's data (100 systems × 10k predictions, 2 cores, one OpenBLAS
thread) the replicates and the final estimate took 2.05–2.1 s one after the other and
1.2–1.4 s side by side, the same floats (docs/internals/leaderboard.md §5).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.conf import settings

from .core.noise import between_replicates, replicate_estimates

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


class SharedReplicates:
    """The noise correction's replicates (`noise.correction_variance`), started on the
    helper thread of a `Beside` and shared with the caller once its own work is done:
    each thread takes the next replicate not yet taken, so the two cores finish them
    together instead of the caller waiting idle. Each replicate's estimates depend on its
    own soft labels only, and the variance combines them in replicate order: the same
    floats however they were shared.

    The caller works on a shallow copy of the plan, made once the helper's first
    replicate has filled the plan's label-free parts (read-only from then on); the
    per-call parts (the verdicts last seen) are attributes each copy sets for itself.
    """

    def __init__(self, pop: object, ev: object, replicates: Sequence[object],
                 draw_scheme: str, schemes: Sequence[str], confidence: float,
                 plan: object, estimator: str = "importance") -> None:
        self._args = (pop, ev, draw_scheme, schemes, confidence, estimator)
        self._reps = list(replicates) if len(replicates) >= 2 else []  # no variance
        self._plan = plan
        self._out: list[object] = [None] * len(self._reps)
        self._next = 0
        self._lock = threading.Lock()
        self._first = threading.Event()
        self._helper: Callable[[], None] | None = None

    def start(self, beside: Beside) -> SharedReplicates:
        if beside.threaded and len(self._reps) > 1:
            self._helper = beside.run(self._work, self._plan)
        return self

    def _work(self, plan: object) -> None:
        pop, ev, draw_scheme, schemes, confidence, estimator = self._args
        try:
            while True:
                with self._lock:
                    k = self._next
                    self._next += 1
                if k >= len(self._reps):
                    return
                self._out[k] = replicate_estimates(pop, ev, self._reps[k], draw_scheme,
                                                   schemes, confidence, plan, estimator)
                if k == 0:
                    self._first.set()
        finally:
            self._first.set()  # (a failure, or nothing to do: nobody waits for ever)

    def result(self) -> dict:
        """Help with the replicates left, then their between-replicate variance."""
        if self._helper is None:
            self._work(self._plan)
        else:
            self._first.wait()
            if self._next < len(self._reps):
                self._work(copy.copy(self._plan))
            self._helper()  # its exception, if it failed
        return between_replicates(self._out)
