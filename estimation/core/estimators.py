"""Simple and joint estimators of precision, recall and F1 for all systems at once.

Notation follows DESIGN §6. Everything is computed over the distinct labelled
drawn pairs U (columns) and the systems (rows), with sparse matrices; p_i is
needed only at U, the overlap matrix comes from the Population.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .population import Population
from .schemes import SCHEMES, check_scheme, scheme_weights

NO_RELATION = -1
UNLABELLED = -2
# Predicate codes are below this; pair·stride + predicate is a unique (pair, predicate) key.
ALSO_TRUE_STRIDE = 1 << 20

PRECISION_METHODS = ("wilson_design", "normal")


@dataclass
class Interval:
    """Point estimates and interval ends, one entry per system (NaN = no estimate)."""

    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass
class Evidence:
    """Draws, labels and exhaustive sample, indexed against a Population.

    n:        (m,) usable draws per system (draws of pairs without a label are dropped)
    pending:  (m,) draws dropped because their pair has no label yet
    pairs:    (nU,) dense pair index of the distinct labelled drawn pairs U
    counts:   (m × nU) CSR, draws of system j landing on pair u
    label:    (n_pairs,) label code per pair: predicate code, -1 no relation, -2 unlabelled
    y_pairs:  (n0,) dense pair index of the exhaustive true instances (-1: pair unknown)
    y_preds, y_subjects: (n0,) their predicate and subject codes
    also_true: sorted keys pair·K + predicate of further true predicates on pairs
              whose crowd label holds two relations (a founder who is also an employee)
    """

    n: np.ndarray
    pending: np.ndarray
    pairs: np.ndarray
    counts: sp.csr_matrix
    label: np.ndarray
    y_pairs: np.ndarray
    y_preds: np.ndarray
    y_subjects: np.ndarray
    also_true: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def correct(self, pairs: np.ndarray, predicates: np.ndarray) -> np.ndarray:
        """Whether each (dense pair index, predicate code) agrees with the crowd label."""
        ok = self.label[pairs] == predicates
        if len(self.also_true):
            ok |= np.isin(pairs * ALSO_TRUE_STRIDE + predicates, self.also_true)
        return ok


@dataclass
class Estimates:
    names: list[str]
    n: np.ndarray
    pending: np.ndarray
    labels_used: np.ndarray
    # results[scheme][metric][kind] with metric in precision/recall/f1, kind simple/joint
    results: dict[str, dict[str, dict[str, Interval]]] = field(default_factory=dict)


def prepare_evidence(
    pop: Population,
    draws: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    label_pairs: np.ndarray,
    label_preds: np.ndarray,
    exhaustive_pairs: np.ndarray | None = None,
    exhaustive_preds: np.ndarray | None = None,
    exhaustive_subjects: np.ndarray | None = None,
) -> Evidence:
    """Index raw arrays (pair ids, predicate codes) against the population.

    draws: per system (by name, or a sequence in population order) the pair ids
    drawn i.i.d. from its distribution, repeats allowed. label_preds uses -1 for
    "no relation"; a pair may appear more than once when its label holds several
    relations (its first row is the primary one). exhaustive_subjects defaults to the
    pair id.
    """
    m = len(pop)
    if isinstance(draws, Mapping):
        unknown = set(draws) - set(pop.names)
        if unknown:
            raise ValueError(f"draws given for unknown system(s): {sorted(unknown)}")
        per_system = [
            np.asarray(draws.get(name, []), dtype=np.int64) for name in pop.names
        ]
    else:
        if len(draws) != m:
            raise ValueError(f"expected draws for {m} systems, got {len(draws)}")
        per_system = [np.asarray(d, dtype=np.int64) for d in draws]

    label = np.full(pop.n_pairs, UNLABELLED, dtype=np.int64)
    lp = pop.lookup_pairs(np.asarray(label_pairs, dtype=np.int64))
    lpred = np.asarray(label_preds, dtype=np.int64)
    known = lp >= 0
    # The first row of each pair is its primary label; later rows add true predicates.
    _, first = np.unique(lp, return_index=True)
    primary = np.zeros(len(lp), dtype=bool)
    primary[first] = True
    label[lp[known & primary]] = lpred[known & primary]
    extra = known & ~primary & (lpred >= 0)
    also_true = np.unique(lp[extra] * ALSO_TRUE_STRIDE + lpred[extra])

    sys_idx, pair_idx = [], []
    pending = np.zeros(m, dtype=np.int64)
    for k, d in enumerate(per_system):
        idx = pop.lookup_pairs(d)
        cols, _ = pop._systems[k].pair_row("instance")
        pos = np.searchsorted(cols, idx)
        ok = (
            (idx >= 0)
            & (pos < len(cols))
            & (cols[np.minimum(pos, len(cols) - 1)] == idx)
        )
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"draws[{pop.names[k]!r}][{bad}]: pair {int(d[bad])} is not among the "
                "system's instances"
            )
        has_label = label[idx] != UNLABELLED
        pending[k] = int((~has_label).sum())
        sys_idx.append(np.full(int(has_label.sum()), k, dtype=np.int64))
        pair_idx.append(idx[has_label])
    sys_all = np.concatenate(sys_idx) if sys_idx else np.zeros(0, np.int64)
    pair_all = np.concatenate(pair_idx) if pair_idx else np.zeros(0, np.int64)
    u, u_inv = np.unique(pair_all, return_inverse=True)
    counts = sp.csr_matrix(
        (np.ones(len(pair_all)), (sys_all, u_inv.ravel())), shape=(m, len(u))
    )
    n = np.bincount(sys_all, minlength=m).astype(np.int64)

    if exhaustive_pairs is None:
        exhaustive_pairs = np.zeros(0, np.int64)
        exhaustive_preds = np.zeros(0, np.int64)
    y_ids = np.asarray(exhaustive_pairs, dtype=np.int64)
    y_subj = (
        y_ids
        if exhaustive_subjects is None
        else np.asarray(exhaustive_subjects, np.int64)
    )
    return Evidence(
        n=n,
        pending=pending,
        pairs=u,
        counts=counts,
        label=label,
        y_pairs=pop.lookup_pairs(y_ids),
        y_preds=np.asarray(exhaustive_preds, dtype=np.int64),
        y_subjects=y_subj,
        also_true=also_true,
    )


def mixing_weights(overlap: np.ndarray, n: np.ndarray) -> np.ndarray:
    """w_ij ∝ n_j O_ij, normalised over j; rows without any overlap stay 0."""
    w = overlap * np.asarray(n, dtype=float)[None, :]
    total = w.sum(axis=1, keepdims=True)
    np.divide(w, total, out=w, where=total > 0)
    return w


def _per_draw_variance(m1: np.ndarray, m2: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Unbiased per-draw variance from first/second moments of n_j draws (rows j).

    With a single draw the variance is not estimable; the second moment bounds it.
    """
    n = n[:, None].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = np.where(n >= 2, (m2 - m1 * m1) * n / (n - 1), m2)
    return np.maximum(s2, 0)


