"""Simple and joint estimators of precision, recall and F1 for all systems at once.

Notation of docs/internals/estimation.md §3; the pieces live in evidence (inputs), importance
(weights and importance-sampling sums), precision (estimates, sure bounds) and
recall (cluster-robust recall). This module assembles them per scheme.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import intervals as ci
from .distinct_estimate import distinct_joint
from .evidence import (
    ALSO_TRUE_STRIDE,
    NO_RELATION,
    UNLABELLED,
    Evidence,
    Interval,
    prepare_evidence,
)
from .importance import (
    ImportanceResult,
    at_pairs,
    exact_effective_size,
    importance_estimate,
    mixing_weights,
    pair_terms,
    per_draw_variance,
    unreached_mass,
)
from .population import Population
from .precision import PRECISION_METHODS, LabelBounds, LabelState, label_bounds, precision
from .recall import (
    exhaustive_hits,
    precision_recall_cov,
    recall_instance,
    recall_reweighted,
)
from .schemes import SCHEMES, check_scheme

__all__ = [
    "ALSO_TRUE_STRIDE",
    "ESTIMATORS",
    "NO_RELATION",
    "PRECISION_METHODS",
    "UNLABELLED",
    "Estimates",
    "Evidence",
    "ImportanceResult",
    "Interval",
    "LabelBounds",
    "LabelState",
    "estimate",
    "exact_effective_size",
    "importance_estimate",
    "label_bounds",
    "mixing_weights",
    "per_draw_variance",
    "prepare_evidence",
    "unreached_mass",
]


# The joint kind's estimators (docs/internals/estimation.md §3 and §12).
ESTIMATORS = ("importance", "distinct")


@dataclass
class Estimates:
    names: list[str]
    n: np.ndarray
    pending: np.ndarray
    labels_used: np.ndarray
    # results[scheme][metric][kind] with metric in precision/recall/f1, kind simple/joint
    results: dict[str, dict[str, dict[str, Interval]]] = field(default_factory=dict)


def _exact_zero_recall(rec: dict[str, Interval], bounds: LabelBounds) -> dict[str, Interval]:
    """Recall is known exactly only when it is surely 0: every pair labelled, none right."""
    zero = bounds.exact & (bounds.known == 0)
    if not zero.any():
        return rec
    return {
        kind: Interval(
            np.where(zero, 0.0, iv.estimate), np.where(zero, 0.0, iv.lo), np.where(zero, 0.0, iv.hi)
        )
        for kind, iv in rec.items()
    }


def _f1(p: Interval, r: Interval, z: float, cov: np.ndarray) -> Interval:
    # An undefined precision or recall leaves F1 undefined but bounded.
    pe, re_ = np.nan_to_num(p.estimate), np.nan_to_num(r.estimate)
    est, lo, hi = ci.f1_delta(pe, p.lo, p.hi, re_, r.lo, r.hi, z, cov)
    undefined = np.isnan(p.estimate) | np.isnan(r.estimate)
    lo = np.where(undefined, ci.f1_score(p.lo, r.lo), lo)
    hi = np.where(undefined, ci.f1_score(p.hi, r.hi), hi)
    return Interval(np.where(undefined, np.nan, est), lo, hi)


def estimate(
    pop: Population,
    ev: Evidence,
    draw_scheme: str = "instance",
    schemes: Sequence[str] | None = None,
    confidence: float = 0.9,
    precision_method: str = "wilson_design",
    state: LabelState | None = None,
    estimator: str = "importance",
) -> Estimates:
    """Simple and joint precision, recall and F1 with intervals for every system.

    draw_scheme: the scheme the draws came from; schemes: the schemes to report
    (default: just the draw scheme), each obtained from the same draws by
    importance reweighting. state: `LabelState(pop, ev)` if made before (e.g. a
    PointPlan's, `LabelState.for_evidence`): the same numbers. estimator: the joint
    kind's estimator, "importance" (every draw, §3) or "distinct" (each labelled pair
    once, Horvitz–Thompson, §12; hard labels only).
    """
    check_scheme(draw_scheme)
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator: expected one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    schemes = [draw_scheme] if schemes is None else [check_scheme(s) for s in schemes]
    z = ci.z_value(confidence)
    m = len(pop)
    labels_used = np.asarray((pop.stacked(draw_scheme)[:, ev.pairs] > 0).sum(axis=1)).ravel()
    result = Estimates(pop.names, ev.n.copy(), ev.pending.copy(), labels_used)
    if m == 0:
        return result
    gy = exhaustive_hits(pop, ev)
    state = LabelState(pop, ev) if state is None else state
    # Which systems surely found nothing (all labelled, none right): scheme-free.
    bounds = label_bounds(pop, ev, "instance", state=state)
    terms = pair_terms(pop, ev, state)  # scheme-free; the state's verdicts serve
    shared: dict = {}  # the precision estimates' scheme-free parts, computed once
    ht = (distinct_joint(pop, ev, draw_scheme, list(schemes), confidence, state, terms=terms)
          if estimator == "distinct" else None)
    for s in SCHEMES:
        if s not in schemes:
            continue
        pf, g = at_pairs(pop, ev, s, terms)
        # (the distinct estimator gives the joint kind: importance's is not computed)
        prec, joint, w = precision(pop, ev, s, draw_scheme, pf, z, precision_method, state,
                                   shared, joint=ht is None)
        # Joint recall under "instance" reuses the draws, so it correlates with P̂;
        # the other schemes' recall comes from Ŷ0 alone.
        cov = {"simple": np.zeros(m), "joint": np.zeros(m)}
        if s == "instance":
            rec, parts = recall_instance(pop, ev, draw_scheme, g, gy, confidence)
            if ht is None:
                cov["joint"] = np.nan_to_num(precision_recall_cov(joint, w, ev.n, parts))
        else:
            rec = recall_reweighted(ev, s, gy, confidence)
        if ht is not None:
            prec = {**prec, "joint": ht.precision[s]}
            cov["joint"] = ht.cov if s == "instance" else np.zeros(m)
            if s == "instance" and ht.recall is not None:
                r = ht.recall
                undefined = ~np.isfinite(r.estimate)
                rec = {**rec, "joint": Interval(
                    np.where(undefined, np.nan, r.estimate),
                    np.where(undefined, rec["simple"].lo, r.lo),
                    np.where(undefined, rec["simple"].hi, r.hi))}
        rec = _exact_zero_recall(rec, bounds)
        f1 = {kind: _f1(prec[kind], rec[kind], z, cov[kind]) for kind in ("simple", "joint")}
        result.results[s] = {"precision": prec, "recall": rec, "f1": f1}
    return result
