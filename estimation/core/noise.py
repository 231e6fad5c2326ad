"""Soft labels: estimating against the truth, not against the crowd.

A crowd label is right only with some probability. Given, per labelled pair, the
posterior probability of each answer (a Dawid–Skene-style model of the workers,
anchored by control questions with known answers), the estimators replace the 0/1
"this instance is right" by that probability: precision sums P(right) instead of
right, and recall's ν counts P(pair true) and P(system right) instead of the label's
verdicts. A systematic crowd error (a relation type workers miss) is then corrected
instead of inherited; with a perfect crowd every probability is 0 or 1 and the
estimates are the hard-label ones exactly. The label bounds widen by the
probabilities' own spread (precision.apply_bounds).

The crowd's posterior uses the answer shares of all labelled pairs as its prior,
but an instance of a system is not a random labelled pair: a precise system's
instances are right more often. Averaged over a system's instances, a posterior
under the wrong prior is biased towards the crowd-wide share. So each system's
instances are re-weighted to its own precision as prior (the answers' likelihood
ratio is prior-free), and the precision is iterated to its fixed point: at the
true precision the posteriors average to it (`self_consistent`).

The posteriors rest on fitted parameters (worker rates, class shares), estimated from
a finite number of questions. ``correction_variance`` measures what their uncertainty
does to the estimates: a bootstrap over questions (``resampling.resample_questions``: labelled
and control questions drawn with replacement, each with all its answers) refits the
model, and the *original* answers' posteriors are recomputed under the replicate's
parameters (one E-step). The estimates are recomputed on each replicate's soft labels
and their between-replicate variance is added to the sampling variance (``widen``).
Only the parameters vary between replicates: each pair's own answer noise is already
in its probability and in the label bounds, and a replicate that also re-drew the
answers (a bootstrap over workers, refitted and re-labelled) counted it twice.

That own answer noise is the soft labels' Bernoulli variance Σ c(1 − c), right only if
the posteriors are calibrated. ``calibration_multiplier`` measures how far they are not
on the control questions (their posterior without the known answer against it, scored
as instances are: ``as_instances``), as φ = squared error / own variance ≥ 1, and
`Evidence.label_scale` = φ scales the labels' variance in precision's sampling variance
(docs/internals/crowd-bias.md §17; the service leaves it at 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from . import intervals as ci
from .distinct_estimate import distinct_design, distinct_points
from .evidence import (
    ALSO_TRUE_STRIDE,
    NO_RELATION,
    REWEIGHT_BETA,
    Evidence,
    Interval,
    likelihood_ratio,
    odds_between,
    reprior_lr,
)
from .points import PointPlan, consistent
from .population import Population

if TYPE_CHECKING:
    from .estimators import Estimates


@dataclass(frozen=True)
class SoftLabels:
    """Rows (pair id, predicate code, probability): P(the predicate holds on the pair).

    A row with predicate NO_RELATION gives P(the pair holds no relation); a labelled
    pair without such a row gets 1 − the sum of its relation rows (at least 0).
    Predicates without a row have probability 0 on a pair that has rows.
    """

    pairs: np.ndarray
    predicates: np.ndarray
    probs: np.ndarray
    priors: np.ndarray | None = None  # the crowd-wide share of each row's answer
    # The share of each row's answer among pairs of its pair's type: the prior its
    # posterior was computed with (NaN: not known; the crowd-wide one stands in).
    type_priors: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = {len(self.pairs), len(self.predicates), len(self.probs)}
        if len(n) != 1:
            raise ValueError("soft labels: pairs, predicates and probs differ in length")
        p = np.asarray(self.probs, dtype=float)
        if len(p) and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
            raise ValueError("soft labels: every probability must be in [0, 1]")


def from_posterior(pairs: np.ndarray, categories: list[int], posterior: np.ndarray,
                   priors: np.ndarray | None = None, type_priors: np.ndarray | None = None,
                   floor: float = 1e-9) -> SoftLabels:
    """Rows from a (pairs × categories) posterior over predicate codes (−1: none);
    ``priors``: the crowd-wide class shares (per category); ``type_priors`` (pairs ×
    categories): each pair's type's, with which its posterior was computed."""
    posterior = np.asarray(posterior, dtype=float)
    rows, cols = np.nonzero(posterior > floor)
    return SoftLabels(np.asarray(pairs, np.int64)[rows],
                      np.asarray(categories, np.int64)[cols], posterior[rows, cols],
                      None if priors is None else np.asarray(priors, float)[cols],
                      None if type_priors is None
                      else np.asarray(type_priors, float)[rows, cols])


def with_soft_labels(pop: Population, ev: Evidence, soft: SoftLabels) -> Evidence:
    """The evidence with soft labels on the pairs they cover (others stay hard)."""
    dense = pop.lookup_pairs(np.asarray(soft.pairs, dtype=np.int64))
    preds = np.asarray(soft.predicates, dtype=np.int64)
    probs = np.asarray(soft.probs, dtype=float)
    keep = dense >= 0
    dense, preds, probs = dense[keep], preds[keep], probs[keep]
    priors = None if soft.priors is None else np.asarray(soft.priors, float)[keep]
    own = None if soft.type_priors is None else np.asarray(soft.type_priors, float)[keep]
    rel = preds != NO_RELATION
    true_prob = np.full(pop.n_pairs, np.nan)
    covered = np.flatnonzero(np.bincount(dense, minlength=pop.n_pairs))  # np.unique, no sort
    mass = np.bincount(dense[rel], weights=probs[rel], minlength=pop.n_pairs)
    true_prob[covered] = np.clip(mass[covered], 0.0, 1.0)
    none = ~rel
    if none.any():
        # P(true) = 1 − P(none): exact where the posterior's rows are complete.
        true_prob[dense[none]] = np.clip(1.0 - probs[none], 0.0, 1.0)
    keys = dense[rel] * ALSO_TRUE_STRIDE + preds[rel]
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], probs[rel][order]
    uniq, first = np.unique(keys, return_index=True)
    summed = np.add.reduceat(vals, first) if len(vals) else vals
    prior_k = None if priors is None else priors[rel][order][first]
    own_k = None if own is None else own[rel][order][first]
    true_prior, true_prior_at = None, None
    if priors is not None and none.any():
        true_prior = float(1.0 - priors[none][0])
        if own is not None:
            at = dense[none]
            known = ~np.isnan(own[none])
            true_prior_at = np.full(pop.n_pairs, np.nan)
            true_prior_at[at[known]] = odds_between(1.0 - priors[none][known],
                                                    1.0 - own[none][known], REWEIGHT_BETA)
    return replace(ev, soft_keys=uniq, soft_probs=np.clip(summed, 0.0, 1.0),
                   true_prob=true_prob, relation_mass=mass,
                   soft_prior=prior_k, soft_type_prior=own_k, true_prior=true_prior,
                   true_prior_at=true_prior_at,
                   system_prior=None, group_prior=None)


def self_consistent(pop: Population, ev: Evidence, draw_scheme: str = "instance",
                    rounds: int = 4, start: np.ndarray | None = None,
                    confidence: float = 0.9, plan: PointPlan | None = None,
                    start_group: np.ndarray | None = None) -> Evidence:
    """The evidence with each system's precision as the prior of its instances.

    Starts from the crowd-wide posteriors and re-estimates each system's joint
    precision (under the instance scheme: the prior of a random instance) with its
    own prior, ``rounds`` times; a system without an estimate keeps the crowd's.
    ``start``: the priors to start from instead (a replicate starts at the fit's);
    ``start_group``: the agreement groups' priors to look near first (the fit's).
    Only point estimates are needed: `points.PointPlan` gives `estimate`'s (``plan``:
    one for these draws and labels under ``draw_scheme``, to share it; default a new one).
    """
    if ev.true_prob is None or ev.soft_prior is None or len(pop) == 0:
        return ev  # nothing soft, or no system to give a prior to
    plan = PointPlan(pop, ev, draw_scheme) if plan is None else plan
    return consistent(plan, ev, rounds, start, confidence, start_group)


def data_seed(*arrays: np.ndarray) -> int:
    """A seed derived from the data, so that a bootstrap is reproducible run to run."""
    h = 0
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=np.int64))
        h = (h * 1_000_003 + int(np.bitwise_xor.reduce(a * 2_654_435_761 + np.arange(len(a)),
                                                        initial=len(a)))) % (1 << 63)
    return h


Key = tuple[str, str, str]  # (scheme, metric, kind)


def correction_variance(pop: Population, ev: Evidence, replicates: Sequence[SoftLabels],
                        draw_scheme: str = "instance", schemes: Sequence[str] | None = None,
                        confidence: float = 0.9, plan: PointPlan | None = None,
                        estimator: str = "importance") -> dict[Key, np.ndarray]:
    """Between-replicate variance of every estimate over replicate soft labels.

    ``ev``: the evidence with the fit's soft labels (its ``system_prior`` is where
    each replicate's fixed-point iteration starts; one round moves it most of the way).
    Fewer than 2 replicates: no variance (empty). ``plan``: the `PointPlan` of these
    draws and labels under ``draw_scheme`` if one was made (e.g. for ``ev``'s fixed point).
    ``estimator``: the joint kind's (`estimate`'s), whose points each replicate gives.
    """
    if len(replicates) < 2:
        return {}
    # Only the replicates' point estimates count: one plan serves them all.
    if plan is None or plan.draw_scheme != draw_scheme:
        plan = PointPlan(pop, ev, draw_scheme)
    return between_replicates([replicate_estimates(pop, ev, soft, draw_scheme, schemes,
                                                   confidence, plan, estimator)
                               for soft in replicates])


def replicate_estimates(pop: Population, ev: Evidence, soft: SoftLabels, draw_scheme: str,
                        schemes: Sequence[str] | None, confidence: float, plan: PointPlan,
                        estimator: str = "importance") -> dict[Key, np.ndarray]:
    """One replicate's point estimates (`correction_variance`): its soft labels, one
    fixed-point round of the systems' priors from ``ev``'s, the plan's estimates."""
    rep = with_soft_labels(pop, ev, soft)
    if ev.system_prior is not None:
        rep = self_consistent(pop, rep, draw_scheme, rounds=1, start=ev.system_prior,
                              plan=plan, start_group=ev.group_prior)
    points = plan.estimates(rep, schemes, confidence)
    if estimator == "distinct":
        # The draws' design is the same for every replicate: made once per plan.
        design = plan.keep(("distinct design", draw_scheme),
                           lambda: distinct_design(pop, ev, draw_scheme))
        points.update(distinct_points(pop, rep, draw_scheme, schemes, confidence, points,
                                      plan.state.for_evidence(rep, plan.right(rep)),
                                      design))
    return points


