"""Adaptive sample size for a new system (docs/internals/estimation.md §5).

The planner bounds the variance the joint precision estimate of system k will have
once k has n draws of its own, and returns the smallest n that meets the target.
Labels known today are used as they are; every pair of k *without* a label is
given its worst-case label. In particular the existing draws' contribution is a
bound over the whole of each donor's distribution, not their empirical variance:
draws that happened to miss k's pairs say nothing about them (a variance of 0 is
no evidence). The sure bounds [L, L + U] of the labels cap the interval width at
U, so n = 0 when U already meets the target.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import intervals as ci
from .evidence import UNLABELLED, Evidence
from .population import Population

BOUNDS = ("worst_case", "second_moment")


def worst_case_variance(p: np.ndarray, z: np.ndarray, a0: float = 0.0, b0: float = 0.0) -> float:
    """max over labels f ∈ [0,1]^X of a0 + E_p[z² f] − (b0 + E_p[z f])².

    a0, b0 are the second and first moments of the elements whose labels are known
    (0 without any), p and z those of the free elements. The objective is concave
    in f, so the maximiser is a threshold rule: f = 1 on the largest z, one
    fractional element at the boundary. Scanning the sorted elements with the
    optimal fraction at each boundary finds the maximum. With z ≡ 1 and no known
    elements this is the binomial worst case 1/4.
    """
    order = np.argsort(-z, kind="stable")
    p, z = p[order], z[order]
    pz2, pz = p * z * z, p * z
    a = a0 + np.concatenate([[0.0], np.cumsum(pz2)[:-1]])  # E[z² f] of the full prefix
    b = b0 + np.concatenate([[0.0], np.cumsum(pz)[:-1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip(
            np.where(pz > 0, (z - 2 * b) / (2 * z), 0.0) / np.where(p > 0, p, 1), 0, 1
        )
    v = a + frac * pz2 - (b + frac * pz) ** 2
    full = a0 + pz2.sum() - (b0 + pz.sum()) ** 2
    return float(max(v.max(initial=a0 - b0 * b0), full, 0.0))


class _PlanProblem:
    """Everything about the new system that does not depend on the candidate n."""

    def __init__(self, pop: Population, ev: Evidence, k: int, scheme: str, bound: str) -> None:
        if bound not in BOUNDS:
            raise ValueError(f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}")
        self.k, self.bound = k, bound
        self.n = ev.n.astype(float).copy()
        self.n[k] = 0  # the new system's own draws are what we are planning
        self.overlap = pop.overlap(scheme, scheme)[k].copy()
        system = pop._systems[k]
        cols, p = system.pair_row(scheme)
        bt = pop.stacked(scheme)[:, cols].T.tocsr()  # (|X_k| × m): P_j on k's pairs
        # Known labels: h = share of k's mass on a pair that is correct.
        correct = ev.correct(system.pairs, system.predicates)
        _, inv = np.unique(system.pairs, return_inverse=True)
        pf = np.bincount(inv.ravel(), weights=system.probs(scheme) * correct, minlength=len(cols))
        labelled = ev.label[cols] != UNLABELLED
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where(labelled & (p > 0), pf / p, 0.0)
        self.unknown = float(p[~labelled].sum())
        # z = P_k / q_k with q_k = (others + c·n_new·P_k) / norm, so the order of z
        # is the order of P_k / others whatever n_new is: sort k's pairs once, by z
        # descending, and every donor's entries come out in the order the worst
        # case needs (a threshold rule on z).
        others = self.overlap * self.n
        with np.errstate(divide="ignore"):
            ratio = p / np.asarray(bt @ others).ravel()
        order = np.argsort(-ratio, kind="stable")
        self.p, self.labelled, self.h = p[order], labelled[order], h[order]
        self.bt = bt[order].tocsc()
        self.bt.sort_indices()
        # The entries that can ever matter: donors with draws, and k itself. Per
        # entry, what does not depend on n (pj·h on labelled pairs, pj elsewhere).
        col = np.repeat(np.arange(self.bt.shape[1]), np.diff(self.bt.indptr))
        keep = (self.n[col] > 0) | (col == k)
        self.rows, self.col, self.pj = self.bt.indices[keep], col[keep], self.bt.data[keep]
        lab = self.labelled[self.rows]
        self.ph = np.where(lab, self.pj * self.h[self.rows], 0.0)  # known part, f = h
        self.phh = self.ph * self.h[self.rows]  # pj h², for the second moment
        self.pfree = np.where(lab, 0.0, self.pj)  # free part, f chosen adversarially
        self.own = self.col == k

    def variance_bound(self, n_new: int) -> float:
        """Worst case over the unlabelled pairs of Σ_j (w_kj²/n_j) Var_{P_j}[P_k h / q_k]."""
        n = self.n.copy()
        n[self.k] = n_new
        w = self.overlap * n
        if w.sum() <= 0:
            return np.inf
        w /= w.sum()
        q = self.bt @ w
        if np.any(q[self.p > 0] <= 0):
            return np.inf  # part of the system is unreachable by any draw
        z = np.divide(self.p, q, out=np.zeros_like(q), where=q > 0)
        donor = (w > 0) & (n > 0)
        m = len(w)
        sel = None if n_new > 0 else ~self.own
        col = self.col if sel is None else self.col[sel]
        zr = z[self.rows] if sel is None else z[self.rows[sel]]
        ph = self.ph if sel is None else self.ph[sel]
        phh = self.phh if sel is None else self.phh[sel]
        # Known labels enter as they are: E_j[z² h²] and E_j[z h] over labelled pairs.
        a0 = np.bincount(col, weights=phh * zr * zr, minlength=m)
        b0 = np.bincount(col, weights=ph * zr, minlength=m)
        pz = (self.pfree if sel is None else self.pfree[sel]) * zr
        pz2 = pz * zr
        if self.bound == "second_moment":  # the paper's cruder bound: f = 1 where unknown
            worst = a0 + np.bincount(col, weights=pz2, minlength=m)
        else:
            pj = self.pj if sel is None else self.pj[sel]
            worst = _worst_case_by_donor(col, pj, zr, pz, pz2, a0, b0, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(donor, w * w / n * worst, 0.0)
        return float(terms.sum())

    def unknown_after(self, n_new: int) -> float:
        """Expected mass of k's pairs still unlabelled after n_new draws of its own."""
        free = ~self.labelled
        return float(np.sum(self.p[free] * (1 - self.p[free]) ** n_new))