def _at_pairs(
    pop: Population, ev: Evidence, scheme: str
) -> tuple[sp.coo_matrix, sp.coo_matrix]:
    """p_i(x)·f(x) summed per (system, pair in U), and the correct-instance indicator.

    Returns (PF, G) as coo (m × nU): PF_iu = Σ_{x of i on u, correct} p_{i,s}(x),
    G_iu = 1 if i predicted the true relation of u.
    """
    inst = pop.instances()
    where = np.full(pop.n_pairs, -1, dtype=np.int64)
    where[ev.pairs] = np.arange(len(ev.pairs))
    col = where[inst["pairs"]]
    sel = col >= 0
    sel[sel] = ev.correct(inst["pairs"][sel], inst["predicates"][sel])
    shape = (len(pop), len(ev.pairs))
    rows, cols = inst["system"][sel], col[sel]
    pf = sp.coo_matrix((pop.instance_probs(scheme)[sel], (rows, cols)), shape=shape)
    g = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
    return pf, g


class ImportanceResult(NamedTuple):
    estimate: np.ndarray  # (m,)
    variance: np.ndarray  # (m,)
    neff: np.ndarray  # (m,) effective sample size of the weights
    r: sp.csr_matrix  # (m × nU) per-draw terms p_i f_i / q_i
    mean_r: np.ndarray  # (j × i) mean of r_i over system j's draws


