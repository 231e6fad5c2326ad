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
Each cell is solved on its own, in a compiled loop (kernels.py).
"""

from __future__ import annotations

import numpy as np

from .compiled import kernels


def fixed_point_shares(cells: np.ndarray, lr: np.ndarray, weight: np.ndarray | None,
                       fixed: np.ndarray, total: np.ndarray, start: np.ndarray,
                       solve: np.ndarray, floor: float, tol: float = 1e-12) -> np.ndarray:
    """Per cell, the share described above, within [floor, 1 − floor].

    ``cells``, ``lr``, ``weight`` (None: 1): the moving items — each one's cell, finite
    likelihood ratio and weight; ``fixed`` (A) and ``total`` (T) per cell; ``start``
    where to look first (the answer does not depend on it beyond ``tol``); ``solve``
    which cells to solve (the others keep ``start``)."""
    weighted = weight is not None
    return kernels().fixed_point_shares(
        np.asarray(cells, np.int64), np.asarray(lr, float),
        np.asarray(weight, float) if weighted else np.ones(1), weighted,
        np.asarray(fixed, float), np.asarray(total, float), np.asarray(start, float),
        np.asarray(solve, np.bool_), float(floor), float(tol))
