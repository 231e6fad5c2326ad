"""The distinct-pairs Horvitz–Thompson estimator over a Population and its Evidence
(docs/internals/estimation.md §12): joint precision, recall and F1 that count each
labelled pair once, and the planner that sizes a new system's sample for it.

`distinct.py` and `distinct_recall.py` hold the formulas over plain matrices; this
module gathers their inputs from the service's structures and applies the interval
rules the joint estimator has (§4): sure bounds, few unlabelled pairs, unreached mass,
systems that only borrow others' draws.

Soft (crowd-posterior) labels enter as the joint estimator takes them: a pair's
P(true) re-weighted to the predicting systems' precision (`recall.pair_true_share`),
each system's right mass lifted to its own P(right) where that is larger, and the
labels' own Bernoulli spread added to the sampling variance of every HT sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .adaptive import target_of, top_up_size
from .distinct import (
    _P_MAX,
    Design,
    SharedRows,
    ht_covariance,
    ht_ratio,
    inclusion_probability,
    plan_distinct,
)
from .evidence import UNLABELLED, Evidence, Interval
from .importance import PairTerms, at_pairs, label_variance_at_pairs, pair_terms
from .population import Population
from .precision import MIN_BORROWED, LabelState, apply_bounds, label_bounds
from .products import content_key, frozen
from .recall import (
    Clusters,
    combine_recall,
    exhaustive_hits,
    nu_at_edges,
    pair_true_share,
    predicted_relations,
)


@dataclass(frozen=True)
class DistinctJoint:
    """Joint precision per scheme, and under "instance" joint recall and the
    precision–recall covariance F1 needs (None / zeros without an exhaustive sample)."""

    precision: dict[str, Interval]
    recall: Interval | None
    cov: np.ndarray


def distinct_design(pop: Population, ev: Evidence, draw_scheme: str) -> Design:
    """The draw scheme's design at the distinct labelled drawn pairs: the same for every
    evidence with ``ev``'s draws and labels (whatever their soft labels)."""
    return Design.of(pop.stacked(draw_scheme)[:, ev.pairs].tocsr(), ev.n)


def _unreached(pop: Population, scheme: str, draw_scheme: str, n: np.ndarray) -> np.ndarray:
    """Per system, the mass (under ``scheme``) on pairs no system with draws can reach
    (π = 0): the draws say nothing about it. A pass over every prediction, the same for
    each replicate of the labels and each label batch: remembered by the population."""
    def make() -> np.ndarray:
        pi_all = inclusion_probability(pop.stacked(draw_scheme), n)
        return frozen(np.asarray(pop.stacked(scheme) @ (pi_all <= 0).astype(float)).ravel())

    return pop.memo(("unreached", scheme, draw_scheme, content_key(n)), make)


def _precision(pop: Population, ev: Evidence, scheme: str, draw_scheme: str,
               design: Design, z: float, state: LabelState,
               points_only: bool = False, terms: PairTerms | None = None
               ) -> tuple[Interval, np.ndarray, np.ndarray, sp.csr_matrix, sp.csr_matrix]:
    """Hájek precision Σ_S Y/π / Σ_S X/π with Y the right mass and X the mass under
    ``scheme`` at the drawn pairs, π from the draw scheme's design.

    The interval is Wilson's at the design size n* = P̂(1 − P̂)/V̂, n* capped at the
    draws that landed on the system's pairs divided by its unlabelled mass U (only the
    unlabelled part is uncertain when each pair counts once), inside the sure bounds.
    Returns it with the estimate, the estimated mass Σ_S X/π, Y and X.
    ``points_only``: no variance (the interval is then not meaningful; the estimate is
    the same, the sure bounds and the interval rules applied alike).
    """
    m, n, pi = len(pop), ev.n, design.pi
    pf, _ = at_pairs(pop, ev, scheme, terms)
    y = pf.tocsr()
    x = design.P if scheme == draw_scheme else pop.stacked(scheme)[:, ev.pairs].tocsr()
    est, var, mass = ht_ratio(y, x, design, variance=not points_only)
    spread = None if points_only else label_variance_at_pairs(pop, ev, scheme, state=state)
    if spread is not None:
        # Soft labels: Σ_S p² c(1 − c)/π², each right mass a Bernoulli mean.
        with np.errstate(divide="ignore", invalid="ignore"):
            var = var + np.where(mass > 0, (spread.tocsr() @ (1.0 / pi**2)) / mass**2, 0.0)
    bounds = label_bounds(pop, ev, scheme, state=state)
    rows = np.repeat(np.arange(m), np.diff(x.indptr))  # each stored entry's system
    draws_at = np.asarray(ev.counts.sum(axis=0)).ravel()
    landed = np.bincount(rows, (x.data > 0) * draws_at[x.indices], minlength=m)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.nan_to_num(est)
        nstar = np.where(var > 0, e * (1 - e) / var, landed)
        size = np.minimum(nstar, landed / np.maximum(bounds.unknown, 1e-9))
        lo, hi = ci.wilson(e, size, z)
        # Few pairs of the system among the drawn ones and no draws of its own: its
        # estimate rests on a handful of others' draws; Wilson at their Kish size.
        w2 = np.bincount(rows, (x.data / pi[x.indices]) ** 2, minlength=m)
        kish = np.where(mass > 0, mass**2 / w2, 0.0)
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


