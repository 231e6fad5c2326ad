"""Adaptive sample size for a new system (DESIGN §6.4)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .estimators import Evidence, _per_draw_variance
from .population import Population

BOUNDS = ("worst_case", "second_moment")


def worst_case_variance(p: np.ndarray, z: np.ndarray) -> float:
    """max over labels f ∈ [0,1]^X of Var_p[z·f].

    Var = E[z² f] − E[z f]² is concave in f, so the maximiser is a threshold rule:
    f = 1 on the largest z, one fractional element at the boundary. Scanning the
    sorted elements with the optimal fraction at each boundary finds the maximum.
    With z ≡ 1 this is the binomial worst case 1/4.
    """
    order = np.argsort(-z)
    p, z = p[order], z[order]
    pz2, pz = p * z * z, p * z
    a = np.concatenate([[0.0], np.cumsum(pz2)[:-1]])  # E[z² f] of the full prefix
    b = np.concatenate([[0.0], np.cumsum(pz)[:-1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip(
            np.where(pz > 0, (z - 2 * b) / (2 * z), 0.0) / np.where(p > 0, p, 1), 0, 1
        )
    v = a + frac * pz2 - (b + frac * pz) ** 2
    return float(max(v.max(initial=0.0), 0.0))


class _PlanProblem:
    """Everything about the new system that does not depend on the candidate n."""

    def __init__(
        self, pop: Population, ev: Evidence, k: int, scheme: str, bound: str
    ) -> None:
        if bound not in BOUNDS:
            raise ValueError(
                f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}"
            )
        self.k, self.bound = k, bound
        self.n = ev.n.astype(float).copy()
        self.n[k] = 0  # the new system's own draws are what we are planning
        self.overlap = pop.overlap(scheme, scheme)[k].copy()
        system = pop._systems[k]
        cols, self.p = system.pair_row(scheme)
        self.bt = pop.stacked(scheme)[
            :, cols
        ].T.tocsr()  # (|X_k| × m): P_j on k's pairs
        # Mass of k's correct instances per pair, at the labelled drawn pairs.
        correct = ev.correct(system.pairs, system.predicates)
        _, inv = np.unique(system.pairs, return_inverse=True)
        pf = np.bincount(
            inv.ravel(), weights=system.probs(scheme) * correct, minlength=len(cols)
        )
        pos = np.searchsorted(ev.pairs, cols)
        pos_c = np.minimum(pos, max(len(ev.pairs) - 1, 0))
        hit = (
            (pos < len(ev.pairs)) & (ev.pairs[pos_c] == cols)
            if len(ev.pairs)
            else pos < 0
        )
        self.hit_cols = np.flatnonzero(hit)
        self.pf_hit = pf[hit]
        others = self.n > 0
        scale = sp.diags(np.where(others, 1.0 / np.maximum(self.n, 1), 0.0))
        self.cn = (scale @ ev.counts)[:, pos_c[hit]].tocsr()

    def variance_bound(self, n_new: int) -> float:
        n = self.n.copy()
        n[self.k] = n_new
        w = self.overlap * n
        if w.sum() <= 0:
            return np.inf
        w /= w.sum()
        q = self.bt @ w
        if np.any(q[self.p > 0] <= 0):
            return np.inf  # part of the system is unreachable by any draw
        r = self.pf_hit / q[self.hit_cols]
        m1 = self.cn @ r
        m2 = self.cn @ (r * r)
        s2 = _per_draw_variance(m1[:, None], m2[:, None], n)[:, 0]
        others = (n > 0) & (np.arange(len(n)) != self.k)
        var = float(np.sum(w[others] ** 2 / n[others] * s2[others]))
        if n_new > 0:
            z = self.p / q
            own = (
                worst_case_variance(self.p, z)
                if self.bound == "worst_case"
                else float(np.sum(self.p * z * z))
            )
            var += w[self.k] ** 2 / n_new * own
        return var


def plan_sample_size(
    pop: Population,
    ev: Evidence,
    name: str,
    target_halfwidth: float | None = 0.05,
    target_variance: float | None = None,
    confidence: float = 0.9,
    scheme: str = "instance",
    bound: str = "worst_case",
    n_max: int = 1_000_000,
) -> int:
    """Smallest number of draws for system ``name`` whose precision bound meets the target.

    The variance of the joint precision estimate is bounded with the empirical
    terms of the existing draws and, for the system's own draws, the worst case
    over labels (bound="worst_case") or the cruder second moment with f = 1
    (bound="second_moment", DESIGN §6.4). target_variance overrides
    target_halfwidth (half-width of the ``confidence`` normal interval).
    Existing draws of ``name`` itself are ignored: the result is its total n.
    Returns n_max when even n_max draws do not reach the target.
    """
    if target_variance is None:
        if target_halfwidth is None or target_halfwidth <= 0:
            raise ValueError("give a positive target_halfwidth or target_variance")
        target_variance = (target_halfwidth / ci.z_value(confidence)) ** 2
    problem = _PlanProblem(pop, ev, pop.index_of(name), scheme, bound)

    def ok(n: int) -> bool:
        return problem.variance_bound(n) <= target_variance

    if ok(0):
        return 0
    hi = 1
    while not ok(hi):
        if hi >= n_max:
            return n_max
        hi = min(2 * hi, n_max)
    lo = hi // 2  # fails (or is 0, which failed above)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