def between_replicates(estimates: Sequence[dict[Key, np.ndarray]]) -> dict[Key, np.ndarray]:
    """Per estimate, the variance over the replicates (in their order) where at least
    two of them define it, else 0; no replicates (or one): empty."""
    if len(estimates) < 2:
        return {}
    values: dict[Key, list[np.ndarray]] = {}
    for est in estimates:
        for key, v in est.items():
            values.setdefault(key, []).append(v)
    out = {}
    for key, vals in values.items():
        arr = np.stack(vals)
        ok = (~np.isnan(arr)).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.nanvar(np.where(ok[None, :] >= 2, arr, 0.0), axis=0, ddof=1)
        out[key] = np.where(ok >= 2, var, 0.0)
    return out


def widen(res: Estimates, variance: dict[Key, np.ndarray], confidence: float = 0.9) -> Estimates:
    """The intervals with ``variance`` added to each side's own (squared half-width / z²).

    Each side keeps its shape: half-width h becomes √(h² + z² v). Clipped to [0, 1].
    """
    z = ci.z_value(confidence)
    for (s, metric, kind), v in variance.items():
        if s not in res.results:
            continue
        iv = res.results[s][metric][kind]
        extra = z * z * np.nan_to_num(np.maximum(v, 0.0))
        est = iv.estimate
        lo = np.where(np.isnan(est), iv.lo,
                      np.maximum(0.0, est - np.sqrt((est - iv.lo) ** 2 + extra)))
        hi = np.where(np.isnan(est), iv.hi,
                      np.minimum(1.0, est + np.sqrt((iv.hi - est) ** 2 + extra)))
        res.results[s][metric][kind] = Interval(est, lo, hi)
    return res


