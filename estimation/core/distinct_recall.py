"""Recall and F1 with the distinct-pairs Horvitz–Thompson ν (docs/internals/estimation.md §12).

Joint recall is r_i = θ ν_i + ρ_i (§3): θ, the share of the true instances on pairs that
some system with draws predicts, and ρ_i, what system i found outside them, come from
the exhaustive sample Ŷ0 exactly as today (`recall.combine_recall`, document-clustered);
only ν_i, system i's share of the true instances on those pairs, is estimated from the
pool's labels, here as a Hájek ratio of HT totals over the distinct drawn true pairs,

    ν̂_i = Σ_{u∈S, true} G_i(u)/π_u  /  Σ_{u∈S, true} κ(u)/π_u,

with κ(u) the true relations of pair u and G_i(u) how many of them system i names.

Covariances. Ŷ0 (documents annotated exhaustively) and the systems' draws are
independent samples of a fixed truth: labels are the truth (no crowd error), so a pair
in both contributes the same value to both and nothing random is shared. Hence
Cov(ν̂, θ̂) = Cov(ν̂, ρ̂) = 0, which `combine_recall`'s variance
V_D[c_i] + θ² Var ν̂ + Var θ̂ Var ν̂ assumes. Precision and ν̂ share the draws:
Cov(P̂_i, r̂_i) = E[θ̂] Cov(P̂_i, ν̂_i) (θ̂ independent of both), and Cov(P̂_i, ν̂_i) is the
HT covariance (`ht_covariance`) of their linearised residuals,
e_P = P_i (h_i − P̂_i)/M̂_i over S and e_ν = (G_i − ν̂_i κ)/T̂_κ over S's true pairs.
F1 = 2PR/(P+R) by the delta method with that covariance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .distinct import Design, _csr, ht_covariance, ht_ratio
from .recall import Clusters, combine_recall, nu_at_edges


@dataclass(frozen=True)
class DistinctRecall:
    """Per system: joint recall r̂ = θ̂ ν̂ + ρ̂, its variance and interval, and its parts."""

    estimate: np.ndarray
    variance: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    theta: float
    nu: np.ndarray
    nu_variance: np.ndarray


def covered_instances(P: sp.spmatrix | np.ndarray, n: np.ndarray,
                      y_pairs: np.ndarray) -> np.ndarray:
    """Which instances of Ŷ0 (their pairs ``y_pairs``) lie where π > 0: on a pair that
    some system with draws (n_j > 0) predicts."""
    P = _csr(P)
    sampled = np.flatnonzero(np.asarray(n) > 0)
    if not len(sampled) or not len(y_pairs):
        return np.zeros(len(y_pairs), dtype=bool)
    return np.asarray((P[sampled][:, y_pairs] > 0).sum(axis=0)).ravel() > 0


def distinct_nu(P: sp.spmatrix | np.ndarray, found: sp.spmatrix | np.ndarray,
                kappa: np.ndarray, n: np.ndarray, drawn: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, float]:
    """ν̂_i, its linearised variance, and the Kish size of the true pairs' weights κ/π.

    ``P`` (systems × pairs) the design; ``found`` (same shape): G_i(u), how many of pair
    u's true relations system i names; ``kappa`` (pairs,): true relations per pair (0 on a
    false pair); ``drawn``: column ids of the distinct drawn (labelled) pairs.
    """
    P, found = _csr(P), _csr(found)
    drawn = np.unique(np.asarray(drawn, dtype=np.int64))
    true = drawn[np.asarray(kappa)[drawn] > 0]
    m = P.shape[0]
    if not len(true):
        return np.full(m, np.nan), np.full(m, np.nan), 0.0
    design = Design.of(P[:, true], n)
    k = np.asarray(kappa, float)[true]
    nu, var, _ = ht_ratio(found[:, true], k[None, :], design)
    w = k / design.pi
    return nu, var, float(w.sum() ** 2 / (w * w).sum())


def distinct_recall(P: sp.spmatrix | np.ndarray, found: sp.spmatrix | np.ndarray,
                    kappa: np.ndarray, n: np.ndarray, drawn: np.ndarray,
                    covered: np.ndarray, gy: np.ndarray, docs: np.ndarray,
                    confidence: float = 0.9) -> DistinctRecall:
    """Joint recall θ̂ ν̂ + ρ̂ with the HT ν̂ (`distinct_nu`) and today's exhaustive terms.

    ``covered`` (`covered_instances`), ``gy`` (systems × n0: which instances of Ŷ0 each
    system found) and ``docs`` (n0,: the document of each, 0..D−1; every instance its own
    for an i.i.d. Ŷ0) describe the exhaustive sample. The interval is `combine_recall`'s
    (log scale, Satterthwaite t on the documents); NaN where no drawn pair is true.
    """
    z = ci.z_value(confidence)
    nu, v_nu, kish = distinct_nu(P, found, kappa, n, drawn)
    v_nu, nu_hi = nu_at_edges(nu, v_nu, kish, z)
    r, var, lo, hi, theta = combine_recall(nu, v_nu, nu_hi, np.asarray(n), covered, gy,
                                           Clusters(np.asarray(docs)), confidence)
    return DistinctRecall(r, var, lo, hi, theta, nu, v_nu)


def precision_nu_covariance(P: sp.spmatrix | np.ndarray, right: sp.spmatrix | np.ndarray,
                            found: sp.spmatrix | np.ndarray, kappa: np.ndarray,
                            n: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """Cov(P̂_i, ν̂_i) of `distinct_precision` and `distinct_nu` over the same draws.

    The HT covariance of the linearised residuals P_i (h_i − P̂_i)/M̂_i (all drawn pairs)
    and (G_i − ν̂_i κ)/T̂_κ (its drawn true pairs; 0 on the false ones). ``right``:
    P_i(u) h_i(u) as for `distinct_precision`. 0 where either is undefined.
    """
    P, right, found = _csr(P), _csr(right), _csr(found)
    drawn = np.unique(np.asarray(drawn, dtype=np.int64))
    design = Design.of(P[:, drawn], n)
    PS = design.P
    k = np.asarray(kappa, float)[drawn]
    m = P.shape[0]
    p_est, _, mass = ht_ratio(right[:, drawn], PS, design)
    nu, _, tk = ht_ratio(found[:, drawn], k[None, :], design)
    if not (tk > 0).any():
        return np.zeros(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_p = (right[:, drawn] - PS.multiply(np.nan_to_num(p_est)[:, None])).multiply(
            np.where(mass > 0, 1.0 / mass, 0.0)[:, None])
        kk = sp.csr_matrix(np.ones((m, 1))) @ sp.csr_matrix(k[None, :])
        e_nu = (found[:, drawn] - kk.multiply(np.nan_to_num(nu)[:, None])).multiply(
            np.where(tk > 0, 1.0 / tk, 0.0)[:, None])
    return ht_covariance(e_p, e_nu, design)


def f1_variance(p: np.ndarray, var_p: np.ndarray, r: np.ndarray, var_r: np.ndarray,
                cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F1 = 2PR/(P+R) and its delta-method variance
    a² Var P + b² Var R + 2ab Cov(P, R), a = 2R²/(P+R)², b = 2P²/(P+R)²."""
    s = p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(s > 0, 2 * r * r / (s * s), 0.0)
        b = np.where(s > 0, 2 * p * p / (s * s), 0.0)
    return ci.f1_score(p, r), a * a * var_p + b * b * var_r + 2 * a * b * cov
