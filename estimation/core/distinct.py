"""Horvitz–Thompson over the distinct drawn pairs (docs/internals/estimation.md §12).

Each system j draws ``n_j`` pairs i.i.d. with replacement from ``P_j``. A pair u is
in the union S of all draws with probability

    π_u = 1 − Π_j (1 − P_j(u))^{n_j}

and a total ``T = Σ_u y_u`` is estimated by ``T̂ = Σ_{u∈S} y_u / π_u``: unbiased
wherever ``π_u > 0`` on the support of y, each labelled pair counted once however
many draws landed on it.

Variance. With ``q_u = 1 − π_u``, the joint non-inclusion is exact,
``P(u ∉ S, v ∉ S) = Π_j (1 − P_j(u) − P_j(v))^{n_j}``, so

    Δ_uv = Cov(1[u∈S], 1[v∈S]) = q_u q_v (Π_j (1 − c_j(u, v))^{n_j} − 1),
    c_j(u, v) = P_j(u) P_j(v) / ((1 − P_j(u)) (1 − P_j(v))).

To first order in ``c`` (a product of two pairs' probabilities: below 1e-4 for
every system of 100 pairs or more) ``Δ_uv ≈ −q_u q_v Σ_j n_j c_j(u, v)``, which is
separable in u and v. The unbiased HT variance estimator

    V̂ = Σ_{u∈S} q_u (y_u/π_u)² + Σ_{u≠v∈S} Δ_uv/π_uv · y_u y_v / (π_u π_v)

with ``π_uv ≈ π_u π_v`` in the second term (the same order) becomes

    V̂ = Σ_{u∈S} q_u (y_u/π_u)² − Σ_j n_j [(Σ_{u∈S} r_ju)² − Σ_{u∈S} r_ju²],
    r_ju = q_u P_j(u) y_u / ((1 − P_j(u)) π_u²),

computed for many totals at once: the Σ r² part in O(nnz) (one vector over the pairs),
the (totals × systems) sums Σ_u r_ju by GEMM over the popular pairs and a sparse
product over the rest (`system_sums`). For small ``n_j P_j`` it reduces to the
with-replacement (Hansen–Hurwitz) variance ``(E_P[(y/P)²] − T²)/n``: the second
term is what fixing each ``n_j`` subtracts.

Precision is the self-normalised (Hájek) ratio of two such totals,
``π̂_i = Σ_S P_i h_i/π / Σ_S P_i/π``, with the linearised variance of the
residuals ``P_i (h_i − π̂_i)``, as the joint estimator does (§3).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .adaptive import smallest_n

# A pair with P_j(u) = 1 (a one-pair system) is surely drawn once n_j > 0.
_P_MAX = 1.0 - 1e-15
# A pair goes into the dense core of the (totals × systems) sums when its share of the
# sparse product (rows on it × systems on it) is at least this share of a dense column
# (all rows × all systems). A GEMM multiply-add costs ~0.04 of a sparse product's
# (bench/bench_ht_covariance.py at 1,000 systems: 0.01–0.05 within noise, 0.2 1.4×, 1 6×).
_CORE_SHARE = 0.05
# Bytes of one dense column block of the core (rows + systems, 8 bytes each per pair).
_BLOCK_BYTES = 32 << 20
# Bytes of one dense (rows × pairs) block when callers walk dense rows (`row_blocks`):
# each row is its own total given the shared design, and a block's working set is a few
# such arrays (~5 in ν̂'s ratio: G, X, residual, its scaled copy, a product), so ~320 MB
# at 64 MB, against a 4 GB budget, while a block still holds ~100+ rows at 1,000 systems
# (GEMM at full speed; the design's per-call work is repeated once per block).
_ROW_BLOCK_BYTES = 64 << 20


Rows = sp.spmatrix | np.ndarray


def _csr(x: Rows) -> sp.csr_matrix:
    return x.tocsr() if sp.issparse(x) else sp.csr_matrix(np.atleast_2d(np.asarray(x, float)))


def _rows(x: Rows) -> sp.csr_matrix | np.ndarray:
    """Sparse rows as CSR, dense rows as a 2-D float array (never made sparse)."""
    return x.tocsr() if sp.issparse(x) else np.atleast_2d(np.asarray(x, float))


def row_blocks(rows: int, width: int) -> list[slice]:
    """Slices of ``rows`` dense rows of ``width`` floats, each about _ROW_BLOCK_BYTES."""
    step = max(1, _ROW_BLOCK_BYTES // (8 * max(width, 1)))
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)] or [
        slice(0, 0)]


def inclusion_probability(P: sp.spmatrix | np.ndarray, n: np.ndarray) -> np.ndarray:
    """π_u = 1 − Π_j (1 − P_j(u))^{n_j} for every column u of ``P`` (systems × pairs)."""
    P = _csr(P)
    n = np.asarray(n, dtype=float)
    logq = P.copy()
    logq.data = np.log1p(-np.minimum(logq.data, _P_MAX))
    return -np.expm1(np.asarray(logq.T @ n).ravel())


def ht_total(Y: Rows, pi: np.ndarray) -> np.ndarray:
    """T̂ = Σ_{u∈S} y_u / π_u per row of ``Y`` (totals × sampled pairs S)."""
    return np.asarray(_rows(Y) @ (1.0 / pi)).ravel()


def odds_ratio(P: sp.csr_matrix) -> sp.csr_matrix:
    """P_j(u) / (1 − P_j(u)) at every stored entry of ``P``."""
    odds = P.copy()
    odds.data = odds.data / (1.0 - np.minimum(odds.data, _P_MAX))
    return odds


def _scale_columns(Y: sp.csr_matrix | np.ndarray, w: np.ndarray) -> sp.csr_matrix | np.ndarray:
    """y_ku w_u at every stored entry (scipy's broadcasting multiply goes through COO)."""
    if isinstance(Y, np.ndarray):
        return Y * w
    out = Y.copy()
    out.data = out.data * w[out.indices]
    return out


def _row_products(Ya: sp.csr_matrix | np.ndarray, Yb: sp.csr_matrix | np.ndarray,
                  *cs: np.ndarray) -> list[np.ndarray]:
    """Σ_u a_ku b_ku c_u per row k for each ``c``; on a sparse side's stored entries."""
    if isinstance(Ya, np.ndarray) and isinstance(Yb, np.ndarray):
        ab = Ya * Yb
    elif isinstance(Ya, np.ndarray) or isinstance(Yb, np.ndarray):
        a, d = (Yb.tocoo(), Ya) if isinstance(Ya, np.ndarray) else (Ya.tocoo(), Yb)
        vals = a.data * d[a.row, a.col]
        return [np.bincount(a.row, vals * c[a.col], minlength=a.shape[0]) for c in cs]
    else:
        ab = Ya.multiply(Yb).tocsr()
    return [np.asarray(ab @ c).ravel() for c in cs]


def system_sums(R: sp.csr_matrix | np.ndarray, odds: sp.csr_matrix) -> np.ndarray:
    """Σ_u r_ku odds_ju for every row k of ``R`` and system j (dense, rows × systems).

    The sparse product costs Σ_u a_u k_u multiply-adds (a_u rows and k_u systems on pair
    u), which the popular core, predicted by most systems, dominates; there a dense GEMM
    is cheaper. Pairs with a_u k_u ≥ _CORE_SHARE × rows × systems go through GEMM in
    column blocks of at most _BLOCK_BYTES, the rest through the sparse product. Dense
    rows have a_u = rows on every pair: the core is k_u ≥ _CORE_SHARE × systems, the rest
    (sparse odds) × (dense rows).
    """
    K, S = R.shape
    J = odds.shape[0]
    out = np.zeros((K, J))
    if not (K and J and S):
        return out
    dense = isinstance(R, np.ndarray)
    a = np.full(S, K) if dense else np.bincount(R.indices, minlength=S)
    k = np.bincount(odds.indices, minlength=S)
    core = a * k >= _CORE_SHARE * K * J
    if core.any():
        cols = np.flatnonzero(core)
        Rc, Oc = (R[:, cols] if dense else R[:, cols].tocsc()), odds[:, cols].tocsc()
        step = max(1, _BLOCK_BYTES // (8 * (K + J)))
        for start in range(0, len(cols), step):
            blk = slice(start, start + step)
            Rb = Rc[:, blk] if dense else Rc[:, blk].toarray()
            out += Rb @ Oc[:, blk].toarray().T
    if not core.all():
        rest = np.flatnonzero(~core)
        if dense:
            out += (odds[:, rest] @ R[:, rest].T).T
        else:
            out += (R[:, rest] @ odds[:, rest].T).toarray()
    return out


def ht_covariance(Ya: Rows, Yb: Rows, pi: np.ndarray, P: Rows, n: np.ndarray) -> np.ndarray:
    """Ĉov of the HT totals of row k of ``Ya`` and row k of ``Yb`` (same sample S), the
    bilinear form of ``ht_variance`` (not clipped):

        Σ_u q_u a_u b_u/π_u² − Σ_j n_j [(Σ_u ra_ju)(Σ_u rb_ju) − Σ_u ra_ju rb_ju],

    with ra_ju = odds_ju w_u a_u, odds_ju = P_j(u)/(1 − P_j(u)), w_u = q_u/π_u². The
    last sum is Σ_u w_u² a_u b_u v_u, v_u = Σ_j n_j odds_ju²: one vector over the pairs.
    Either side may be sparse or dense (ndarray, used as it is: rows many systems share,
    such as ν̂'s residuals, are dense); callers bound dense rows with `row_blocks`.
    """
    same = Ya is Yb  # a variance: one set of sums serves both sides
    Ya, P = _rows(Ya), _csr(P)
    Yb = Ya if same else _rows(Yb)
    n = np.asarray(n, dtype=float)
    w = (1.0 - pi) / (pi * pi)
    odds = odds_ratio(P)
    v = np.asarray(odds.multiply(odds).T @ n).ravel()
    diag, self_ab = _row_products(Ya, Yb, w, w * w * v)
    cross_a = system_sums(_scale_columns(Ya, w), odds)  # Σ_u ra_ju
    cross_b = cross_a if same else system_sums(_scale_columns(Yb, w), odds)
    return diag + self_ab - (cross_a * cross_b) @ n


def ht_variance(Y: Rows, pi: np.ndarray, P: Rows, n: np.ndarray) -> np.ndarray:
    """V̂ of ``ht_total`` per row of ``Y``; ``P`` (systems × S) and ``n`` are the design.

    Clipped at 0 (the HT variance estimator of a random-size design can go below).
    """
    return np.maximum(ht_covariance(Y, Y, pi, P, n), 0.0)


def ht_ratio(Y: Rows, X: Rows, pi: np.ndarray, P: Rows, n: np.ndarray,
             variance: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hájek ratio ``T̂_Y / T̂_X`` per row, its linearised variance, and ``T̂_X``.

    ``X`` is (rows × S) or one row shared by all (e.g. the relations per true pair for
    recall's ν). A row whose ``T̂_X`` is 0 (nothing of it sampled) gets NaN. Dense ``Y``
    (ndarray) keeps the residuals dense; sparse ``Y`` keeps them sparse.
    """
    dense = isinstance(Y, np.ndarray)
    Y = _rows(Y)
    X = (X.toarray() if sp.issparse(X) else np.atleast_2d(np.asarray(X, float))) if dense \
        else _csr(X)
    if X.shape[0] == 1 and Y.shape[0] > 1 and not dense:
        X = sp.csr_matrix(np.ones((Y.shape[0], 1))) @ X
    ty, tx = ht_total(Y, pi), ht_total(X, pi)
    tx = np.broadcast_to(tx, ty.shape).copy() if len(tx) != len(ty) else tx
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(tx > 0, ty / tx, np.nan)
        if not variance:  # point estimates only
            return est, np.full(len(est), np.nan), tx
        e = np.nan_to_num(est)[:, None]
        resid = Y - X * e if dense else (Y - X.multiply(e)).tocsr()
        var = np.where(tx > 0, ht_variance(resid, pi, P, n) / (tx * tx), np.nan)
    return est, var, tx


def distinct_precision(P: sp.spmatrix, right: sp.spmatrix, n: np.ndarray,
                       drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision of every system from the distinct drawn pairs, each labelled pair once.

    ``P`` (systems × pairs): P_i(u), the sampling distributions (also the design);
    ``right`` (same shape): P_i(u) h_i(u), the correct mass, known at drawn pairs;
    ``n``: draws per system; ``drawn``: the column ids of the distinct drawn pairs.
    Returns the Hájek estimate, its variance, and the estimated mass ``Σ_S P_i/π``
    (its expectation is 1; NaN estimates where no drawn pair is the system's).
    """
    P, right = _csr(P), _csr(right)
    drawn = np.unique(np.asarray(drawn, dtype=np.int64))
    PS = P[:, drawn]
    pi = inclusion_probability(PS, n)
    return ht_ratio(right[:, drawn], PS, pi, PS, n)


def variance_bound(p: np.ndarray, q_old: np.ndarray, h: np.ndarray, labelled: np.ndarray,
                   n: int, grid: int = 401) -> float:
    """Worst case over the unlabelled pairs' labels of the Hájek precision variance of a
    system once it has ``n`` draws of its own (the planner's bound, §12).

    ``p``: the system's P(u) over its pairs; ``q_old``: Π_j (1 − P_j(u))^{n_j} over the
    draws already made; ``h`` its share of correct mass where ``labelled``. The design
    variance is bounded by Σ_u a_u (f_u − t)², a_u = (q_u/π_u) p_u², t = Σ_u p_u f_u
    (the fixed-n term, negative, is dropped). Replacing f² by f ≥ f² bounds it by a
    function linear in the free f for fixed t, maximised by the greedy fractional rule
    (f = 1 on the largest a/p first when t < ½, on the smallest when t > ½); the
    maximum over t is taken on a grid of ``grid`` points over [L, L + U].
    """
    q = q_old * (1.0 - np.minimum(p, _P_MAX)) ** n
    pi = 1.0 - q
    if np.any((pi <= 0) & (p > 0)):
        return np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, q / pi * p * p, 0.0)
    lab = np.asarray(labelled, bool)
    known1, known2 = float(a[lab] @ h[lab]), float(a[lab] @ (h[lab] ** 2))
    low, A = float(p[lab] @ h[lab]), float(a.sum())
    free = ~lab & (p > 0)
    pf, af = p[free], a[free]
    order = np.argsort(-(af / pf), kind="stable")
    cp = np.concatenate([[0.0], np.cumsum(pf[order])])
    ca = np.concatenate([[0.0], np.cumsum(af[order])])
    s = np.linspace(0.0, cp[-1], grid)  # free mass labelled right
    greedy_hi = np.interp(s, cp, ca)  # largest a/p first
    greedy_lo = ca[-1] - np.interp(cp[-1] - s, cp, ca)  # smallest a/p first
    t = low + s
    best = np.where(t < 0.5, greedy_hi, greedy_lo)
    v = known2 + best - 2 * t * (known1 + best) + t * t * A
    return float(max(v.max(), 0.0))


def plan_distinct(p: np.ndarray, q_old: np.ndarray, h: np.ndarray, labelled: np.ndarray,
                  target_variance: float, halfwidth: float, n_max: int = 100_000) -> int:
    """Smallest own n for a new system under the distinct-pairs estimator (a sketch, §12).

    n = 0 when the unlabelled mass U already meets the target width (U ≤ 2h); else the
    smaller of the variance bound's n and the n after which E[U] ≤ h/10 (label
    (almost) all of a small system), as the joint planner does (§5).
    """
    lab = np.asarray(labelled, bool)
    free = ~lab & (p > 0)
    if p[free].sum() <= 2 * halfwidth:
        return 0

    by_var = smallest_n(lambda n: variance_bound(p, q_old, h, lab, n) <= target_variance,
                        n_max)
    by_bounds = smallest_n(lambda n: float(p[free] @ (1 - p[free]) ** n) <= halfwidth / 10,
                           n_max)
    return min(by_var, by_bounds)
