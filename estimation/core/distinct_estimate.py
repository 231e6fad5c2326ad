"""The distinct-pairs Horvitz–Thompson estimator over a Population and its Evidence
(docs/internals/estimation.md §12): joint precision, recall and F1 that count each
labelled pair once, and the planner that sizes a new system's sample for it.

`distinct.py` and `distinct_recall.py` hold the formulas over plain matrices; this
module gathers their inputs from the service's structures and applies the interval
rules the joint estimator has (§4): sure bounds, few unlabelled pairs, unreached mass,
systems that only borrow others' draws.

Hard labels only: with soft labels a pair's truth is a probability and recall's
weights need the per-system calibration the joint estimator has (recall.py); the
distinct path refuses them rather than guess (`SoftLabelsError`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .distinct import _P_MAX, ht_covariance, ht_ratio, inclusion_probability, plan_distinct
from .evidence import UNLABELLED, Evidence, Interval
from .importance import at_pairs
from .population import Population
from .precision import MIN_BORROWED, LabelState, apply_bounds, label_bounds
from .recall import Clusters, combine_recall, exhaustive_hits, nu_at_edges


class SoftLabelsError(ValueError):
    """The distinct estimator was asked to use soft (crowd-posterior) labels."""


@dataclass(frozen=True)
class DistinctJoint:
    """Joint precision per scheme, and under "instance" joint recall and the
    precision–recall covariance F1 needs (None / zeros without an exhaustive sample)."""

    precision: dict[str, Interval]
    recall: Interval | None
    cov: np.ndarray


def _design(pop: Population, ev: Evidence, draw_scheme: str
            ) -> tuple[sp.csr_matrix, np.ndarray]:
    """The draw scheme's rows at the distinct labelled drawn pairs, and their π."""
    ps = pop.stacked(draw_scheme)[:, ev.pairs].tocsr()
    return ps, inclusion_probability(ps, ev.n)


def _unreached(pop: Population, scheme: str, draw_scheme: str, n: np.ndarray) -> np.ndarray:
    """Per system, the mass (under ``scheme``) on pairs no system with draws can reach
    (π = 0): the draws say nothing about it."""
    pi_all = inclusion_probability(pop.stacked(draw_scheme), n)
    return np.asarray(pop.stacked(scheme) @ (pi_all <= 0).astype(float)).ravel()


def _precision(pop: Population, ev: Evidence, scheme: str, draw_scheme: str,
               ps: sp.csr_matrix, pi: np.ndarray, z: float, state: LabelState
               ) -> tuple[Interval, np.ndarray, np.ndarray, sp.csr_matrix, sp.csr_matrix]:
    """Hájek precision Σ_S Y/π / Σ_S X/π with Y the right mass and X the mass under
    ``scheme`` at the drawn pairs, π from the draw scheme's design.

    The interval is Wilson's at the design size n* = P̂(1 − P̂)/V̂, n* capped at the
    draws that landed on the system's pairs divided by its unlabelled mass U (only the
    unlabelled part is uncertain when each pair counts once), inside the sure bounds.
    Returns it with the estimate, the estimated mass Σ_S X/π, Y and X.
    """
    m, n = len(pop), ev.n
    pf, _ = at_pairs(pop, ev, scheme)
    y = pf.tocsr()
    x = ps if scheme == draw_scheme else pop.stacked(scheme)[:, ev.pairs].tocsr()
    est, var, mass = ht_ratio(y, x, pi, ps, n)
    bounds = label_bounds(pop, ev, scheme, state=state)
    landed = np.asarray((x > 0).astype(float) @ np.asarray(ev.counts.sum(axis=0)).ravel()
                        ).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.nan_to_num(est)
        nstar = np.where(var > 0, e * (1 - e) / var, landed)
        size = np.minimum(nstar, landed / np.maximum(bounds.unknown, 1e-9))
        lo, hi = ci.wilson(e, size, z)
        # Few pairs of the system among the drawn ones and no draws of its own: its
        # estimate rests on a handful of others' draws; Wilson at their Kish size.
        w = x.multiply((1.0 / pi)[None, :]).tocsr()
        kish = np.where(mass > 0, mass**2 / np.asarray(w.multiply(w).sum(axis=1)).ravel(), 0.0)
    few = (n == 0) & (kish < MIN_BORROWED)
    lo_f, hi_f = ci.wilson(e, kish, z)
    est = np.where(few | (mass <= 0), np.nan, est)
    lo, hi = np.where(few, lo_f, lo), np.where(few, hi_f, hi)
    lo, hi = np.where(mass > 0, lo, 0.0), np.where(mass > 0, hi, 1.0)
    # Mass no draw can reach: the ratio speaks for the reached part only.
    missing = _unreached(pop, scheme, draw_scheme, n) if (n == 0).any() else np.zeros(m)
    part = missing > 1e-12
    est = np.where(part, np.nan, est)
    lo = np.where(part, lo * (1 - missing), lo)
    hi = np.where(part, np.minimum(1.0, hi * (1 - missing) + missing), hi)
    return apply_bounds(Interval(est, lo, hi), bounds, z), est, mass, y, x


