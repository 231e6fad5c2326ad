"""The difference of two systems' joint precision, recall and F1, with a paired interval.

Two systems' joint estimates share their evidence: precision reuses every system's
draws and their labels, recall reuses the exhaustive sample Ŷ0 (and, under the
instance scheme, the draws through ν̂). Their errors are therefore correlated, and
the difference is usually much tighter than two separate intervals suggest.

The covariance comes from the same linearisation the variances use:

- P̂_i = Σ_j (w_ij/n_j) Σ_{d∈j} r_i(d): a linear combination c of P̂_A, P̂_B has
  per-draw term h_j(d) = Σ_s c_s w_sj r_s(d), variance Σ_j Var_j(h_j)/n_j;
- joint recall under "instance" is the Ŷ0 mean of ν_s on covered pairs and g_s
  elsewhere, with ν̂_s − ν_s ≈ Σ_d a(d)(g_s(d) − ν_s)/Σ_d a(d) over all draws: its
  draw part joins h_j (times θ), its Ŷ0 part is a clustered (document-level)
  variance of Σ_s c_s contrib_s(y), and the θ̂ noise on the ν part adds v_θ·Var(ν̂);
- recall under the other schemes is a weighted Ŷ0 mean of g_s: Ŷ0 part only.

The linearised covariance matrix of (P_A, R_A, P_B, R_B) gives correlations; the
reported intervals give the scales (variance implied by each interval's width, as
for F1), so the difference is never sharper than the evidence behind each interval
(floors, sure bounds and t quantiles carry over). Precision and recall limits take
each side's own distance from estimate to limit (MOVER), since Wilson intervals and
sure bounds are not symmetric; F1 differences use the delta method on the same matrix,
with the same directional distances for P and R.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .distinct import ht_variance
from .distinct_estimate import distinct_residuals
from .distinct_estimate import exhaustive_covered as distinct_covered
from .estimators import Estimates, estimate
from .evidence import Evidence
from .importance import ImportanceResult, at_pairs, per_draw_variance
from .population import Population
from .precision import LabelState, precision
from .recall import Clusters, exhaustive_membership, recall_instance
from .schemes import check_scheme, scheme_weights

METRICS = ("precision", "recall", "f1")


@dataclass
class Difference:
    """A − B for one metric: estimate (None when either is not estimable) and interval."""

    estimate: float | None
    lo: float
    hi: float
    paired_sd: float | None  # sd of the difference using the covariance
    separate_sd: float | None  # sd if the two estimates were independent
    correlation: float | None

    @property
    def verdict(self) -> int:
        """+1: A is better; −1: B is better; 0: the interval includes 0."""
        if self.lo > 0:
            return 1
        if self.hi < 0:
            return -1
        return 0


@dataclass
class Comparison:
    scheme: str
    confidence: float
    a: int
    b: int
    estimates: Estimates
    differences: dict[str, Difference]


def _ratio_terms(joint: ImportanceResult, s: int) -> np.ndarray:
    """System s's per-draw precision terms over U, as its joint estimate's variance
    counts them: e = (r − π̂ z)/mass for the ratio π̂ = Σ r/Σ z."""
    r = np.asarray(joint.r[s].toarray()).ravel()
    mass = float(joint.mass[s])
    if joint.z is None or joint.ratio is None or not mass > 0:
        return r
    z = np.asarray(joint.z[s].toarray()).ravel()
    return (r - float(joint.ratio[s]) * z) / mass


class _Linear:
    """Linearised variance of c·(P_A, R_A, P_B, R_B) for the two systems."""

    def __init__(self, pop: Population, ev: Evidence, scheme: str, draw_scheme: str,
                 pair: tuple[int, int], confidence: float) -> None:
        self.pair = pair
        n = ev.n.astype(float)
        self.n = n
        z = ci.z_value(confidence)
        pf, g = at_pairs(pop, ev, scheme)
        _, joint, w = precision(pop, ev, scheme, draw_scheme, pf, z, "wilson_design",
                                LabelState(pop, ev))
        self.cn = sp.diags(np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)) @ ev.counts
        # Per-draw precision terms over U for the two systems, and their weights w_sj:
        # the reported estimate's, the ratio Σ r/Σ z linearised, (r − π̂ z)/mass
        # (`precision._self_normalised`; the plain sum's r alone where no mass landed).
        self.r = [_ratio_terms(joint, s) for s in pair]
        self.w = [w[s] for s in pair]
        n0 = len(ev.y_pairs)
        self.has_y = n0 > 0
        self.draw_r: list[np.ndarray] = [np.zeros(len(ev.pairs)) for _ in pair]
        self.v_theta_nu: list[np.ndarray] = [np.zeros(len(ev.pairs)) for _ in pair]
        self.den = 1.0
        self.v_theta = 0.0
        if not self.has_y:
            return
        gy = exhaustive_membership(pop, ev)
        self.clusters = Clusters(ev.y_docs)
        if scheme != "instance":
            self.y_weights = scheme_weights(scheme, ev.y_preds, ev.y_subjects)
            self.y_values = [gy[s] for s in pair]
            return
        self.y_weights = np.full(n0, 1.0 / n0)
        _, parts = recall_instance(pop, ev, draw_scheme, g, gy, confidence)
        pt = pop.stacked(draw_scheme)
        drawn = np.flatnonzero(ev.n > 0)
        known = ev.y_pairs >= 0
        covered = np.zeros(n0, dtype=bool)
        if len(drawn):
            covered[known] = (np.asarray((pt[drawn][:, ev.y_pairs[known]] > 0).sum(axis=0))
                              .ravel() > 0)
        cov_f = covered.astype(float)
        theta = float(cov_f.mean())
        nu = parts["nu"]
        den = np.broadcast_to(np.asarray(parts["den"], dtype=float), (len(pop),))
        lift = parts["lift"]
        self.y_values = []
        for k, s in enumerate(pair):
            if np.isfinite(nu[s]):
                self.y_values.append(nu[s] * cov_f + gy[s] * (1 - cov_f))
                # θ (ν̂_s − ν_s) ≈ θ Σ_d e_s(d) / den_s with recall_instance's residual
                # e_s = ag_s − ν_s a_s (a_s: its weights, lifted where P(s right) > tκ).
                # Soft labels enter by their expected values: their own noise is in the
                # reported intervals that scale this correlation, not in it.
                a_s = parts["a"] if lift is None else \
                    parts["a"] + np.asarray(lift[s].toarray()).ravel()
                e = np.asarray(parts["ag"][s].toarray()).ravel() - nu[s] * a_s
                self.draw_r[k] = theta * e / den[s]
                self.v_theta_nu[k] = e / den[s]
            else:  # ν not estimable: the joint recall reported is the Ŷ0-only one
                self.y_values.append(gy[s].astype(float))
        v_theta = self.clusters.variance(cov_f[None, :])[0]
        self.v_theta = float(v_theta) if np.isfinite(v_theta) else 0.0

    def _draw_variance(self, per_draw: list[tuple[float, np.ndarray]],
                       weighted: list[tuple[float, np.ndarray, np.ndarray]]) -> float:
        """Σ_j n_j Var_j(h_j) with h_j(u) = Σ c·t(u) + Σ c·(w_sj/n_j)·r_s(u).

        The moments of h_j over system j's draws expand into draw means (cn @ ·) of
        products of the fixed vectors, so every system j is handled at once.
        """
        n = self.n
        base = np.zeros(self.cn.shape[1])
        for c, t in per_draw:
            base = base + c * t
        with np.errstate(divide="ignore", invalid="ignore"):
            coef = [c * np.where(n > 0, wrow / np.maximum(n, 1), 0.0)
                    for c, wrow, _ in weighted]  # (m,) per term: c w_sj / n_j
        vecs = [r for _, _, r in weighted]
        cn = self.cn
        m1 = cn @ base
        m2 = cn @ (base * base)
        for k, v in enumerate(vecs):
            m1 = m1 + coef[k] * (cn @ v)
            m2 = m2 + 2 * coef[k] * (cn @ (base * v))
            for l_, u in enumerate(vecs):
                m2 = m2 + coef[k] * coef[l_] * (cn @ (v * u))
        s2 = per_draw_variance(m1[:, None], m2[:, None], n)[:, 0]
        return float((n * np.where(n > 0, s2, 0.0)).sum())

    def variance(self, c: np.ndarray) -> float:
        """c = coefficients of (P_A, R_A, P_B, R_B)."""
        weighted = [(c[2 * k], self.w[k], self.r[k]) for k in range(2) if c[2 * k] != 0]
        per_draw = [(c[2 * k + 1], self.draw_r[k]) for k in range(2) if c[2 * k + 1] != 0]
        var = self._draw_variance(per_draw, weighted)
        if self.has_y and (c[1] != 0 or c[3] != 0):
            var += self._y_variance(c)
            if self.v_theta:
                v_nu = self._draw_variance(
                    [(c[1], self.v_theta_nu[0]), (c[3], self.v_theta_nu[1])], [])
                var += self.v_theta * v_nu
        return var

    def _y_variance(self, c: np.ndarray) -> float:
        """The exhaustive sample's (clustered) part of c·(P_A, R_A, P_B, R_B)."""
        values = c[1] * self.y_values[0] + c[3] * self.y_values[1]
        v_y = self.clusters.variance(values[None, :], self.y_weights)[0]
        return float(v_y) if np.isfinite(v_y) else np.inf

    def correlation(self) -> np.ndarray:
        """4 × 4 correlation of (P_A, R_A, P_B, R_B); 0 where a variance is not finite."""
        eye = np.eye(4)
        var = np.array([self.variance(eye[i]) for i in range(4)])
        corr = np.eye(4)
        for i in range(4):
            for k in range(i + 1, 4):
                if not (np.isfinite(var[i]) and np.isfinite(var[k])) or var[i] <= 0 \
                        or var[k] <= 0:
                    continue
                cov = (self.variance(eye[i] + eye[k]) - var[i] - var[k]) / 2
                corr[i, k] = corr[k, i] = float(np.clip(cov / np.sqrt(var[i] * var[k]),
                                                        -1.0, 1.0))
        return corr


