"""Precision: simple and joint estimates, their intervals, and the sure bounds from labels.

Two kinds of evidence are combined (docs/internals/estimation.md §4):

- the *sampling* interval of the importance-sampling estimate, whose width never
  goes below what the draws that actually reached the system support (the Kish
  size of their weights: 0 when no draw landed on the system's pairs);
- the *sure* bounds: a label decides every system's instance on its pair, so with
  L the p_i-mass of system i's instances whose pair is labelled and correct and U
  the mass without a label, precision lies in [L, L + U] whatever the sampling
  says (given correct labels). U = 0 means the precision is known exactly.

Intersecting an interval with a set that surely holds the truth never lowers its
coverage; the point estimate is clipped into the bounds, which can only bring it
closer to the truth.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .evidence import UNLABELLED, Evidence, Interval
from .importance import (
    ImportanceResult,
    exact_effective_size,
    importance_estimate,
    label_variance_at_pairs,
    mixing_weights,
    unreached_mass,
)
from .population import Population
from .products import content_key, frozen

PRECISION_METHODS = ("wilson_design", "normal")
# A system without draws of its own is estimated from the others' draws only when
# their weights on it amount to at least this many draws (Kish size); below it the
# importance-sampling estimate swings with every landing and is not reported.
MIN_BORROWED = 10.0
# When the unlabelled part of a system is a handful of pairs (Kish count below
# this), the sampling interval is not used: those pairs were never drawn, and an
# interval that extrapolates to them from the drawn ones covers well on average
# but badly given *which* pairs are missing (measured: a 6-pair system with one
# pair left covered 0.5-0.64). The sure bounds are the honest answer there.
MIN_UNKNOWN_PAIRS = 10.0


class LabelBounds(NamedTuple):
    """Sure bounds on precision from labels, per system: [L, L + U] = [known, 1 − wrong]."""

    known: np.ndarray  # (m,) mass of instances on labelled pairs that are correct (L)
    wrong: np.ndarray  # (m,) mass of instances on labelled pairs that are wrong
    exact: np.ndarray  # (m,) every instance of the system is on a labelled pair
    unknown_pairs: np.ndarray  # (m,) Kish count U² / Σ P(u)² of the unlabelled pairs
    # (m,) sd of the right mass under soft labels, Σ p² c(1 − c): the bounds are then
    # sure only up to the labels' own uncertainty (0 with hard labels).
    label_sd: np.ndarray | float = 0.0

    @property
    def upper(self) -> np.ndarray:
        # 1 − wrong rather than L + U: exactly 1 while no label says "wrong".
        return np.where(self.exact, self.known, np.clip(1.0 - self.wrong, self.known, 1.0))

    @property
    def unknown(self) -> np.ndarray:
        """U, the mass of instances whose pair has no label."""
        return self.upper - self.known


class RowSums:
    """A summing layout: ``matrix(data) @ x`` is Σ_{k: rows_k = i} data_k · x[cols_k] per
    row i, summed in k's order, i.e. `np.bincount(rows, weights=data * x[cols],
    minlength=m)` to the bit, several times faster (csr_matvec: no weights array, no
    gather). The index arrays are shared by every matrix of the layout."""

    def __init__(self, rows: np.ndarray, m: int, cols: np.ndarray, width: int) -> None:
        counts = np.bincount(rows, minlength=m) if len(rows) else np.zeros(m, np.int64)
        big = max(len(rows), width) >= 2**31 - 1
        kind = np.int64 if big else np.int32
        self.indptr = np.concatenate([[0], np.cumsum(counts)]).astype(kind)
        self.order = None
        if len(rows) > 1 and (rows[1:] < rows[:-1]).any():
            self.order = np.argsort(rows, kind="stable")  # within a row, k's order
            cols = cols[self.order]
        self.indices = cols.astype(kind)
        self.shape = (m, width)

    def matrix(self, data: np.ndarray | None = None) -> sp.csr_matrix:
        if data is None:
            data = np.ones(len(self.indices))
        elif self.order is not None:
            data = data[self.order]
        return sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape, copy=False)


class LabelState:
    """Which pairs are labelled and which instances are right: the same for every
    scheme, so computed once per estimate. Only entries on labelled pairs are
    visited per scheme (the population's row totals are cached)."""

    def __init__(self, pop: Population, ev: Evidence, verdicts: bool = True) -> None:
        ps = pop.stacked("instance")  # pair level: one entry per (system, pair)
        self.m = len(pop)
        self.sizes = np.diff(ps.indptr)
        self.cache: dict[tuple[str, bool], LabelBounds] = {}
        # Entries (system, pair) whose pair has a label, and their systems.
        # Positions and rows as int32 while they fit: kept through the estimate (and a
        # PointPlan), they are among its largest arrays.
        small = np.int32 if max(ps.nnz, len(pop.instances()["pairs"])) < 2**31 else np.int64
        self.lab = np.flatnonzero(ev.label[ps.indices] != UNLABELLED).astype(small)
        self.lab_rows = (np.searchsorted(ps.indptr, self.lab, side="right") - 1).astype(small)
        # Which of them the system drew itself: the simple estimator's labels.
        self.own = np.zeros(len(self.lab), dtype=bool)
        drawn = ev.counts.tocoo()
        if drawn.nnz and len(self.lab):
            width = np.int64(max(pop.n_pairs, 1))
            keys = self.lab_rows.astype(np.int64) * width + ps.indices[self.lab]  # CSR order
            want = drawn.row.astype(np.int64) * width + ev.pairs[drawn.col]
            self.own[np.searchsorted(keys, want)] = True
        # Instances on labelled pairs, where they sit among the labelled entries,
        # and whether they are right.
        inst = pop.instances()
        entries = pop.instance_entries()
        on = ev.label[inst["pairs"]] != UNLABELLED
        self.judged = np.flatnonzero(on).astype(small)
        self.judged_at = np.searchsorted(self.lab, entries[self.judged]).astype(small)
        # `verdicts=False`: the caller gives them (a PointPlan per call, `for_evidence`).
        self.right = ev.correct(
            inst["pairs"][self.judged], inst["predicates"][self.judged], inst["system"][self.judged]
        ) if verdicts else None
        self.soft = ev.true_prob is not None
        # Scheme-free pieces of `label_bounds`, and per scheme the masses it gathers
        # (the same for the simple and the joint bounds).
        self.judged_rows = self.lab_rows[self.judged_at]
        # Per-system sums over the labelled entries and the judged instances.
        self.lab_sums = RowSums(self.lab_rows, self.m, np.arange(len(self.lab)), len(self.lab))
        self.judged_sums = RowSums(self.judged_rows, self.m, np.arange(len(self.judged)),
                                   len(self.judged))
        self.n_lab = {own: np.bincount(self.lab_rows, weights=self._use(own), minlength=self.m)
                      for own in (False, True)}
        self.gathered: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def for_evidence(self, ev: Evidence, right: np.ndarray) -> LabelState:
        """This state's label-free part (which pairs are labelled, which instances judged:
        the same for every evidence with ``ev``'s labels and draws) with ``right``, the
        judged instances' `Evidence.correct` values under ``ev`` (e.g. `PointPlan.right`,
        the same floats), and nothing cached: `estimate` reuses the plan's state so."""
        new = copy.copy(self)
        new.right, new.soft = right, ev.true_prob is not None
        new.cache, new.gathered = {}, {}
        return new

    def _use(self, own_draws_only: bool) -> np.ndarray:
        return self.own if own_draws_only else np.ones(len(self.lab), dtype=bool)

    def masses(self, pop: Population, scheme: str) -> tuple[np.ndarray, np.ndarray]:
        """(pair mass of each labelled entry, p(x) of each judged instance) under scheme.

        Kept until both of the scheme's bounds (simple and joint) are made from them."""
        if scheme not in self.gathered:
            self.gathered[scheme] = (pop.stacked(scheme).data[self.lab],
                                     pop.instance_probs(scheme)[self.judged])
        return self.gathered[scheme]


def label_bounds(
    pop: Population,
    ev: Evidence,
    scheme: str,
    own_draws_only: bool = False,
    state: LabelState | None = None,
) -> LabelBounds:
    """[L, L + U] for every system under ``scheme``.

    With own_draws_only, only the labels of pairs the system drew itself count (the
    evidence the simple estimator is allowed to use). A system without instances
    has no precision: its bounds are [0, 1]. ``state`` reuses the scheme-free part.
    """
    state = LabelState(pop, ev) if state is None else state
    if (scheme, own_draws_only) in state.cache:
        return state.cache[(scheme, own_draws_only)]
    use = state._use(own_draws_only)
    lab_data, judged_p = state.masses(pop, scheme)
    mass = lab_data * use
    total, total_sq = pop.mass_moments(scheme)
    # Σ d·use and Σ d·(d·use): with use 0/1 the bincounts of mass and mass² to the bit.
    lab_matrix = state.lab_sums.matrix(lab_data)
    lab_mass = lab_matrix @ use.astype(float)
    lab_sq = lab_matrix @ mass
    n_lab = state.n_lab[own_draws_only]
    exact = (n_lab == state.sizes) & (state.sizes > 0)
    unknown = np.where(exact, 0.0, np.maximum(total - lab_mass, 0.0))
    square = np.where(exact, 0.0, np.maximum(total_sq - lab_sq, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        count = np.where(square > 0, unknown**2 / square, 0.0)
    # Right mass from the instances (a pair may hold several predictions).
    # Σ p·(right·use): with use 0/1, Σ (p·right)·use to the bit.
    judged_matrix = state.judged_sums.matrix(judged_p)
    x = state.right * use[state.judged_at].astype(float)
    known = judged_matrix @ x
    wrong = np.maximum(lab_mass - known, 0.0)
    label_sd: np.ndarray | float = 0.0
    if state.soft:
        # Σ p·(p·use·c(1 − c)): Σ q·q·c·(1 − c) to rounding (~1e-16). c clipped: a
        # re-weighted probability can pass 1 by rounding, and c(1 − c) < 0 made it NaN.
        c = np.clip(state.right.astype(float), 0.0, 1.0)
        label_sd = np.sqrt(judged_matrix @ (judged_p * (c * use[state.judged_at].astype(float)
                                                        * (1 - c))))
    bounds = LabelBounds(np.minimum(known, 1.0), wrong, exact, count, label_sd)
    state.cache[(scheme, own_draws_only)] = bounds
    if (scheme, not own_draws_only) in state.cache:
        state.gathered.pop(scheme, None)  # both bounds kept: its masses are not read again
    return bounds


def apply_bounds(iv: Interval, bounds: LabelBounds, z: float = 0.0) -> Interval:
    """Clip the estimate into [L, L + U] and intersect the interval with it.

    An empty intersection means the sampling interval missed (the truth is surely
    in the bounds): report the bounds; so do a few unlabelled pairs (see
    MIN_UNKNOWN_PAIRS). U = 0: the exact value, zero width. Soft labels widen the
    bounds by z label sd on each side (they are no longer sure).
    """
    spread = z * np.asarray(bounds.label_sd)
    lo_b = np.maximum(bounds.known - spread, 0.0)
    hi_b = np.minimum(bounds.upper + spread, 1.0)
    # NaN (not estimable) stays NaN unless the labels give the exact value.
    est = np.where(bounds.exact, bounds.known, np.clip(iv.estimate, lo_b, hi_b))
    lo = np.maximum(iv.lo, lo_b)
    hi = np.minimum(iv.hi, hi_b)
    empty = (lo > hi) | (bounds.unknown_pairs < MIN_UNKNOWN_PAIRS)
    return Interval(est, np.where(empty, lo_b, lo), np.where(empty, hi_b, hi))


def sampling_interval(
    res: ImportanceResult, var: np.ndarray, z: float, method: str
) -> tuple[np.ndarray, np.ndarray]:
    """Interval of an importance-sampling precision estimate.

    wilson_design: Wilson at the design effective size n* = π̂(1−π̂)/V̂, but never
    at more trials than draws landed on the system's pairs: a variance of 0 from
    draws that never reached the system is no evidence, and a handful of landings
    cannot support a narrow interval whatever their spread. Where n* is undefined
    (π̂ ∈ {0, 1} or V̂ = 0) the Kish size of the landed weights stands in.
    normal: π̂ ± z·sd with the same floor, π̂(1−π̂)/landed, on the variance.
    """
    est, landed = res.estimate, res.landed
    if method == "normal":
        with np.errstate(divide="ignore", invalid="ignore"):
            floor = np.where(landed > 0, est * (1 - est) / landed, 0.0)
        lo, hi = ci.normal(est, np.maximum(var, floor), z)
        return np.where(landed > 0, lo, 0.0), np.where(landed > 0, hi, 1.0)
    if method == "wilson_design":
        with np.errstate(divide="ignore", invalid="ignore"):
            n_var = est * (1 - est) / var
        usable = (var > 0) & (est > 0) & (est < 1)
        return ci.wilson(est, np.minimum(np.where(usable, n_var, res.kish), landed), z)
    raise ValueError(
        f"unknown precision interval method {method!r}; expected one of "
        f"{', '.join(PRECISION_METHODS)}"
    )


def _self_normalised(res: ImportanceResult) -> ImportanceResult:
    """The joint estimate as a ratio: Σ p_i f_i/q_i over Σ p_i/q_i (the mass the draws
    carried), with its linearised variance, wherever the draws carried mass.

    The plain sum Σ p_i f_i/q_i is unbiased but swings with the mass the draws
    happened to carry even when every label agrees: a system whose every prediction
    is right got 0.986 [0.954, 0.996] (its interval excluded 1.0 in 41-50% of the
    trials, and clipping at 1 biased it down). The ratio is 1 there, its interval
    Wilson's at p̂ = 1, and its variance counts only how f_i varies around the
    estimate (docs/internals/crowd-bias.md has the measurements).
    """
    if res.ratio is None:
        return res
    ok = res.mass > 0
    return res._replace(estimate=np.where(ok, res.ratio, res.estimate),
                        variance=np.where(ok, res.ratio_variance, res.variance))


def precision(
    pop: Population,
    ev: Evidence,
    scheme: str,
    draw_scheme: str,
    pf: sp.coo_matrix,
    z: float,
    method: str,
    state: LabelState | None = None,
    shared: dict | None = None,
    joint: bool = True,
) -> tuple[dict[str, Interval], ImportanceResult | None, np.ndarray | None]:
    """Simple and joint precision; also the joint terms and weights, for F1.
    ``joint=False``: the simple kind only (None for the terms and weights), for an
    estimate whose joint kind another estimator gives (the joint products are most of
    the cost at many systems).

    ``shared``: a dict kept across the schemes of one estimate (same population and
    evidence): the draw scheme's rows at the drawn pairs, the per-draw counts and
    the importance estimates' scheme-free parts are computed once into it.
    """
    state = LabelState(pop, ev) if state is None else state
    shared = {} if shared is None else shared
    n = ev.n
    if shared.get("draw_scheme") != draw_scheme:
        shared.clear()
        shared["draw_scheme"] = draw_scheme
        shared["b_rows"] = pop.stacked(draw_scheme)[:, ev.pairs]
        shared["cn"] = sp.diags(np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)) @ ev.counts
    b, cn = shared["b_rows"], shared["cn"]
    a = b if scheme == draw_scheme else pop.stacked(scheme)[:, ev.pairs]
    ps, pt = pop.stacked(scheme), pop.stacked(draw_scheme)
    reweighted = scheme != draw_scheme

    def interval(res: ImportanceResult, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        var = res.variance
        if reweighted:
            # Never narrower than the weights' exact effective size allows: a sample
            # that misses the rare heavy elements underestimates the variance.
            # A function of the systems, w and n only: the population remembers it
            # (the same weights recur within a recompute: hard and soft estimates).
            neff = pop.memo(("neff", scheme, draw_scheme, content_key(w, n)),
                            lambda: frozen(exact_effective_size(ps, pt, w, n)))
            with np.errstate(divide="ignore", invalid="ignore"):
                var = np.maximum(var, res.estimate * (1 - res.estimate) / neff)
        return sampling_interval(res, var, z, method)

    none = n == 0
    w_simple = np.diag((~none).astype(float))
    label_var = label_variance_at_pairs(pop, ev, scheme, shared, state)
    simple = importance_estimate(a, pf, b, w_simple, cn, n, label_var, shared=shared)
    if reweighted:
        lo, hi = interval(simple, w_simple)
    else:
        lo, hi = ci.wilson(simple.estimate, n, z)  # a plain proportion of the own draws
    out = {
        "simple": apply_bounds(
            Interval(
                np.where(none, np.nan, simple.estimate),
                np.where(none, 0.0, lo),
                np.where(none, 1.0, hi),
            ),
            label_bounds(pop, ev, scheme, own_draws_only=True, state=state),
            z,
        )
    }
    if not joint:
        return out, None, None

    w = mixing_weights(pop.overlap(scheme, draw_scheme), n)
    joint_res = importance_estimate(a, pf, b, w, cn, n, label_var, shared=shared)
    lo, hi = interval(_self_normalised(joint_res), w)
    est = _self_normalised(joint_res).estimate.copy()
    # Systems without draws of their own, reached by few of the others' draws: no
    # estimate; the interval is Wilson's around the landed draws' own proportion
    # (self-normalised), at their Kish size (0 landed: [0, 1], the bounds decide).
    few = none & (joint_res.kish < MIN_BORROWED)
    with np.errstate(divide="ignore", invalid="ignore"):
        landed_share = np.where(joint_res.mass > 0, joint_res.estimate / joint_res.mass, 0.0)
    lo_f, hi_f = ci.wilson(landed_share, joint_res.kish, z)
    est[few] = np.nan
    lo, hi = np.where(few, lo_f, lo), np.where(few, hi_f, hi)
    # Systems without draws of their own: q_i may miss part of X_i. The estimate
    # covers only the mass the others' draws reach; the rest is bounded by [0, mass].
    for i, missing in zip(*unreached_mass(ps, pt, w, none), strict=True):
        if missing > 1e-12:
            est[i] = np.nan
            hi[i] = min(1.0, hi[i] + missing)
    out["joint"] = apply_bounds(
        Interval(est, lo, hi), label_bounds(pop, ev, scheme, state=state), z
    )
    return out, joint_res, w