def _covered(pop: Population, ev: Evidence, draw_scheme: str) -> np.ndarray:
    """Which instances of Ŷ0 lie on a pair some system with draws predicts (π > 0)."""
    covered = np.zeros(len(ev.y_pairs), dtype=bool)
    known = ev.y_pairs >= 0
    sampled = np.flatnonzero(ev.n > 0)
    if len(sampled) and known.any():
        pt = pop.stacked(draw_scheme)
        covered[known] = np.asarray(
            (pt[sampled][:, ev.y_pairs[known]] > 0).sum(axis=0)).ravel() > 0
    return covered


def distinct_joint(pop: Population, ev: Evidence, draw_scheme: str, schemes: list[str],
                   confidence: float, state: LabelState | None = None) -> DistinctJoint:
    """Joint precision for every scheme in ``schemes`` and, under "instance" (recall's
    uniform weight over true instances, whatever the draws' scheme), joint recall
    θ̂ ν̂ + ρ̂ with the HT ν̂ and Cov(P̂, r̂) = θ̂ Cov(P̂, ν̂) for F1.

    Reweighted schemes: their masses are the totals, the draw scheme's design gives π.
    """
    if ev.true_prob is not None:
        raise SoftLabelsError(
            "the distinct estimator takes hard labels; soft crowd labels need the joint one")
    m = len(pop)
    z = ci.z_value(confidence)
    state = LabelState(pop, ev) if state is None else state
    ps, pi = _design(pop, ev, draw_scheme)
    out: dict[str, Interval] = {}
    cov = np.zeros(m)
    recall = None
    for s in schemes:
        iv, est, mass, y, x = _precision(pop, ev, s, draw_scheme, ps, pi, z, state)
        out[s] = iv
        if s != "instance" or not len(ev.y_pairs):
            continue
        # ν: G_i(u) = the true relations of pair u that system i names (its right
        # instances there), κ(u) = the pair's true relations (0 on a false pair).
        _, g = at_pairs(pop, ev, draw_scheme)
        g = g.tocsr()
        kappa = np.where(ev.label[ev.pairs] >= 0, ev.relations_per_true(ev.pairs), 0.0)
        true = np.flatnonzero(kappa > 0)
        if not len(true):
            continue
        pt = ps[:, true]
        nu, v_nu, tk = ht_ratio(g[:, true], kappa[true][None, :], pi[true], pt, ev.n)
        wk = kappa[true] / pi[true]
        kish = float(wk.sum() ** 2 / (wk * wk).sum())
        v_nu, nu_hi = nu_at_edges(nu, v_nu, kish, z)
        gy = exhaustive_hits(pop, ev)
        r, _, lo, hi, theta = combine_recall(nu, v_nu, nu_hi, ev.n,
                                             _covered(pop, ev, draw_scheme), gy,
                                             Clusters(ev.y_docs), confidence)
        recall = Interval(r, lo, hi)
        # Cov(P̂_i, ν̂_i): the HT covariance of the linearised residuals.
        with np.errstate(divide="ignore", invalid="ignore"):
            e_p = (y - x.multiply(np.nan_to_num(est)[:, None])).multiply(
                np.where(mass > 0, 1.0 / mass, 0.0)[:, None]).tocsr()
            kk = sp.csr_matrix(np.ones((m, 1))) @ sp.csr_matrix(kappa[None, :])
            e_nu = (g - kk.multiply(np.nan_to_num(nu)[:, None])).multiply(
                np.where(tk > 0, 1.0 / tk, 0.0)[:, None]).tocsr()
        cov = np.nan_to_num(theta * ht_covariance(e_p, e_nu, pi, ps, ev.n))
    return DistinctJoint(out, recall, cov)


