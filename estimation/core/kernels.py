"""Compiled loops (numba) for the estimators' hot spots.

A score recompute evaluates the same per-item sums many times (the correction's
replicates, the fixed points of the systems' priors); in numpy each evaluation is a
dozen passes over ~10⁶ items with a temporary array per pass. These kernels make one
pass each and give the same floats as the numpy they replace: every sum adds its
items in the order `np.bincount` does (array order within a cell), and no fast-math
reassociation is allowed (numba's default).

Imported lazily by their callers: loading numba costs ~0.6 s and ~150 MB, which the web
processes never need. Compiled code is cached on disk (`NUMBA_CACHE_DIR`, else beside
this file); the production image compiles it at build time (`python -m
estimation.core.kernels`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@nb.njit(**_JIT)
def _cell_sums(lo: int, hi: int, pi: float, wlr: np.ndarray, lrm1: np.ndarray
               ) -> tuple[float, float]:
    """Σ f and Σ f' over one cell's items at share ``pi`` (shares.fixed_point_shares)."""
    f = 0.0
    df = 0.0
    for k in range(lo, hi):
        inv = 1.0 / (pi * lrm1[k] + 1.0)
        d = wlr[k] * inv
        f += d * pi
        df += d * inv
    return f, df


@nb.njit(**_JIT)
def fixed_point_shares(cells: np.ndarray, lr: np.ndarray, weight: np.ndarray, weighted: bool,
                       fixed: np.ndarray, total: np.ndarray, start: np.ndarray,
                       solve: np.ndarray, floor: float, tol: float) -> np.ndarray:
    """`shares.fixed_point_shares`, cell by cell (see there); ``weight`` is read only
    when ``weighted``."""
    n = len(fixed)
    # The solved cells' items grouped by cell, stably: a cell's sums add its items in
    # their original order.
    bounds = np.zeros(n + 1, np.int64)
    for i in range(len(cells)):
        if solve[cells[i]]:
            bounds[cells[i] + 1] += 1
    for c in range(n):
        bounds[c + 1] += bounds[c]
    fill = bounds[:-1].copy()
    wlr = np.empty(bounds[n])
    lrm1 = np.empty(bounds[n])
    for i in range(len(cells)):
        c = cells[i]
        if solve[c]:
            k = fill[c]
            fill[c] += 1
            wlr[k] = weight[i] * lr[i] if weighted else lr[i]
            lrm1[k] = lr[i] - 1.0
    out = start.copy()
    for c in range(n):
        if not solve[c]:
            continue
        lo, hi = floor, 1.0 - floor
        s, e = bounds[c], bounds[c + 1]
        pi = min(max(start[c], lo), hi)
        sf, sd = _cell_sums(s, e, pi, wlr, lrm1)
        f = sf + fixed[c] - pi * total[c]
        df = sd - total[c]
        # The root lies on the side ψ's sign points to; it is that end if ψ keeps its sign.
        probe = hi if f > 0 else lo
        fp = _cell_sums(s, e, probe, wlr, lrm1)[0] + fixed[c] - probe * total[c]
        if f != 0 and np.sign(fp) * np.sign(f) >= 0:
            out[c] = probe
            continue
        for _ in range(200):
            if f == 0:
                break
            if f > 0:
                lo = pi
            else:
                hi = pi
            step = pi - f / df
            new = step if np.isfinite(step) and lo < step < hi else 0.5 * (lo + hi)
            done = abs(new - pi) <= tol or hi - lo <= tol
            pi = new
            if done:
                break
            sf, sd = _cell_sums(s, e, pi, wlr, lrm1)
            f = sf + fixed[c] - pi * total[c]
            df = sd - total[c]
        out[c] = pi
    return out


def warm() -> None:
    """Compile (or load from the cache) every kernel once."""
    one = np.ones(1)
    fixed_point_shares(np.zeros(1, np.int64), one, one, True, one, 2 * one, 0.5 * one,
                       np.ones(1, np.bool_), 1e-3, 1e-12)


if __name__ == "__main__":  # the image's build step: compile into NUMBA_CACHE_DIR
    warm()