class _LinearHT(_Linear):
    """The same linearisation under the distinct-pairs estimator (§12): the draw part is
    the HT covariance of the residuals over the distinct drawn pairs
    (`distinct_residuals`), recall's with θ̂ as `distinct_joint` combines it; the
    exhaustive sample's part is the importance estimator's, with ν̂ from the HT sums."""

    def __init__(self, pop: Population, ev: Evidence, scheme: str, draw_scheme: str,
                 pair: tuple[int, int], confidence: float) -> None:
        self.pair = pair
        self.res = distinct_residuals(pop, ev, scheme, draw_scheme, pair, confidence)
        n0 = len(ev.y_pairs)
        self.has_y = n0 > 0
        self.theta = self.v_theta = 0.0
        if not self.has_y:
            return
        gy = exhaustive_membership(pop, ev)
        self.clusters = Clusters(ev.y_docs)
        nu = self.res.nu
        if scheme != "instance" or nu is None:
            self.y_weights = (scheme_weights(scheme, ev.y_preds, ev.y_subjects)
                              if scheme != "instance" else np.full(n0, 1.0 / n0))
            self.y_values = [gy[s].astype(float) for s in pair]
            return
        self.y_weights = np.full(n0, 1.0 / n0)
        cov_f = distinct_covered(pop, ev, draw_scheme).astype(float)
        self.theta = float(cov_f.mean())
        self.y_values = [nu[k] * cov_f + gy[s] * (1 - cov_f) if np.isfinite(nu[k])
                         else gy[s].astype(float) for k, s in enumerate(pair)]
        v_theta = self.clusters.variance(cov_f[None, :])[0]
        self.v_theta = float(v_theta) if np.isfinite(v_theta) else 0.0

    def _ht(self, rows: list[tuple[float, sp.csr_matrix]]) -> float:
        res = self.res
        total = sp.csr_matrix((1, len(res.design.pi)))
        for coef, row in rows:
            if coef:
                total = total + coef * row
        return float(ht_variance(total, res.design)[0])

    def variance(self, c: np.ndarray) -> float:
        """c = coefficients of (P_A, R_A, P_B, R_B)."""
        res = self.res
        nu_ok = [res.nu is not None and bool(np.isfinite(res.nu[k])) for k in range(2)]
        e_nu = [res.nu_residual[k] if nu_ok[k] else None for k in range(2)]
        rows = [(c[0], res.precision[0]), (c[2], res.precision[1])]
        rows += [(self.theta * c[1 + 2 * k], e_nu[k]) for k in range(2) if nu_ok[k]]
        var = self._ht(rows)
        if self.has_y and (c[1] != 0 or c[3] != 0):
            var += self._y_variance(c)
            if self.v_theta:
                var += self.v_theta * self._ht([(c[1 + 2 * k], e_nu[k])
                                                for k in range(2) if nu_ok[k]])
        return var


