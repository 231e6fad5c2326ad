"""Recall: simple (exhaustive sample only) and joint (θ·ν + ρ), with cluster-robust variances.

The exhaustive sample Ŷ0 is a *cluster* sample: documents are drawn, then all
their true instances are taken. Instances of one document are not independent
(a system that reads a document well finds many of its relations), so every
variance computed from Ŷ0 is document-level (cluster-robust): the ratio
estimator's linearised variance over documents, with a Student t quantile on the
degrees of freedom the documents give (docs/internals/estimation.md §4).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .evidence import (
    ALSO_TRUE_STRIDE,
    Evidence,
    Interval,
    likelihood_ratio,
    reprior,
)
from .importance import ImportanceResult, per_draw_variance
from .population import Population
from .products import content_key, frozen
from .schemes import scheme_weights
from .shares import fixed_point_shares


def exhaustive_membership(pop: Population, ev: Evidence) -> np.ndarray:
    """(m × n0) indicator that system i predicted exhaustive true instance y."""
    m, n0 = len(pop), len(ev.y_pairs)
    out = np.zeros((m, n0))
    if n0 == 0 or m == 0:
        return out
    inst = pop.instances()
    base = int(max(inst["predicates"].max(initial=0), ev.y_preds.max(initial=0))) + 1
    y_key = np.where(ev.y_pairs >= 0, ev.y_pairs * base + ev.y_preds, -1)
    uniq, inv = np.unique(y_key, return_inverse=True)
    # Only instances on a pair of Ŷ0 can match; select them before searching.
    on_y = np.zeros(pop.n_pairs, dtype=bool)
    on_y[ev.y_pairs[ev.y_pairs >= 0]] = True
    cand = np.flatnonzero(on_y[inst["pairs"]])
    inst_key = inst["pairs"][cand] * base + inst["predicates"][cand]
    pos = np.minimum(np.searchsorted(uniq, inst_key), len(uniq) - 1)
    hit = uniq[pos] == inst_key
    hit_u = np.zeros((m, len(uniq)))
    hit_u[inst["system"][cand[hit]], pos[hit]] = 1.0
    return hit_u[:, inv.ravel()]


def exhaustive_hits(pop: Population, ev: Evidence) -> np.ndarray:
    """`exhaustive_membership`, remembered by the population (read-only): it changes
    only with the systems and the exhaustive sample, not with label batches."""
    return pop.memo(("exhaustive", content_key(ev.y_pairs, ev.y_preds)),
                    lambda: frozen(exhaustive_membership(pop, ev)))


class Clusters:
    """Document structure of Ŷ0, for cluster-robust variances of weighted means."""

    def __init__(self, docs: np.ndarray) -> None:
        self.n0 = len(docs)
        self.d = int(docs.max()) + 1 if self.n0 else 0
        # Documents of one instance each are plain i.i.d. draws: normal quantiles.
        self.clustered = self.d < self.n0
        self.onehot = sp.csr_matrix(
            (np.ones(self.n0), (np.arange(self.n0), docs)), shape=(self.n0, max(self.d, 1))
        )

    def variance(self, values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Var of Σ_y w_y v_iy (weights sum to 1; default 1/n0) for each row i.

        Linearised over documents: D/(D−1) Σ_d (Σ_{y∈d} w_y (v_iy − mean_i))². With
        every instance its own document this is the usual i.i.d. variance × n/(n−1).
        """
        if self.d < 2:
            return np.full(values.shape[0], np.inf)
        per_doc = (self.onehot.T @ self._residuals(values, weights).T).T
        return self.d / (self.d - 1) * (per_doc**2).sum(axis=1)

    def iid_variance(self, values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """The same linearised variance with every instance its own cluster."""
        if self.n0 < 2:
            return np.full(values.shape[0], np.inf)
        resid = self._residuals(values, weights)
        return self.n0 / (self.n0 - 1) * (resid**2).sum(axis=1)

    def _residuals(self, values: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        w = np.full(self.n0, 1.0 / self.n0) if weights is None else weights
        return (values - (values @ w)[:, None]) * w[None, :]

    def quantile(self, confidence: float, share: np.ndarray | float = 1.0) -> np.ndarray:
        """t quantile for a variance whose part ``share`` has D − 1 degrees of freedom
        (Satterthwaite: df = (D − 1) / share²; the rest of the variance is from the
        draws, with many degrees of freedom)."""
        share = np.clip(np.asarray(share, dtype=float), 1e-12, 1.0)
        if not self.clustered:
            return ci.t_value(confidence, np.full(share.shape, np.inf))
        return ci.t_value(confidence, max(self.d - 1, 1) / share**2)


def _design_sizes(
    est: np.ndarray, var_c: np.ndarray, var_i: np.ndarray, n: np.ndarray | float
) -> np.ndarray:
    """Effective sizes n / deff, deff = clustered / i.i.d. variance (never below 1).

    Where the design effect is undefined (estimate 0 or 1, nothing varies) the
    median design effect of the other systems stands in.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = var_c / var_i
    ok = np.isfinite(deff) & (var_i > 0) & (est > 0) & (est < 1)
    ref = float(np.median(deff[ok])) if ok.any() else 1.0
    if not np.isfinite(ref):
        return np.zeros_like(est)
    deff = np.maximum(np.where(ok, deff, ref), 1.0)
    return np.where(np.isfinite(var_c), np.asarray(n, float) / deff, 0.0)


def simple_recall(gy: np.ndarray, clusters: Clusters, confidence: float) -> Interval:
    """Share of Ŷ0 each system found: Wilson at the cluster-effective size, t quantile."""
    n0 = gy.shape[1]
    est = gy.mean(axis=1)
    size = _design_sizes(est, clusters.variance(gy), clusters.iid_variance(gy), n0)
    lo, hi = ci.wilson(est, size, clusters.quantile(confidence))
    return Interval(est, lo, hi)


# Pairs are grouped for their prior of holding a relation by the drawing systems'
# precision (POOL_BINS quantile bins) and by how many systems predict them (1, 2, 3+).
POOL_BINS = 6
POOL_STRENGTH = 10.0  # pseudo-pairs at the group's mean precision


class PairGroups:
    """`pooled_true_prior`'s grouping of pairs, which depends on ``mix``, ``k`` and
    ``weights`` only: made once where the posteriors change round after round
    (`predicted_true_share`)."""

    def __init__(self, mix: np.ndarray, k: np.ndarray, weights: np.ndarray | None = None):
        edges = np.quantile(mix, np.linspace(0, 1, POOL_BINS + 1)[1:-1])
        key = np.searchsorted(edges, mix) * 3 + np.clip(k, 1, 3) - 1
        _, inv = np.unique(key, return_inverse=True)
        self.inv = inv.ravel()
        self.n = np.bincount(self.inv).astype(float)
        self.centre = np.bincount(self.inv, weights=mix) / self.n
        w = np.ones(len(mix)) if weights is None else weights
        scale = self.n / np.maximum(np.bincount(self.inv, weights=w), 1e-300)  # sum to n
        self.ww = scale[self.inv] * w

    def priors(self, post: np.ndarray, crowd: float | np.ndarray,
               start: np.ndarray | None = None) -> np.ndarray:
        """Per group, the prior (``start``: per group, where to look first)."""
        lr = likelihood_ratio(post, np.broadcast_to(np.asarray(crowd, float), post.shape))
        # EM's fixed point (π(n + S) = Σ scale·w·P re-weighted to π + S·centre), solved
        # directly; a pair at P 0 or 1 keeps it whatever the prior (`evidence.reprior_lr`).
        inv, n, ww = self.inv, self.n, self.ww
        moving = (post > 0) & (post < 1) & np.isfinite(lr)
        fixed = np.bincount(inv, weights=np.where(moving, 0.0, ww * post), minlength=len(n))
        return fixed_point_shares(inv[moving], lr[moving], ww[moving],
                                  fixed + POOL_STRENGTH * self.centre, n + POOL_STRENGTH,
                                  self.centre if start is None else start,
                                  np.ones(len(n), dtype=bool), 1e-3)


def pooled_true_prior(post: np.ndarray, crowd: float | np.ndarray, mix: np.ndarray,
                      k: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Per pair, the prior of holding a relation of its group of pairs: the value at
    which the group's posteriors, re-weighted to it, average to it (the fixed point EM
    reaches for a class share, solved directly: `shares.fixed_point_shares`), shrunk
    towards the group's mean ``mix`` by POOL_STRENGTH pseudo-pairs, within [0.001, 0.999].

    ``post``: P(pair true) under the prior ``crowd`` (per pair: `true_prior_of`); ``mix``: the
    precision of the systems that draw the pair, mixed as the draws are; ``k``: how
    many systems predict it. The systems' precision alone is a poor prior for a pair:
    a system's true instances are more often also other systems', so a pair only
    imprecise systems predict is true less often than their precision (full-size
    battery: 17% of the pairs whose mix is 0.3–0.5), and recall's denominator gains
    their false pairs' mass (docs/internals/noisy-crowds.md §3).

    ``weights``: each pair's weight in recall's sums (its draws over the proposal q),
    so that a group's prior is the one at which the posteriors recall sums, weighted as
    it sums them, average to it: unweighted, the often drawn pairs of precise systems
    set the prior of a group whose rarely drawn pairs count most (1/q).
    """
    groups = PairGroups(mix, k, weights)
    return groups.priors(post, crowd)[groups.inv]


def predicted_relations(pop: Population, pairs: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct keys pair·K + predicate that systems predict on the dense ``pairs``
    (sorted), each key's position in ``pairs``, and how many systems predict it
    (label-free: remembered by the population)."""
    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # A selection from every pair's (made once per population): the labelled pairs
        # change with every batch, the systems' predictions do not.
        uniq, count = _every_predicted(pop)
        where = np.full(pop.n_pairs, -1, dtype=np.int64)
        where[pairs] = np.arange(len(pairs))
        at = where[uniq // ALSO_TRUE_STRIDE]
        on = at >= 0
        return tuple(frozen(a) for a in (uniq[on], at[on], count[on]))
    return pop.memo(("predicted", content_key(pairs)), build)


def _every_predicted(pop: Population) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys pair·K + predicate the systems predict (sorted) and how many
    systems predict each (a system stating one twice counts once)."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        inst = pop.instances()
        keys = inst["pairs"] * ALSO_TRUE_STRIDE + inst["predicates"]
        m = max(len(pop), 1)
        per = np.unique(keys * m + inst["system"])
        uniq, count = np.unique(per // m, return_counts=True)
        return frozen(uniq), frozen(count.astype(float))
    return pop.memo(("predicted", "every pair"), build)


def predicted_true_share(ev: Evidence, t: np.ndarray, predicted: tuple, mix: np.ndarray,
                         k: np.ndarray, weights: np.ndarray, prior: np.ndarray,
                         rounds: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """(P(pair true) under its crowd prior, the pooled prior) of soft-labelled pairs
    whose true class is weighted towards the relations the systems predict on them.

    The crowd's P(pair true) spreads a true pair's prior over the relations by the crowd's
    shares, so a relation system i predicts gets a prior share s_r/T of the true mass,
    while P(i right) gives it i's precision: the same answers for r raise P(i right) far
    more than P(pair true), and min(P(i right), P(pair true)) took mass from recall's
    numerator (docs/internals/noisy-crowds.md §3 "One prior for the pair and its relations").
    Here the true class's likelihood is ρ·(mean over the predicted relations of the
    answers' likelihood, weighted by how many systems predict each) + (1 − ρ)·(the crowd's
    mix over all relations); ρ, the share of true pairs whose relation a system predicted,
    is fitted as EM fits a class share (weighted as recall sums the pairs), alternating
    with the pooled prior. ``t``, ``mix``, ``k``, ``weights`` and ``prior`` (the P(true)
    prior ``t`` was computed with: `Evidence.true_prior_of`): per soft pair (the columns
    of ``predicted`` index them).
    """
    keys, col, count = predicted
    found = np.zeros(len(keys), dtype=bool)
    pos = np.zeros(len(keys), dtype=np.int64)
    if len(ev.soft_keys):
        pos = np.minimum(np.searchsorted(ev.soft_keys, keys), len(ev.soft_keys) - 1)
        found = ev.soft_keys[pos] == keys
    # The prior share precision's P(i right) divides out too (`Evidence.reweight_prior`).
    share = np.clip(ev.reweight_prior(pos, found), 1e-12, 1.0) if len(ev.soft_keys) \
        else np.ones(len(keys))
    # Each class's likelihood up to the pair's common factor: P(class)/its prior share.
    rel = np.where(found, ev.soft_probs[pos] if len(ev.soft_keys) else 0.0, 0.0) / share
    n_u, T = len(t), prior
    seen = np.bincount(col, weights=count, minlength=n_u)
    with np.errstate(divide="ignore", invalid="ignore"):
        pred = np.where(seen > 0, np.bincount(col, weights=count * rel, minlength=n_u) / seen,
                        t / T)
    crowd, none = t / T, (1 - t) / (1 - T)
    inside = (t > 0) & (t < 1)
    groups = PairGroups(mix, k, weights)  # the same in every round
    w = weights / max(float(weights.sum()), 1e-300)
    start: np.ndarray | None = None

    def at(rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """(ρ's next value, P(pair true), the groups' priors) at ρ."""
        nonlocal start
        true_lik = rho * pred + (1 - rho) * crowd
        with np.errstate(divide="ignore", invalid="ignore"):
            post = np.where(inside, T * true_lik / (T * true_lik + (1 - T) * none), t)
            on_pred = np.where(true_lik > 0, rho * pred / true_lik, 1.0)
        post = np.nan_to_num(post, nan=1.0)
        pi = start = groups.priors(post, T, start)
        p_true = reprior(post, T, pi[groups.inv])
        new = float(np.clip((w * p_true * on_pred).sum() / max((w * p_true).sum(), 1e-300),
                            1e-3, 1 - 1e-3))
        return new, post, pi

    # ρ's update g is smooth and contracts: its fixed point is found by secant steps on
    # g(ρ) − ρ (a plain round where a step would leave [0.001, 0.999]), in about half the
    # rounds of iterating g; it stops, as iterating would, where |g(ρ) − ρ| < 1e-5.
    rho, prev = 0.9, None
    for _ in range(rounds):
        new, post, pi = at(rho)
        gap = new - rho
        if abs(gap) < 1e-5:
            break
        step = new
        if prev is not None and gap != prev[1]:
            step = rho - gap * (rho - prev[0]) / (gap - prev[1])
            if not (np.isfinite(step) and 1e-3 <= step <= 1 - 1e-3):
                step = new
        prev, rho = (rho, gap), float(step)
    return post, pi[groups.inv]


def pair_true_share(ev: Evidence, b: sp.spmatrix, n: np.ndarray, q: np.ndarray,
                    k: np.ndarray | None = None, drawn: np.ndarray | None = None,
                    predicted: tuple | None = None) -> np.ndarray:
    """P(each drawn labelled pair holds a relation) as joint recall sums it: the hard
    verdict, or the soft label re-weighted to the pair's own prior — the precision of
    the systems that draw it (mixed as the draws are, noise.py), pooled per group of
    pairs (pooled_true_prior) — once systems' priors are known; the crowd's share before.

    Recall's weight of a pair is this times `Evidence.relations_per_true` (κ).
    ``b``: (systems × drawn pairs) scheme weights, ``n`` draws per system, ``q`` the
    proposal. ``predicted``: `predicted_relations` of the drawn pairs, so that a true
    pair's class leans to the relations systems predict on it (`predicted_true_share`;
    without it, to the crowd's shares). Shared by `recall_instance` and the replicates'
    points (points.py), which passes the label-free ``k`` (systems predicting each pair),
    ``drawn`` (draws of each pair) and ``predicted`` once instead of per replicate.
    """
    t = ev.true_share(ev.pairs)
    if ev.system_prior is None or ev.true_prior is None or not len(t):
        return t
    crowd = ev.true_prior_of(ev.pairs)  # the prior each soft t was computed with
    total = n.sum()
    prec = np.where(np.isnan(ev.system_prior), ev.true_prior, ev.system_prior)
    with np.errstate(divide="ignore", invalid="ignore"):
        mix = np.asarray(b.T @ (n * prec / max(total, 1))).ravel() / q
    mix = np.where(q > 0, mix, ev.true_prior)
    soft = ~np.isnan(ev.true_prob[ev.pairs])
    if soft.any():
        if k is None:
            k = np.asarray((b > 0).sum(axis=0)).ravel()
        # Recall sums a pair with weight draws / q: the group's prior is fitted so.
        if drawn is None:
            drawn = np.asarray(ev.counts.sum(axis=0)).ravel()
        weight = np.where(q > 0, drawn / np.maximum(q, 1e-300), 0.0)
        weight = weight * ev.relations_per_true(ev.pairs)  # and κ true instances if true
        if predicted is not None and ev.soft_keys is not None and ev.soft_prior is not None:
            keys, col, count = predicted
            at = np.full(len(t), -1, dtype=np.int64)
            at[soft] = np.arange(int(soft.sum()))
            sel = at[col] >= 0
            post, mix[soft] = predicted_true_share(
                ev, t[soft], (keys[sel], at[col[sel]], count[sel]), mix[soft], k[soft],
                weight[soft], crowd[soft])
            t = t.copy()
            t[soft] = post
        else:
            mix[soft] = pooled_true_prior(t[soft], crowd[soft], mix[soft], k[soft],
                                          weights=weight[soft])
    return np.where(soft, reprior(t, crowd, mix), t)


def nu_at_edges(nu: np.ndarray, v_nu: np.ndarray, kish: float | np.ndarray, z: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """ν̂'s variance, and its Wilson upper end at the Kish size ``kish``: at 0 or 1 the
    linearised variance is 0, not its uncertainty, so there it is what Wilson implies."""
    nu_lo, nu_hi = ci.wilson(nu, np.broadcast_to(np.asarray(kish, float), nu.shape), z)
    edge = (nu == 0) | (nu == 1)
    return np.where(edge, np.maximum(v_nu, ((nu_hi - nu_lo) / (2 * z)) ** 2), v_nu), nu_hi


def combine_recall(nu: np.ndarray, v_nu: np.ndarray, nu_hi: np.ndarray, n: np.ndarray,
                   covered: np.ndarray, gy: np.ndarray, clusters: Clusters,
                   confidence: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Joint recall r = θ ν + ρ from ν̂ (any estimator of it, independent of Ŷ0, with
    variance ``v_nu`` and upper end ``nu_hi``) and the exhaustive sample: ``covered``
    marks Ŷ0's instances on pairs some system with draws predicts, ``gy`` (m × n0)
    which instances each system found, ``n`` the draws per system.

    Returns (r̂, its variance, lo, hi, θ̂): the log-scale interval with the variance
    V_D[c_i] + θ² Var ν̂ + Var θ̂ Var ν̂ (docs/internals/estimation.md §3, §4.3).
    """
    n0 = gy.shape[1]
    z = ci.z_value(confidence)
    cov_f = covered.astype(float)[None, :]
    theta = float(cov_f.mean())
    v_theta = clusters.variance(cov_f)[0]
    size_theta = _design_sizes(
        np.array([theta]), np.array([v_theta]), clusters.iid_variance(cov_f), n0
    )
    # r_i = θ ν_i + ρ_i is the mean over Ŷ0 of y ↦ ν_i on covered pairs, g_i(y)
    # elsewhere (ρ_i: what system i found outside the sampled region; 0 for every
    # sampled system, it keeps systems without draws unbiased). One clustered
    # variance covers θ, ρ and their covariance.
    contrib = nu[:, None] * cov_f + gy * (1 - cov_f)
    r = contrib.mean(axis=1)
    rho = (gy * (1 - cov_f)).mean(axis=1)
    v_y = clusters.variance(np.nan_to_num(contrib))
    if theta in (0.0, 1.0):
        # θ̂ on the edge: its sample variance is 0, not its uncertainty.
        th_lo, th_hi = ci.wilson(np.array([theta]), size_theta, clusters.quantile(confidence))
        v_edge = ((th_hi[0] - th_lo[0]) / (2 * z)) ** 2
        v_y = np.maximum(v_y, np.where(n == 0, 1.0, nu**2) * v_edge)
    v_theta_f = max(v_theta, 0.0) if np.isfinite(v_theta) else np.inf
    with np.errstate(invalid="ignore"):  # inf · 0 (θ's variance unknown, ν's 0): NaN
        var = v_y + theta**2 * v_nu + v_theta_f * v_nu
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(var > 0, v_y / var, 1.0)
    t = clusters.quantile(confidence, share)
    lo, hi = ci.lognormal(r, var, t)
    lo = np.where(np.isfinite(var), lo, 0.0)
    hi = np.where(np.isfinite(var), hi, 1.0)
    # r = 0: the log scale has no width; bound each factor by its Wilson upper end.
    # ν's own upper end, not the one at ν̂ = 0: r̂ is also 0 when θ̂ is (no instance of
    # Ŷ0 on a predicted pair), and then r = θν can be as large as ν (bounding ν by its
    # end at 0 gave 0 [0, 0.018] for a sample in one document no system found).
    t_y = clusters.quantile(confidence)
    nu_hi0 = np.where(np.isfinite(nu_hi), nu_hi, 1.0)
    _, th_hi0 = ci.wilson(np.array([theta]), size_theta, t_y)
    rho_size = _design_sizes(
        rho, clusters.variance(gy * (1 - cov_f)), clusters.iid_variance(gy * (1 - cov_f)), n0
    )
    _, rho_hi = ci.wilson(rho, rho_size, t_y)
    zero = r == 0
    hi = np.where(zero, np.minimum(1, th_hi0[0] * nu_hi0 + np.where(n == 0, rho_hi, 0)), hi)
    return r, var, lo, hi, theta


def recall_instance(
    pop: Population,
    ev: Evidence,
    draw_scheme: str,
    g: sp.coo_matrix,
    gy: np.ndarray,
    confidence: float,
) -> tuple[dict[str, Interval], dict]:
    """Recall with p0 uniform over true instances: simple and θ·ν + ρ (joint).

    Also returns the pieces of ν̂ that the precision–recall covariance needs.
    """
    m, n0, n = len(pop), len(ev.y_pairs), ev.n
    if n0 == 0:
        nan = np.full(m, np.nan)
        return {k: Interval(nan, np.zeros(m), np.ones(m)) for k in ("simple", "joint")}, {}
    clusters = Clusters(ev.y_docs)
    out = {"simple": simple_recall(gy, clusters, confidence)}
    z = ci.z_value(confidence)

    pt = pop.stacked(draw_scheme)
    drawn = np.flatnonzero(n > 0)
    # θ: share of true instances on pairs some sampled system predicted (q > 0 there).
    known = ev.y_pairs >= 0
    covered = np.zeros(n0, dtype=bool)
    if len(drawn):
        covered[known] = np.asarray((pt[drawn][:, ev.y_pairs[known]] > 0).sum(axis=0)).ravel() > 0

    # ν_i by the balance heuristic: proposal q = Σ_j (n_j/N) p_j over all draws.
    total = n.sum()
    b = pt[:, ev.pairs]
    q = np.asarray(b.T @ (n / max(total, 1))).ravel()
    # t: P(pair true), 0/1 with hard labels; κ: its true predicates if true (1 with one
    # relation). Recall counts true instances, so a pair weighs tκ/q and g is the share
    # of its true predicates system i names: 1/2 for one of two (counted per pair it was
    # a full hit, biasing ν̂ up on multi-relation text, issue 17). With soft labels g is
    # P(i right)/(tκ), so a·g = P(i right)/q and e = (c_i − ν tκ)/q stays the
    # linearised residual.
    t = pair_true_share(ev, b, n, q, predicted=predicted_relations(pop, ev.pairs))
    kappa = ev.relations_per_true(ev.pairs)
    multi = bool((kappa != 1).any())
    tk = t * kappa  # κ = 1: t to the bit
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where((t > 0) & (q > 0), tk / q, 0.0)
        over = None
        if ev.true_prob is not None:
            g = sp.coo_matrix(g) @ sp.diags(np.where(t > 0, 1.0 / np.maximum(tk, 1e-300), 0.0))
            g = g.tocsr()
            # P(i right) > P(pair true)κ: the system's and the pair's priors disagree.
            # A pair is true whenever i's instance on it is right, so in system i's sums
            # the pair's P(true)κ is P(i right) there (g = 1, its weight a = P(i right)/q):
            # one calibration per system, nothing capped. ``over`` = (g − 1)⁺ per cell.
            over = g - g.minimum(1.0)
            over.eliminate_zeros()
        elif multi:
            g = sp.coo_matrix(g) @ sp.diags(1.0 / kappa)
    c_tot = np.asarray(ev.counts.sum(axis=0)).ravel()
    den = float(c_tot @ a)
    g = g.tocsr()
    # Second moments take E[y] = t where the truth y of a soft-labelled pair is unknown
    # (tκ²/q², not t²κ²/q²): its spread around t is a pair's own answer noise, which the
    # parameters' bootstrap leaves to the sampling variance (precision counts it too).
    with np.errstate(divide="ignore", invalid="ignore"):
        a2 = np.where(q > 0, tk * kappa / q**2, 0.0) if ev.true_prob is not None else a * a
    ag = g @ sp.diags(a)
    a2g = g @ sp.diags(a2)
    with np.errstate(divide="ignore", invalid="ignore"):
        cn = sp.diags(np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)) @ ev.counts
        e_ag = (cn @ ag.T).toarray()  # (j × i)
        e_a2g = (cn @ a2g.T).toarray()
        e_a = np.asarray(cn @ a).ravel()[:, None]
        e_a2 = np.asarray(cn @ a2).ravel()[:, None]
        den_i = den
        lift = None
        if over is not None and over.nnz:
            # System i's own weights: a + (P(i right) − tκ)/q on its lifted pairs.
            lift, lift2 = over @ sp.diags(a), over @ sp.diags(a2)
            den_i = den + lift @ c_tot
            e_a = e_a + (cn @ lift.T).toarray()
            e_a2 = e_a2 + (cn @ lift2.T).toarray()
        nu = (ag @ c_tot) / den_i if den > 0 else np.full(m, np.nan)
        # Moments of the linearised residual e = a (g_i - ν_i) within each system's draws.
        m1 = e_ag - nu[None, :] * e_a
        m2 = (1 - 2 * nu[None, :]) * e_a2g + nu[None, :] ** 2 * e_a2
        if multi:
            # a²g² is not a²g where g is a share: the hard labels' (c_i/q)² exactly;
            # the soft ones' E[c_i²]/q², c_i the true relations i names on the pair. A
            # one-relation answer gives E[c_i²] = E[c_i] = P(i right) (a2·g/κ), but
            # relations named together are true together (one answer names them all):
            # c_i² = 4 for two, which P(i right) counted as 2 (joint recall covered 0.83
            # on the Re-DocRED world, docs/internals/docred-coverage.md). (Σp)²/t (a2·g²)
            # is c_i² at certain labels; the larger of the two is taken.
            # (g above 1, a system prior over the pair's: its share, 1, squared.)
            gm = g.minimum(1.0)
            sq = g.multiply(g) if ev.true_prob is None else \
                (g @ sp.diags(1.0 / kappa)).maximum(gm.multiply(gm))
            m2 = m2 + (cn @ (sq @ sp.diags(a2)).T).toarray() - e_a2g
        v_nu = (n[:, None] * per_draw_variance(m1, m2, n)).sum(axis=0) / den_i**2
        kish = den**2 / float(c_tot @ (a * a)) if den > 0 else 0.0
    v_nu, nu_hi = nu_at_edges(nu, v_nu, kish, z)
    r, _, lo, hi, theta = combine_recall(nu, v_nu, nu_hi, n, covered, gy, clusters, confidence)
    # What the former cap min(1, P(i right)/P(pair true)) took from r and widened the
    # upper end by: nothing now that each system's sums lift P(pair true) to its
    # P(i right) (docs/internals/noisy-crowds.md §3 "One calibration per system"); kept in the
    # parts for the tools that report it.
    cap_gap = np.zeros(m)
    # No draw labelled true: ν is not estimable; report the exhaustive-only interval.
    undefined = ~np.isfinite(r)
    simple = out["simple"]
    out["joint"] = Interval(
        np.where(undefined, np.nan, r),
        np.where(undefined, simple.lo, lo),
        np.where(undefined, simple.hi, hi),
    )
    # "ag", "lift": the residual's pieces, e_i = ag_i − ν_i (a + lift_i) with den_i its
    # sum's denominator (a scalar, or one per system where a pair was lifted).
    parts = {"a": a, "nu": nu, "den": den_i, "theta": theta, "mean_e": m1, "cn": cn,
             "cap_gap": cap_gap, "kappa": kappa, "ag": ag.tocsr(), "lift": lift, "v_nu": v_nu,
             "share": None if not multi else (1.0 / kappa if ev.true_prob is not None else g)}
    return out, parts


def precision_recall_cov(
    joint: ImportanceResult, w: np.ndarray, n: np.ndarray, parts: dict
) -> np.ndarray:
    """Cov(P̂_i, r̂_i) of the joint estimators, which share the draws.

    P̂_i = Σ_j (w_ij/n_j) Σ_d r_i(d) and ν̂_i ≈ ν_i + Σ_d e_i(d)/Σ_d a(d), so
    Cov = θ Σ_j w_ij Cov_{p_j}(r_i, e_i) / Σ_d a(d). Where r_i ≠ 0, system i
    predicted the true relation, so r_i e_i = r_i a (1 − ν_i) (with one true relation
    on the pair; `recall_instance`'s "share" otherwise).
    """
    if not parts or np.min(parts["den"]) <= 0:
        return np.zeros(len(n))
    nu = parts["nu"]
    e_ra = (parts["cn"] @ (joint.r @ sp.diags(parts["a"])).T).toarray()  # (j × i)
    e_re = (1 - nu[None, :]) * e_ra
    share = parts.get("share")
    if share is not None:
        # A pair with several true relations: r_i e_i = r_i a (h − ν_i), h the share of
        # its true predicates system i names (the hard labels' g; 1/κ per right instance
        # under soft ones).
        rh = joint.r.multiply(share) if sp.issparse(share) else joint.r @ sp.diags(share)
        e_re = (parts["cn"] @ (rh @ sp.diags(parts["a"])).T).toarray() - nu[None, :] * e_ra
    nn = n[:, None].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = e_re - joint.mean_r * parts["mean_e"]
        c = np.where(nn >= 2, c * nn / (nn - 1), e_re)
    return parts["theta"] * (w * c.T).sum(axis=1) / parts["den"]


def recall_reweighted(
    ev: Evidence, scheme: str, gy: np.ndarray, confidence: float
) -> dict[str, Interval]:
    """Recall under a non-uniform scheme from the exhaustive sample alone.

    p_{Y,s} is estimated by computing the scheme over Ŷ0 itself (self-normalised
    per predicate / subject / cell). The interval is Wilson's at the Kish
    effective size 1/Σ p̂² (exact for a stratified mean with equal stratum
    recalls), divided by the documents' design effect; a plain bootstrap is not
    valid here because duplicated draws collapse inside a stratum and make
    resamples look too alike.
    """
    m, n0 = gy.shape
    if n0 == 0:
        iv = Interval(np.full(m, np.nan), np.zeros(m), np.ones(m))
        return {"simple": iv, "joint": iv}
    p = scheme_weights(scheme, ev.y_preds, ev.y_subjects)
    est = gy @ p
    clusters = Clusters(ev.y_docs)
    size = _design_sizes(
        est, clusters.variance(gy, p), clusters.iid_variance(gy, p), 1.0 / float(p @ p)
    )
    lo, hi = ci.wilson(est, size, clusters.quantile(confidence))
    iv = Interval(est, lo, hi)
    return {"simple": iv, "joint": iv}