def exhaustive_covered(pop: Population, ev: Evidence, draw_scheme: str) -> np.ndarray:
    """Which instances of Ŷ0 lie on a pair some system with draws predicts (π > 0)."""
    covered = np.zeros(len(ev.y_pairs), dtype=bool)
    known = ev.y_pairs >= 0
    sampled = np.flatnonzero(ev.n > 0)
    if len(sampled) and known.any():
        pt = pop.stacked(draw_scheme)
        covered[known] = np.asarray(
            (pt[sampled][:, ev.y_pairs[known]] > 0).sum(axis=0)).ravel() > 0
    return covered


@dataclass(frozen=True)
class NuParts:
    """ν̂'s pieces over the drawn pairs S: G (systems × S), D = (G − tκ)₊ at G's entries
    (X = tκ + D), the shared tκ (0 on pairs that cannot be true), and per system ν̂, its
    variance, Wilson upper end and denominator Σ_S X/π."""

    g: sp.csr_matrix
    d: sp.csr_matrix
    tk: np.ndarray
    nu: np.ndarray
    v_nu: np.ndarray
    nu_hi: np.ndarray
    den: np.ndarray

    def residual(self, rows: slice | np.ndarray = slice(None)) -> SharedRows:
        """e_ν = (G − ν̂X)/den = ((G − ν̂D) − ν̂ tκ)/den for systems ``rows``."""
        e = np.nan_to_num(self.nu[rows])
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_d = np.where(self.den[rows] > 0, 1.0 / self.den[rows], 0.0)
        g, d = self.g[rows], self.d[rows]
        sparse = (sp.diags(inv_d) @ (g - sp.diags(e) @ d)).tocsr()
        return SharedRows(sparse, -e * inv_d, self.tk)


def _nu_label_spread(g: sp.csr_matrix, tk: np.ndarray, kappa: np.ndarray, e: np.ndarray,
                     pi: np.ndarray) -> np.ndarray:
    """Σ_S Var(G_i − e_i X_i)/π² under the soft labels, per system: at pair u
    max(g − 2eκg + e²κx − (g − ex)², 0) with x = max(tκ, g); where system i names none
    of u's true relations (g = 0, x = tκ) that is e_i² tκ(κ − tκ), a shared row."""
    ip2 = 1.0 / pi**2
    base = np.maximum(tk * (kappa - tk), 0.0) * ip2
    coo = g.tocoo()
    r, c, gv = coo.row, coo.col, coo.data
    er, x = e[r], np.maximum(tk[c], gv)
    s = np.maximum(gv - 2 * er * kappa[c] * gv + er * er * kappa[c] * x - (gv - er * x) ** 2,
                   0.0)
    on = np.bincount(r, s * ip2[c] - er * er * base[c], minlength=g.shape[0])
    return e * e * base.sum() + on


def _nu(pop: Population, ev: Evidence, draw_scheme: str, design: Design, z: float,
        points_only: bool = False, terms: PairTerms | None = None) -> NuParts | None:
    """ν̂_i = Σ_S G_i/π / Σ_S X_i/π over the drawn pairs, its variance and Wilson upper
    end, and the sums' pieces (None: no drawn pair may be true).

    G_i(u): the true relations of pair u system i names (soft: their P(right));
    X_i(u) = max(t κ, G_i): the pair's expected true relations, t its P(true) as joint
    recall re-weights it (`pair_true_share`), κ its relations if true; lifted to G_i
    where system i's priors say more than the pair's (one calibration per system, as
    `recall_instance`). Soft labels add Σ_S Var(G_i − ν X_i)/π² under the labels.
    Every system has X on every pair that may be true (tκ is shared): X = tκ + D and
    the residuals are `SharedRows`, so nothing (systems × pairs) is dense.
    """
    n, pi = ev.n, design.pi
    ps = design.P
    q = np.asarray(ps.T @ (n / max(n.sum(), 1))).ravel()
    t = pair_true_share(ev, ps, n, q, predicted=predicted_relations(pop, ev.pairs))
    kappa = ev.relations_per_true(ev.pairs)
    tk = np.maximum(t * kappa, 0.0)
    _, g = at_pairs(pop, ev, draw_scheme, terms)
    g = g.tocsr()
    if not ((tk > 0).any() or g.nnz):
        return None
    d = g.copy()
    d.data = np.maximum(d.data - tk[d.indices], 0.0)
    x = SharedRows(d, np.ones(g.shape[0]), tk)
    nu, v_nu, den = ht_ratio(g, x, design, variance=not points_only)
    if ev.true_prob is not None and not points_only:
        spread = _nu_label_spread(g, tk, kappa, np.nan_to_num(nu), pi)
        with np.errstate(divide="ignore", invalid="ignore"):
            v_nu = v_nu + np.where(den > 0, spread / den**2, 0.0)
    w = tk / pi
    kish = float(w.sum() ** 2 / (w * w).sum()) if (w > 0).any() else 0.0
    v_nu, nu_hi = nu_at_edges(nu, v_nu, kish, z)
    return NuParts(g, d, tk, nu, v_nu, nu_hi, den)