def _f1_gradient(p: float, r: float) -> tuple[float, float]:
    s = p + r
    if s <= 0:
        return 0.0, 0.0
    return 2 * r * r / (s * s), 2 * p * p / (s * s)


def _directional(c: np.ndarray, corr: np.ndarray, block: dict, a: int, b: int,
                 z: float) -> tuple[float, float]:
    """Half-widths (down, up) of c·(P_A, R_A, P_B, R_B) from each side's own distances
    to its limits (MOVER, Zou & Donner 2008), with the linearised correlations.

    The intervals are not symmetric about the estimates (Wilson; sure label bounds,
    where the clipped estimate often sits at an edge): a width-implied sd put the
    difference's limits where neither interval does and covered ~0.86, not 0.9. Going
    down, a term with c > 0 uses its lower distance and one with c < 0 its upper.
    """
    down, up = np.zeros(4), np.zeros(4)
    for k, (m, s) in enumerate((("precision", a), ("recall", a), ("precision", b),
                                ("recall", b))):
        iv = block[m]["joint"]
        est, lo, hi = iv.estimate[s], iv.lo[s], iv.hi[s]
        if np.isfinite(est):
            below, above = max(est - lo, 0.0), max(hi - est, 0.0)
        else:  # no estimate: the width-implied spread on both sides
            below = above = (hi - lo) / 2
        down[k], up[k] = (below, above) if c[k] >= 0 else (above, below)
    cd, cu = c * down, c * up
    return (float(np.sqrt(max(cd @ corr @ cd, 0.0))),
            float(np.sqrt(max(cu @ corr @ cu, 0.0))))


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def compare(pop: Population, ev: Evidence, a: int, b: int, draw_scheme: str = "instance",
            scheme: str | None = None, confidence: float = 0.9,
            estimates: Estimates | None = None, estimator: str = "importance") -> Comparison:
    """A − B in joint precision, recall and F1 with intervals that use their covariance.

    a, b: system indices in ``pop``. ``estimates`` may pass a result of ``estimate``
    for the same inputs (with ``scheme`` among its schemes) to avoid recomputing it.
    ``estimator``: the joint estimator (`estimate`'s) whose estimates are compared, and
    whose linearisation gives their correlation.
    """
    check_scheme(draw_scheme)
    scheme = check_scheme(scheme or draw_scheme)
    if a == b:
        raise ValueError("compare needs two different systems")
    for idx in (a, b):
        if not 0 <= idx < len(pop):
            raise ValueError(f"system index {idx} is out of range (0..{len(pop) - 1})")
    z = ci.z_value(confidence)
    res = estimates if estimates is not None and scheme in estimates.results else \
        estimate(pop, ev, draw_scheme, [scheme], confidence, estimator=estimator)
    block = res.results[scheme]
    est = {m: [block[m]["joint"].estimate[s] for s in (a, b)] for m in METRICS}
    sd = {m: [float(np.sqrt(ci.var_from_interval(block[m]["joint"].lo[s],
                                                 block[m]["joint"].hi[s], z)))
              for s in (a, b)] for m in METRICS}
    linear = _LinearHT if estimator == "distinct" else _Linear
    lin = linear(pop, ev, scheme, draw_scheme, (a, b), confidence)
    corr = lin.correlation()
    # Scales from the reported intervals: (P_A, R_A, P_B, R_B).
    scale = np.array([sd["precision"][0], sd["recall"][0], sd["precision"][1],
                      sd["recall"][1]])
    cov = corr * np.outer(scale, scale)
    out: dict[str, Difference] = {}
    for metric in METRICS:
        ea, eb = est[metric]
        if metric == "f1":
            gpa = _f1_gradient(np.nan_to_num(est["precision"][0]), np.nan_to_num(est["recall"][0]))
            gpb = _f1_gradient(np.nan_to_num(est["precision"][1]), np.nan_to_num(est["recall"][1]))
            c = np.array([gpa[0], gpa[1], -gpb[0], -gpb[1]])
            ca, cb = c.copy(), c.copy()
            ca[2:] = 0
            cb[:2] = 0
            var_sep = float(ca @ cov @ ca + cb @ cov @ cb)
            # The F1 intervals themselves already hold P–R covariance within a system;
            # where the gradient vanishes (P = R = 0) fall back to their widths.
            if not c.any():
                var_sep = sd["f1"][0] ** 2 + sd["f1"][1] ** 2
                var = var_sep
            else:
                var = float(c @ cov @ c)
        else:
            k = 0 if metric == "precision" else 1
            c = np.zeros(4)
            c[k], c[k + 2] = 1.0, -1.0
            var = float(c @ cov @ c)
            var_sep = scale[k] ** 2 + scale[k + 2] ** 2
        var = max(var, 0.0)
        block_m = block[metric]["joint"]
        if np.isfinite(ea) and np.isfinite(eb):
            diff = float(ea - eb)
            if c.any():
                below, above = _directional(c, corr, block, a, b, z)
            else:
                below = above = z * np.sqrt(var)
            lo, hi = max(diff - below, -1.0), min(diff + above, 1.0)
            rho = float(corr[k, k + 2]) if metric != "f1" else None
            out[metric] = Difference(diff, lo, hi, float(np.sqrt(var)),
                                     float(np.sqrt(var_sep)), rho)
        else:
            # Either side not estimable: the widest difference both intervals allow.
            out[metric] = Difference(None, float(block_m.lo[a] - block_m.hi[b]),
                                     float(block_m.hi[a] - block_m.lo[b]), None, None, None)
    return Comparison(scheme, confidence, a, b, res, out)