def importance_estimate(
    a: sp.csr_matrix,
    pf: sp.coo_matrix,
    b: sp.csr_matrix,
    w: np.ndarray,
    counts_per_draw: sp.csr_matrix,
    n: np.ndarray,
) -> ImportanceResult:
    """Σ_j (w_ij/n_j) Σ_{u∈X̂_j} pf_i(u)/q_i(u) with q_i = Σ_j w_ij b_j, for every i.

    a, pf: target mass and target mass on correct instances at U (m × nU);
    b: proposal rows at U; counts_per_draw: counts / n_j.
    Besides estimate and variance it returns the effective size
    1 / Σ_j (w_ij²/n_j) E_{p_j}[(p_i/q_i)²], i.e. the n of a plain proportion with
    the same variance when labels are unrelated to the weights.
    """
    qt = np.asarray(b.T.tocsr() @ w.T)  # (nU × m): q_i(u)
    a = a.tocoo()

    def ratio(m: sp.coo_matrix) -> sp.csr_matrix:
        # q = 0 only where no draw can reach (systems without a donor): no term.
        q = qt[m.col, m.row]
        vals = np.divide(m.data, q, out=np.zeros(len(q)), where=q > 0)
        return sp.csr_matrix((vals, (m.row, m.col)), shape=m.shape)

    z, r = ratio(a), ratio(pf)
    m1 = (counts_per_draw @ r.T).toarray()  # (j × i): mean of r_i under p_j
    m2 = (counts_per_draw @ r.multiply(r).T).toarray()
    z2 = (counts_per_draw @ z.multiply(z).T).toarray()
    est = (w * m1.T).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        coef = np.where(n > 0, w * w / n[None, :], 0.0)  # (i × j): w_ij² / n_j
    var = (coef * _per_draw_variance(m1, m2, n).T).sum(axis=1)
    with np.errstate(divide="ignore"):
        neff = 1.0 / (coef * z2.T).sum(axis=1)
    return ImportanceResult(est, var, neff, r, m1)