def plan_distinct_size(pop: Population, ev: Evidence, name: str,
                       target_halfwidth: float | None = 0.05,
                       target_variance: float | None = None, confidence: float = 0.9,
                       scheme: str = "instance", n_max: int = 1_000_000) -> int:
    """Own draws for system ``name`` whose distinct-pairs precision meets the target.

    Counts only what the labels do not know: the other systems' draws enter through
    q_old = Π_j (1 − P_j(u))^{n_j} and the labelled pairs through their verdicts (a
    draw landing on one costs no label). As `plan_sample_size`, the system's own
    existing draws are ignored: the result is its total n.
    """
    z = ci.z_value(confidence)
    if target_variance is None:
        if target_halfwidth is None or target_halfwidth <= 0:
            raise ValueError("give a positive target_halfwidth or target_variance")
        target_variance = (target_halfwidth / z) ** 2
    elif target_variance <= 0:
        raise ValueError("target_variance must be positive")
    if ev.true_prob is not None:
        raise SoftLabelsError(
            "the distinct planner takes hard labels; soft crowd labels need the joint one")
    k = pop.index_of(name)
    stacked = pop.stacked(scheme).tocsr()
    row = stacked[k]
    cols, p = row.indices, row.data
    if not len(cols):
        return 0
    n = ev.n.astype(float).copy()
    n[k] = 0.0
    logq = stacked[:, cols].copy()
    logq.data = np.log1p(-np.minimum(logq.data, _P_MAX))
    q_old = np.exp(np.asarray(logq.T @ n).ravel())
    labelled = ev.label[cols] != UNLABELLED
    # h: the share of the system's mass on a labelled pair that is right.
    inst = pop.instances()
    mine = np.flatnonzero(inst["system"] == k)
    right = ev.correct(inst["pairs"][mine], inst["predicates"][mine]).astype(float)
    probs = pop.instance_probs(scheme)[mine]
    at = np.searchsorted(cols, inst["pairs"][mine])
    h_mass = np.bincount(at, weights=probs * right, minlength=len(cols))
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(p > 0, h_mass / p, 0.0)
    return plan_distinct(p, q_old, np.clip(h, 0.0, 1.0), labelled, target_variance,
                         z * float(np.sqrt(target_variance)), n_max)


def more_draws(pop: Population, ev: Evidence, name: str, target_halfwidth: float,
               confidence: float = 0.9, scheme: str = "instance") -> int:
    """Further own draws for system ``name`` when its distinct-pairs precision interval
    came out wider than planned: n·((w/h)² − 1) + 1 for half-width w against target h
    (the variance falls as 1/n), 0 when it is as narrow as planned.

    The planner's bound is for the variance; the interval also carries the sure bounds
    and the Wilson size rule, and a few heavy unlabelled pairs can leave it wider:
    asking for more there is what keeps the promise (§12).
    """
    k = pop.index_of(name)
    n_k = int(ev.n[k] + ev.pending[k])
    if n_k == 0:
        return 0
    iv = distinct_joint(pop, ev, scheme, [scheme], confidence).precision[scheme]
    w = float(iv.hi[k] - iv.lo[k]) / 2
    if not np.isfinite(w) or w <= target_halfwidth:
        return 0
    return int(np.ceil(n_k * ((w / target_halfwidth) ** 2 - 1))) + 1