def distinct_joint(pop: Population, ev: Evidence, draw_scheme: str, schemes: list[str],
                   confidence: float, state: LabelState | None = None,
                   points_only: bool = False, terms: PairTerms | None = None,
                   design: Design | None = None) -> DistinctJoint:
    """Joint precision for every scheme in ``schemes`` and, under "instance" (recall's
    uniform weight over true instances, whatever the draws' scheme), joint recall
    θ̂ ν̂ + ρ̂ with the HT ν̂ and Cov(P̂, r̂) = θ̂ Cov(P̂, ν̂) for F1.

    Reweighted schemes: their masses are the totals, the draw scheme's design gives π.
    ``points_only``: the same estimates without the variances (the noise correction's
    replicates need only the points); the intervals and ``cov`` are then not computed.
    ``state``, ``terms``, ``design``: `LabelState(pop, ev)`, `pair_terms(pop, ev, state)`
    and `distinct_design(pop, ev, draw_scheme)` if made before (every scheme reads the
    labels' verdicts from the first two; replicates of the labels share the third).
    """
    m = len(pop)
    z = ci.z_value(confidence)
    state = LabelState(pop, ev) if state is None else state
    terms = pair_terms(pop, ev, state) if terms is None else terms
    design = distinct_design(pop, ev, draw_scheme) if design is None else design
    out: dict[str, Interval] = {}
    cov = np.zeros(m)
    recall = None
    for s in schemes:
        iv, est, mass, y, x = _precision(pop, ev, s, draw_scheme, design, z, state,
                                         points_only, terms)
        out[s] = iv
        if s != "instance" or not len(ev.y_pairs):
            continue
        nu_parts = _nu(pop, ev, draw_scheme, design, z, points_only, terms)
        if nu_parts is None:
            continue
        r, _, lo, hi, theta = combine_recall(nu_parts.nu, nu_parts.v_nu, nu_parts.nu_hi, ev.n,
                                             exhaustive_covered(pop, ev, draw_scheme),
                                             exhaustive_hits(pop, ev), Clusters(ev.y_docs),
                                             confidence)
        recall = Interval(r, lo, hi)
        if points_only:
            continue
        cov = np.nan_to_num(theta * _precision_nu_cov(ev, y, x, est, mass, nu_parts, design))
    return DistinctJoint(out, recall, cov)