def _worst_case_by_donor(
    col: np.ndarray,
    pj: np.ndarray,
    zr: np.ndarray,
    pz: np.ndarray,
    pz2: np.ndarray,
    a0: np.ndarray,
    b0: np.ndarray,
    m: int,
) -> np.ndarray:
    """worst_case_variance for every donor at once; entries sorted by donor, then z
    descending (pz = pz2 = 0 where the label is known)."""
    worst = np.maximum(a0 - b0 * b0, 0.0)
    if len(col) == 0:
        return worst
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    seg = np.cumsum(np.r_[False, col[1:] != col[:-1]])  # segment of each entry
    cs2, cs1 = np.cumsum(pz2), np.cumsum(pz)
    base2 = (cs2 - pz2)[starts][seg]  # sums before each segment
    base1 = (cs1 - pz)[starts][seg]
    a = a0[col] + (cs2 - pz2) - base2  # prefix sums excluding the entry itself
    b = b0[col] + (cs1 - pz) - base1
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip(np.where(pz > 0, (zr - 2 * b) / (2 * zr) / pj, 0.0), 0, 1)
    v = np.where(pz > 0, a + frac * pz2 - (b + frac * pz) ** 2, -np.inf)
    best = np.maximum.reduceat(v, starts)
    full = a0 + np.bincount(col, weights=pz2, minlength=m)
    full -= (b0 + np.bincount(col, weights=pz, minlength=m)) ** 2
    donors = col[starts]
    worst[donors] = np.maximum(worst[donors], best)
    return np.maximum(worst, full)


def smallest_n(ok: Callable[[int], bool], n_max: int) -> int:
    """Smallest n in [0, n_max] with ok(n) (ok monotone), n_max if none."""
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


def target_of(target_halfwidth: float | None, target_variance: float | None,
              confidence: float) -> tuple[float, float]:
    """(target variance, normal half-width at ``confidence``) from either; the variance
    wins when both are given. A missing or non-positive target is a ValueError."""
    z = ci.z_value(confidence)
    if target_variance is None:
        if target_halfwidth is None or target_halfwidth <= 0:
            raise ValueError("give a positive target_halfwidth or target_variance")
        target_variance = (target_halfwidth / z) ** 2
    elif target_variance <= 0:
        raise ValueError("target_variance must be positive")
    return target_variance, z * float(np.sqrt(target_variance))


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
    """Smallest number of draws for system ``name`` whose precision interval meets the target.

    The target is met when either (a) the worst-case bound on the variance of the
    joint estimate is at most the target variance, or (b) the labels' sure bounds
    are narrow enough: the unlabelled mass U is at most the target width now (no
    draws), or after n own draws is at most the target width with probability
    ≥ 95% (for small systems, labelling all their pairs is the cheaper way). The variance
    bound uses the known labels and, on every unlabelled pair, the worst case over
    labels (bound="worst_case") or the cruder second moment with f = 1
    (bound="second_moment", the paper's). target_variance overrides
    target_halfwidth (half-width of the ``confidence`` normal interval).
    Existing draws of ``name`` itself are ignored: the result is its total n.
    Returns n_max when even n_max draws do not reach the target.
    """
    target_variance, halfwidth = target_of(target_halfwidth, target_variance, confidence)
    problem = _PlanProblem(pop, ev, pop.index_of(name), scheme, bound)
    if problem.unknown <= 2 * halfwidth:
        return 0
    by_variance = smallest_n(lambda n: problem.variance_bound(n) <= target_variance, n_max)
    if by_variance == 0:
        return 0
    # E[U'] ≤ h/10 makes U' ≤ 2h (the target width) with probability ≥ 95% (Markov).
    by_bounds = smallest_n(lambda n: problem.unknown_after(n) <= halfwidth / 10, by_variance)
    return min(by_variance, by_bounds)


def top_up_size(n: int, halfwidth: float, target_halfwidth: float) -> int:
    """Further draws for a system whose interval of half-width w came out wider than the
    target h after n draws: the variance falls as 1/n, so n·((w/h)² − 1), plus one;
    0 when it is as narrow as planned (or w is not finite)."""
    if n <= 0 or not np.isfinite(halfwidth) or halfwidth <= target_halfwidth:
        return 0
    return int(np.ceil(n * ((halfwidth / target_halfwidth) ** 2 - 1))) + 1