def exact_effective_size(
    ps: sp.csr_matrix, pt: sp.csr_matrix, w: np.ndarray, n: np.ndarray
) -> np.ndarray:
    """1 / Σ_j (w_ij²/n_j) E_{p_j}[(p_i/q_i)²] computed over all of X_i, not the draws.

    Reweighting to another scheme gives heavy-tailed weights; a sample that misses
    the rare heavy elements underestimates both the estimate and its variance, so
    the interval must not rely on the draws alone for its width.

    With a = ps, the sum for system i is Σ_u a_iu² v_iu / q_iu² over i's pairs, where
    q_iu = Σ_j w_ij pt_ju and v_iu = Σ_j (w_ij²/n_j) pt_ju are entries of the
    products W·PT and W2N·PT, needed only at the nonzeros of ps. A diagonal w (the
    simple estimator) makes them multiples of pt_iu itself; otherwise the products
    are taken in column blocks (see ``_products_at``), never expanding the
    (i, u, j) triples, whose number grows with the square of the overlap.
    """
    ps, pt = _canonical(ps), _canonical(pt)
    m = ps.shape[0]
    w = np.asarray(w, dtype=float)
    n = np.asarray(n)
    if ps.shape != pt.shape or w.shape != (m, m) or n.shape != (m,):
        raise ValueError(
            f"shapes differ: ps {ps.shape}, pt {pt.shape}, w {w.shape}, n {n.shape}; "
            "expected two stacked matrices of one population, m × m weights, m counts"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        w2n = np.where(n > 0, w * w / n[None, :], 0.0)
    rows = np.repeat(np.arange(m), np.diff(ps.indptr))
    if np.count_nonzero(w - np.diag(np.diagonal(w))) == 0:
        p_own = _values_at(pt, ps, rows)
        q = np.diagonal(w)[rows] * p_own
        v = np.diagonal(w2n)[rows] * p_own
    else:
        q, v = _products_at(ps, pt, [w, w2n])
    terms = _terms(ps.data, q, v)
    with np.errstate(divide="ignore"):
        return 1.0 / np.bincount(rows, weights=terms, minlength=m)


def _terms(a: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """a² v / q² per (system, pair); no term where no draw can reach (q = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, a**2 * v / q**2, 0.0)


# Memory of one block of products (pairs × 2m doubles): 32 MiB, 20k pairs at m = 100.
_BLOCK_BYTES = 32 << 20


def _canonical(x: sp.spmatrix) -> sp.csr_matrix:
    """CSR with sorted, summed indices, without modifying the caller's matrix."""
    x = sp.csr_matrix(x)
    if not x.has_canonical_format:
        x = x.copy()
        x.sum_duplicates()
    return x


def _values_at(x: sp.csr_matrix, like: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """x at the nonzeros of ``like`` (rows: their row indices), 0 where x has none.

    Both canonical CSR of one shape.
    """
    if np.array_equal(x.indptr, like.indptr) and np.array_equal(x.indices, like.indices):
        # The usual case: two schemes of one population share the pattern.
        return x.data
    if x.nnz == 0:
        return np.zeros(like.nnz)
    ncol = np.int64(x.shape[1])
    keys = np.repeat(np.arange(x.shape[0], dtype=np.int64), np.diff(x.indptr)) * ncol
    keys += x.indices
    want = rows.astype(np.int64) * ncol + like.indices
    pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    return np.where(keys[pos] == want, x.data[pos], 0.0)


def _products_at(
    ps: sp.csr_matrix, pt: sp.csr_matrix, lefts: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """(L·PT)_iu at the nonzeros of ps (in ps's CSR order), for each L in lefts.

    ps: (k × pairs), pt: (m × pairs), each L: (k × m). Walks the pairs in column
    blocks: the block of PTᵀ (CSR, pairs × systems j) times the dense [L₁ᵀ | L₂ᵀ …]
    in C, summing each pair's systems in ascending j (the order of a per-entry
    sum over j), then picks the entries of ps in the block. Memory is one block,
    never the (i, u, j) triples. Systems j that every L leaves out are skipped.
    """
    k, n_cols = ps.shape
    out = [np.zeros(ps.nnz) for _ in lefts]
    used = np.flatnonzero(np.any([(L != 0).any(axis=0) for L in lefts], axis=0))
    if len(used) == 0 or ps.nnz == 0:
        return out
    # ps in column order; data holds each entry's position in CSR order.
    order = sp.csr_matrix(
        (np.arange(ps.nnz, dtype=np.int64), ps.indices, ps.indptr), shape=ps.shape
    ).tocsc()
    ptt = pt[used].T.tocsr()  # pairs × used systems, ascending within a pair
    rhs = np.ascontiguousarray(np.hstack([L[:, used].T for L in lefts]))
    width = rhs.shape[1]
    col = np.repeat(np.arange(n_cols, dtype=np.int64), np.diff(order.indptr))
    step = max(1, _BLOCK_BYTES // (8 * width))
    for c0 in range(0, n_cols, step):
        c1 = min(c0 + step, n_cols)
        s, e = order.indptr[c0], order.indptr[c1]
        if s == e:
            continue
        flat = (ptt[c0:c1] @ rhs).ravel()  # row u - c0: every L's column block
        at = (col[s:e] - c0) * width + order.indices[s:e]
        pos = order.data[s:e]
        for r, values in enumerate(out):
            values[pos] = flat.take(at + r * k)
    return out


def _precision_interval(
    est: np.ndarray, var: np.ndarray, neff: np.ndarray, z: float, method: str
) -> tuple[np.ndarray, np.ndarray]:
    if method == "normal":
        return ci.normal(est, var, z)
    if method == "wilson_design":
        # Wilson at the effective size implied by the variance estimate; where that
        # is degenerate (estimate 0 or 1) use the weights' effective size instead.
        with np.errstate(divide="ignore", invalid="ignore"):
            n_var = est * (1 - est) / var
        usable = (var > 0) & (est > 0) & (est < 1)
        return ci.wilson(est, np.where(usable, n_var, neff), z)
    raise ValueError(f"unknown precision interval method {method!r}")


def _precision(
    pop: Population,
    ev: Evidence,
    scheme: str,
    draw_scheme: str,
    pf: sp.coo_matrix,
    z: float,
    method: str,
) -> tuple[dict[str, Interval], ImportanceResult, np.ndarray]:
    """Simple and joint precision; also the joint terms and weights, for F1."""
    n = ev.n
    a = pop.stacked(scheme)[:, ev.pairs]
    b = pop.stacked(draw_scheme)[:, ev.pairs]
    cn = sp.diags(np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)) @ ev.counts
    out = {}

    ps, pt = pop.stacked(scheme), pop.stacked(draw_scheme)
    reweighted = scheme != draw_scheme

    def interval(est, var, neff, w):
        if reweighted:
            # Never narrower than the weights' exact effective size allows.
            neff = exact_effective_size(ps, pt, w, n)
            with np.errstate(divide="ignore", invalid="ignore"):
                var = np.maximum(var, est * (1 - est) / neff)
        return _precision_interval(est, var, neff, z, method)

    w_simple = np.diag((n > 0).astype(float))
    est, var, neff, _, _ = importance_estimate(a, pf, b, w_simple, cn, n)
    if reweighted:
        lo, hi = interval(est, var, neff, w_simple)
    else:
        lo, hi = ci.wilson(est, n, z)  # a plain proportion of the own draws
    none = n == 0
    out["simple"] = Interval(
        np.where(none, np.nan, est), np.where(none, 0, lo), np.where(none, 1, hi)
    )

    w = mixing_weights(pop.overlap(scheme, draw_scheme), n)
    joint = importance_estimate(a, pf, b, w, cn, n)
    est, var, neff = joint.estimate, joint.variance, joint.neff
    lo, hi = interval(est, var, neff, w)
    est = est.copy()
    # Systems without draws of their own: q_i may miss part of X_i. The estimate
    # covers only the mass the others' draws reach; the rest is bounded by [0, mass].
    for i, missing in zip(*_unreached_mass(ps, pt, w, none), strict=True):
        if missing > 1e-12:
            lo_i, hi_i = ci.normal(est[i : i + 1], var[i : i + 1], z)
            est[i] = np.nan
            lo[i], hi[i] = lo_i[0], min(1.0, hi_i[0] + missing)
    out["joint"] = Interval(est, lo, hi)
    return out, joint, w


def _unreached_mass(
    ps: sp.csr_matrix, pt: sp.csr_matrix, w: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, list[float]]:
    """For each selected system i: its mass on pairs no donor (w_ij > 0) predicted.

    A pair u of i is reached when Σ_j [w_ij > 0]·[pt_ju > 0] ≥ 1, an integer count
    taken for all selected systems in one blocked product.
    """
    rows = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows)
    if len(rows) == 0:
        return rows, []
    sub = ps[rows]
    reach = sp.csr_matrix(pt, copy=True)
    reach.data = (reach.data > 0).astype(float)
    (count,) = _products_at(sub, reach, [(w[rows] > 0).astype(float)])
    missing = []
    for k in range(len(rows)):
        lo, hi = sub.indptr[k], sub.indptr[k + 1]
        mass = sub.data[lo:hi]
        missing.append(float(mass[count[lo:hi] == 0].sum()))
    return rows, missing


def _exhaustive_membership(pop: Population, ev: Evidence) -> np.ndarray:
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


def _recall_instance(
    pop: Population,
    ev: Evidence,
    draw_scheme: str,
    g: sp.coo_matrix,
    gy: np.ndarray,
    z: float,
) -> tuple[dict[str, Interval], dict[str, np.ndarray | float]]:
    """Recall with p0 uniform over true instances: simple (Wilson) and θ·ν (joint).

    Also returns the pieces of ν̂ that the precision–recall covariance needs.
    """
    m, n0, n = len(pop), len(ev.y_pairs), ev.n
    if n0 == 0:
        nan = np.full(m, np.nan)
        return {
            k: Interval(nan, np.zeros(m), np.ones(m)) for k in ("simple", "joint")
        }, {}
    k = gy.sum(axis=1)
    s_lo, s_hi = ci.wilson(k / n0, np.full(m, n0), z)
    out = {"simple": Interval(k / n0, s_lo, s_hi)}

    pt = pop.stacked(draw_scheme)
    drawn = np.flatnonzero(n > 0)
    # θ: share of true instances on pairs some sampled system predicted (q > 0 there).
    known = ev.y_pairs >= 0
    covered = np.zeros(n0, dtype=bool)
    if len(drawn):
        covered[known] = (
            np.asarray((pt[drawn][:, ev.y_pairs[known]] > 0).sum(axis=0)).ravel() > 0
        )
    theta = covered.mean()
    v_theta = theta * (1 - theta) / n0
    # ρ_i: true instances system i found outside that region (0 for sampled systems).
    rho = gy[:, ~covered].sum(axis=1) / n0
    v_rho = rho * (1 - rho) / n0

    # ν_i by the balance heuristic: proposal q = Σ_j (n_j/N) p_j over all draws.
    total = n.sum()
    b = pt[:, ev.pairs]
    q = np.asarray(b.T @ (n / max(total, 1))).ravel()
    true_u = ev.label[ev.pairs] >= 0
    with np.errstate(divide="ignore"):
        a = np.where(true_u & (q > 0), 1.0 / q, 0.0)
    c_tot = np.asarray(ev.counts.sum(axis=0)).ravel()
    den = float(c_tot @ a)
    g = g.tocsr()
    ag = g @ sp.diags(a)
    a2g = g @ sp.diags(a * a)
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = (ag @ c_tot) / den if den > 0 else np.full(m, np.nan)
        cn = sp.diags(np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)) @ ev.counts
        e_ag = (cn @ ag.T).toarray()  # (j × i)
        e_a2g = (cn @ a2g.T).toarray()
        e_a = np.asarray(cn @ a).ravel()[:, None]
        e_a2 = np.asarray(cn @ (a * a)).ravel()[:, None]
        # Moments of the linearised residual e = a (g_i - ν_i) within each system's draws.
        m1 = e_ag - nu[None, :] * e_a
        m2 = (1 - 2 * nu[None, :]) * e_a2g + nu[None, :] ** 2 * e_a2
        v_sum = (n[:, None] * _per_draw_variance(m1, m2, n)).sum(axis=0)
        v_nu = v_sum / den**2
    r = theta * nu + rho
    var = theta**2 * v_nu + nu**2 * v_theta + v_theta * v_nu + v_rho
    lo, hi = ci.lognormal(r, var, z)
    # r = 0: the log scale has no width; bound ν by a Wilson bound at its effective size.
    with np.errstate(divide="ignore", invalid="ignore"):
        kish = den**2 / float(c_tot @ (a * a)) if den > 0 else 0.0
    _, nu_hi = ci.wilson(np.zeros(m), np.full(m, kish), z)
    _, th_hi = ci.wilson(np.array([theta]), np.array([n0]), z)
    _, rho_hi = ci.wilson(rho, np.full(m, n0), z)
    zero = r == 0
    hi = np.where(
        zero, np.minimum(1, th_hi[0] * nu_hi + np.where(n == 0, rho_hi, 0)), hi
    )
    # No draw labelled true: ν is not estimable; report the exhaustive-only interval.
    undefined = ~np.isfinite(r)
    out["joint"] = Interval(
        np.where(undefined, np.nan, r),
        np.where(undefined, s_lo, lo),
        np.where(undefined, s_hi, hi),
    )
    parts = {"a": a, "nu": nu, "den": den, "theta": theta, "mean_e": m1, "cn": cn}
    return out, parts


def _precision_recall_cov(
    joint: ImportanceResult, w: np.ndarray, n: np.ndarray, parts: dict
) -> np.ndarray:
    """Cov(P̂_i, r̂_i) of the joint estimators, which share the draws.

    P̂_i = Σ_j (w_ij/n_j) Σ_d r_i(d) and ν̂_i ≈ ν_i + Σ_d e_i(d)/Σ_d a(d), so
    Cov = θ Σ_j w_ij Cov_{p_j}(r_i, e_i) / Σ_d a(d). Where r_i ≠ 0, system i
    predicted the true relation, so r_i e_i = r_i a (1 − ν_i).
    """
    if not parts or parts["den"] <= 0:
        return np.zeros(len(n))
    nu = parts["nu"]
    e_ra = (parts["cn"] @ (joint.r @ sp.diags(parts["a"])).T).toarray()  # (j × i)
    e_re = (1 - nu[None, :]) * e_ra
    nn = n[:, None].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = e_re - joint.mean_r * parts["mean_e"]
        c = np.where(nn >= 2, c * nn / (nn - 1), e_re)
    return parts["theta"] * (w * c.T).sum(axis=1) / parts["den"]


def _recall_reweighted(
    ev: Evidence, scheme: str, gy: np.ndarray, z: float
) -> dict[str, Interval]:
    """Recall under a non-uniform scheme from the exhaustive sample alone.

    p_{Y,s} is estimated by computing the scheme over Ŷ0 itself (self-normalised
    per predicate / subject / cell). The interval is Wilson's at the Kish
    effective size 1/Σ p̂², which is exact for a stratified mean with equal
    stratum recalls; a plain bootstrap is not valid here because duplicated
    draws collapse inside a stratum and make resamples look too alike.
    """
    m, n0 = gy.shape
    if n0 == 0:
        iv = Interval(np.full(m, np.nan), np.zeros(m), np.ones(m))
        return {"simple": iv, "joint": iv}
    p = scheme_weights(scheme, ev.y_preds, ev.y_subjects)
    est = gy @ p
    lo, hi = ci.wilson(est, np.full(m, 1.0 / float(p @ p)), z)
    iv = Interval(est, lo, hi)
    return {"simple": iv, "joint": iv}


def estimate(
    pop: Population,
    ev: Evidence,
    draw_scheme: str = "instance",
    schemes: Sequence[str] | None = None,
    confidence: float = 0.9,
    precision_method: str = "wilson_design",
) -> Estimates:
    """Simple and joint precision, recall and F1 with intervals for every system.

    draw_scheme: the scheme the draws came from; schemes: the schemes to report
    (default: just the draw scheme), each obtained from the same draws by
    importance reweighting.
    """
    check_scheme(draw_scheme)
    schemes = [draw_scheme] if schemes is None else [check_scheme(s) for s in schemes]
    z = ci.z_value(confidence)
    m = len(pop)
    labels_used = np.asarray(
        (pop.stacked(draw_scheme)[:, ev.pairs] > 0).sum(axis=1)
    ).ravel()
    result = Estimates(pop.names, ev.n.copy(), ev.pending.copy(), labels_used)
    if m == 0:
        return result
    gy = _exhaustive_membership(pop, ev)
    for s in SCHEMES:
        if s not in schemes:
            continue
        pf, g = _at_pairs(pop, ev, s)
        prec, joint, w = _precision(pop, ev, s, draw_scheme, pf, z, precision_method)
        # Joint recall under "instance" reuses the draws, so it correlates with P̂;
        # the other schemes' recall comes from Ŷ0 alone.
        cov = {"simple": np.zeros(m), "joint": np.zeros(m)}
        if s == "instance":
            rec, parts = _recall_instance(pop, ev, draw_scheme, g, gy, z)
            cov["joint"] = np.nan_to_num(_precision_recall_cov(joint, w, ev.n, parts))
        else:
            rec = _recall_reweighted(ev, s, gy, z)
        f1 = {}
        for kind in ("simple", "joint"):
            p, r = prec[kind], rec[kind]
            # An undefined precision or recall leaves F1 undefined but bounded.
            pe, re_ = np.nan_to_num(p.estimate), np.nan_to_num(r.estimate)
            est, lo, hi = ci.f1_delta(pe, p.lo, p.hi, re_, r.lo, r.hi, z, cov[kind])
            undefined = np.isnan(p.estimate) | np.isnan(r.estimate)
            lo_b = ci.f1_score(p.lo, r.lo)
            hi_b = ci.f1_score(p.hi, r.hi)
            f1[kind] = Interval(
                np.where(undefined, np.nan, est),
                np.where(undefined, lo_b, lo),
                np.where(undefined, hi_b, hi),
            )
        result.results[s] = {"precision": prec, "recall": rec, "f1": f1}
    return result