def _precision_nu_cov(ev: Evidence, y: sp.csr_matrix, x: sp.csr_matrix, est: np.ndarray,
                      mass: np.ndarray, nu_parts: NuParts, design: Design) -> np.ndarray:
    """Cov(P̂_i, ν̂_i): the HT covariance of the linearised residuals
    e_P = (Y − P̂X)/M̂ and e_ν = (G − ν̂X)/den, both over all of S (the fixed-n term sums
    each residual over its own pairs; e_ν is 0 where the pair cannot be true), and with
    soft labels the labels' own covariance on the pairs both sums share:
    Σ_u Y_iu (1 − G_iu − ν̂_i (κ_u − X_iu))/π_u² over the pairs that may be true."""
    nu, den, g, d, tk = nu_parts.nu, nu_parts.den, nu_parts.g, nu_parts.d, nu_parts.tk
    pi = design.pi
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_m = np.where(mass > 0, 1.0 / mass, 0.0)
        inv_d = np.where(den > 0, 1.0 / den, 0.0)
        e_p = (sp.diags(inv_m) @ (y - sp.diags(np.nan_to_num(est)) @ x)).tocsr()
    out = ht_covariance(e_p, nu_parts.residual(), design)
    if ev.true_prob is not None:
        may = (tk > 0).astype(float)
        may[np.unique(g.indices)] = 1.0
        ip2 = 1.0 / pi**2
        kappa = ev.relations_per_true(ev.pairs) * may
        e = np.nan_to_num(nu)
        ones = np.asarray(y @ (may * ip2)).ravel()
        named = np.asarray(y.multiply(g).tocsr() @ ip2).ravel()
        lifted = np.asarray(y @ ((kappa - tk) * ip2)).ravel() \
            - np.asarray(y.multiply(d).tocsr() @ ip2).ravel()
        out = out + (ones - named - e * lifted) * inv_m * inv_d
    return out


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
    target_variance, halfwidth = target_of(target_halfwidth, target_variance, confidence)
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
    right = np.asarray(ev.correct(inst["pairs"][mine], inst["predicates"][mine],
                                  inst["system"][mine]), float)
    probs = pop.instance_probs(scheme)[mine]
    at = np.searchsorted(cols, inst["pairs"][mine])
    h_mass = np.bincount(at, weights=probs * right, minlength=len(cols))
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(p > 0, h_mass / p, 0.0)
    return plan_distinct(p, q_old, np.clip(h, 0.0, 1.0), labelled, target_variance,
                         halfwidth, n_max)


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
    return top_up_size(n_k, float(iv.hi[k] - iv.lo[k]) / 2, target_halfwidth)


def distinct_points(pop: Population, ev: Evidence, draw_scheme: str,
                    schemes: Sequence[str] | None, confidence: float,
                    points: Mapping[tuple[str, str, str], np.ndarray],
                    state: LabelState | None = None, design: Design | None = None
                    ) -> dict[tuple[str, str, str], np.ndarray]:
    """The joint kind's point estimates under the distinct estimator, keyed as
    `PointPlan.estimates` keys them, for the noise correction's replicates: precision and
    recall from `distinct_joint`, F1 from them; ``points``: the replicate's importance
    points, whose recall keeps its value where the labels make it surely 0."""
    schemes = [draw_scheme] if schemes is None else list(schemes)
    # One reading of the verdicts for every part (``state``: a PointPlan's, its floats).
    state = LabelState(pop, ev) if state is None else state
    ht = distinct_joint(pop, ev, draw_scheme, schemes, confidence, state, points_only=True,
                        design=design)
    bounds = label_bounds(pop, ev, "instance", state=state)
    zero = bounds.exact & (bounds.known == 0)
    out = {}
    for s in schemes:
        p = ht.precision[s].estimate
        out[(s, "precision", "joint")] = p
        r = points.get((s, "recall", "joint"))
        if s == "instance" and ht.recall is not None:
            r = np.where(zero, 0.0, ht.recall.estimate)
        if r is None:  # no exhaustive sample: recall (and F1) are not estimated
            continue
        f1 = ci.f1_score(np.nan_to_num(p), np.nan_to_num(r))
        out[(s, "recall", "joint")] = r
        out[(s, "f1", "joint")] = np.where(np.isnan(p) | np.isnan(r), np.nan, f1)
    return out


@dataclass(frozen=True)
class Residuals:
    """What `difference.compare` needs of the distinct estimator for some systems: the
    design at the distinct drawn pairs S, each system's linearised precision residual
    (Y − P̂X)/T̂_X over S, and under "instance" recall's ν̂ residual (G − ν̂X)/den over S
    (None where recall has no draw part) with ν̂."""

    design: Design
    precision: sp.csr_matrix
    nu_residual: sp.csr_matrix | None
    nu: np.ndarray | None


def distinct_residuals(pop: Population, ev: Evidence, scheme: str, draw_scheme: str,
                       rows: Sequence[int], confidence: float) -> Residuals:
    """`Residuals` of systems ``rows`` (in that order), as `distinct_joint` linearises
    them for its precision–recall covariance."""
    z = ci.z_value(confidence)
    rows = np.asarray(rows, dtype=np.int64)
    design = distinct_design(pop, ev, draw_scheme)
    _, est, mass, y, x = _precision(pop, ev, scheme, draw_scheme, design, z,
                                    LabelState(pop, ev))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_m = np.where(mass[rows] > 0, 1.0 / mass[rows], 0.0)[:, None]
    e_p = (y[rows] - x[rows].multiply(np.nan_to_num(est[rows])[:, None])).multiply(inv_m).tocsr()
    parts = (_nu(pop, ev, draw_scheme, design, z)
             if scheme == "instance" and len(ev.y_pairs) else None)
    if parts is None:
        return Residuals(design, e_p, None, None)
    # A few rows: the shared part made explicit.
    e_nu = sp.csr_matrix(parts.residual(rows).toarray())
    return Residuals(design, e_p, e_nu, parts.nu[rows])