def with_correction(cmp: Comparison, replicates: Sequence[Mapping[tuple[str, str, str],
                                                                   np.ndarray]]
                    ) -> Comparison:
    """The differences widened by the noise correction's own uncertainty, as the
    leaderboard widens each system's interval (`noise.widen`): ``replicates`` are the
    point estimates under each replicate's soft labels (`noise.replicate_estimates`).

    The variance added is that of A − B over the replicates, not the sum of the two
    systems' own: a replicate's soft labels move both systems, mostly alike (a pair
    both predict), so the two separate variances would overstate the difference's.
    Each side keeps its shape: half-width h becomes √(h² + z² v). Fewer than two
    replicates: unchanged.
    """
    if len(replicates) < 2:
        return cmp
    z = ci.z_value(cmp.confidence)
    out = {}
    for metric, d in cmp.differences.items():
        key = (cmp.scheme, metric, "joint")
        vals = np.array([[r[key][cmp.a], r[key][cmp.b]] for r in replicates if key in r],
                        dtype=float)
        ok = np.isfinite(vals).all(axis=1) if len(vals) else np.zeros(0, bool)
        if d.estimate is None or ok.sum() < 2:
            out[metric] = d
            continue
        v = float(np.var(vals[ok, 0] - vals[ok, 1], ddof=1))
        v_sep = float(np.var(vals[ok, 0], ddof=1) + np.var(vals[ok, 1], ddof=1))
        extra = z * z * v
        lo = max(d.estimate - np.sqrt((d.estimate - d.lo) ** 2 + extra), -1.0)
        hi = min(d.estimate + np.sqrt((d.hi - d.estimate) ** 2 + extra), 1.0)
        out[metric] = Difference(d.estimate, float(lo), float(hi),
                                 None if d.paired_sd is None else
                                 float(np.sqrt(d.paired_sd ** 2 + v)),
                                 None if d.separate_sd is None else
                                 float(np.sqrt(d.separate_sd ** 2 + v_sep)), d.correlation)
    return replace(cmp, differences=out)


__all__ = ["Comparison", "Difference", "compare", "with_correction"]
