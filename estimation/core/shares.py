"""A class share per cell, where the cell's items re-weighted to it average to it.

Both the systems' agreement-group priors (`points.PointPlan.group_priors`) and the pooled
prior of a pair holding a relation (`recall.pooled_true_prior`) take, per cell, the share π
at which EM for a class share stops: π = (Σ_j w_j f_j(π) + A) / T, where item j's
probability re-weighted to prior π is f_j(π) = π·lr_j / (1 + π(lr_j − 1)) (lr_j the
likelihood ratio of its probability to the prior it was computed with), the items whose
probability does not move with π count as observed (their weighted sum is in A), and the
cell is shrunk towards a goal by pseudo-items (also in A and T). This is the stationary
point of the concave log-likelihood Σ_j w_j log(1 + π(lr_j − 1)) + A·log π + (T − W − A)·
log(1 − π), W = Σ_j w_j, so it is unique. Plain EM rounds creep towards a share near 0 by a
few per cent of the remaining way per round; here ψ(π) = Σ_j w_j f_j(π) + A − π·T, whose
sign is the log-likelihood's slope, is solved by Newton steps kept inside a bracket that
bisection narrows where a step would leave it. The answer is clipped to [floor, 1 − floor].
"""

from __future__ import annotations

import numpy as np


def fixed_point_shares(cells: np.ndarray, lr: np.ndarray, weight: np.ndarray | None,
                       fixed: np.ndarray, total: np.ndarray, start: np.ndarray,
                       solve: np.ndarray, floor: float, tol: float = 1e-12) -> np.ndarray:
    """Per cell, the share described above, within [floor, 1 − floor].

    ``cells``, ``lr``, ``weight`` (None: 1): the moving items — each one's cell, finite
    likelihood ratio and weight; ``fixed`` (A) and ``total`` (T) per cell; ``start``
    where to look first (the answer does not depend on it beyond ``tol``); ``solve``
    which cells to solve (the others keep ``start``)."""
    n = len(fixed)
    at, w, lrs = cells, weight, lr
    if not solve.all():  # the items of cells not solved play no part
        keep = solve.take(at)
        at, lrs = at[keep], lrs[keep]
        w = None if w is None else w[keep]
    # w·lr and lr − 1 once: ψ runs a few times per solve over every moving item.
    wlr, lrm1 = (lrs if w is None else w * lrs), lrs - 1.0

    def psi(pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # f = w·p·lr/d and f' = w·lr/d², d = 1 + p(lr − 1), in place (few passes).
        p = pi.take(at)
        inv = p * lrm1
        inv += 1.0
        np.reciprocal(inv, out=inv)
        df = wlr * inv
        f = df * p
        df *= inv
        return (np.bincount(at, weights=f, minlength=n) + fixed - pi * total,
                np.bincount(at, weights=df, minlength=n) - total)

    lo, hi = np.full(n, floor), np.full(n, 1.0 - floor)
    # Cells not solved sit at 1/2 while ψ is evaluated; they get ``start`` back.
    pi = np.where(solve, np.clip(start, lo, hi), 0.5)
    f, df = psi(pi)
    # The log-likelihood's slope decreases: the root lies on the side ψ's sign points to,
    # and is that side's end (the answer clipped there) if ψ keeps its sign up to it.
    probe = np.where(f > 0, hi, lo)
    at_end = solve & (f != 0) & (np.sign(psi(probe)[0]) * np.sign(f) >= 0)
    pi = np.where(at_end, probe, pi)
    active = solve & ~at_end & (f != 0)
    for _ in range(200):  # bisection alone halves ~1 to tol in ~40
        if not active.any():
            break
        lo = np.where(active & (f > 0), pi, lo)
        hi = np.where(active & (f < 0), pi, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = pi - f / df
        inside = np.isfinite(step) & (step > lo) & (step < hi)
        new = np.where(active, np.where(inside, step, 0.5 * (lo + hi)), pi)
        done = (np.abs(new - pi) <= tol) | (hi - lo <= tol)
        pi = new
        active &= ~done
        if not active.any():
            break
        keep = active.take(at)
        if 2 * int(keep.sum()) < len(at):  # cells done stay done: drop their items
            at, wlr, lrm1 = at[keep], wlr[keep], lrm1[keep]
        f, df = psi(pi)
        active &= f != 0
    return np.where(solve, pi, start)