# Calibrated pseudo-events (P = ½) added to both sums of `calibration_multiplier`: a
# handful of controls cannot make φ explode on one confident miss (it adds 1 to the
# squared error), and φ → 1 as the controls thin out.
CALIBRATION_PSEUDO = 2.0


def calibration_multiplier(p: np.ndarray, y: np.ndarray,
                           pseudo: float = CALIBRATION_PSEUDO) -> float:
    """φ = (Σ (p − y)² + pseudo/4) / (Σ p(1 − p) + pseudo/4), at least 1.

    ``p``: P(event) of questions whose answer is known, computed without it; ``y``: 0/1,
    the event's truth. Calibrated posteriors have E (p − y)² = p(1 − p) per event, so φ is
    1 in expectation; over-confident ones (p nearer 0 or 1 than the frequency they
    predict) make it larger, by E (p − y)² − p(1 − p) = (p − q)(2p − 1) at frequency q.
    The soft labels' Bernoulli variance Σ c(1 − c) is then φ times too small: φ scales it
    (`Evidence.label_scale`). Never below 1: under-confidence is not narrowed on.
    """
    p, y = np.asarray(p, float), np.asarray(y, float)
    half = 0.25 * pseudo
    return float(max(1.0, (np.sum((p - y) ** 2) + half) / (np.sum(p * (1 - p)) + half)))


def as_instances(p: np.ndarray, divisor: np.ndarray, systems_prior: np.ndarray,
                 weights: np.ndarray) -> np.ndarray:
    """P(event) of questions re-weighted as an instance's P(right) is: the likelihood
    ratio odds(p)/odds(divisor) under each system's precision as prior
    (`Evidence.correct`), averaged over the systems with ``weights`` (events × systems,
    e.g. how many instances of each system name the event's relation). An event no
    system weighs keeps ``p``.

    ``p``, ``divisor``: (events,) the crowd posterior and the share its prior divides out;
    ``systems_prior``: (systems,) each system's precision (NaN: none, not counted).
    """
    p, divisor = np.asarray(p, float), np.asarray(divisor, float)
    prior = np.asarray(systems_prior, float)
    w = np.where(np.isnan(prior)[None, :], 0.0, np.asarray(weights, float))
    lr = likelihood_ratio(p, divisor)[:, None]
    new = np.nan_to_num(prior)[None, :]
    each = reprior_lr(np.broadcast_to(p[:, None], w.shape), lr, new)
    total = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mixed = (w * each).sum(axis=1) / total
    return np.where(total > 0, mixed, p)
