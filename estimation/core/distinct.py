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

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .adaptive import smallest_n

# A pair with P_j(u) = 1 (a one-pair system) is surely drawn once n_j > 0.
_P_MAX = 1.0 - 1e-15
# A pair goes into the dense core of the (totals × systems) sums when its share of the
# sparse product (rows on it × systems on it) is at least this share of a dense column
# (all rows × all systems). A GEMM multiply-add costs ~0.04 of a sparse product's
# (bench/bench_ht_covariance.py at 1,000 systems: 0.01–0.05 within noise, 0.2 1.4×, 1 6×).
CORE_SHARE = 0.05
# Bytes of one dense column block of the core (rows + systems, 8 bytes each per pair).
BLOCK_BYTES = 32 << 20


def _csr(x: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    return x.tocsr() if sp.issparse(x) else sp.csr_matrix(np.atleast_2d(np.asarray(x, float)))


@dataclass(frozen=True)
class SharedRows:
    """Rows ``sparse_k + coef_k · shared``: a sparse part plus one row all of them share,
    scaled per row. ν̂'s sums are such rows: X_i = max(tκ, G_i) = tκ + (G_i − tκ)₊ puts
    the shared tκ on every pair that may be true for every system, and G_i − ν̂_i X_i
    keeps it, scaled by −ν̂_i; every HT sum over them is then O(nnz) plus one product
    with the shared row, never a dense (systems × pairs) array."""

    sparse: sp.csr_matrix
    coef: np.ndarray
    shared: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.sparse.shape

    def toarray(self) -> np.ndarray:
        return self.sparse.toarray() + np.outer(self.coef, self.shared)


Rows = sp.spmatrix | np.ndarray | SharedRows


def _rows(x: Rows) -> sp.csr_matrix | SharedRows:
    return x if isinstance(x, SharedRows) else _csr(x)


def _parts(x: sp.csr_matrix | SharedRows) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """(sparse, coef, shared) of either kind (plain sparse rows share nothing)."""
    if isinstance(x, SharedRows):
        return x.sparse, x.coef, x.shared
    return x, np.zeros(x.shape[0]), np.zeros(x.shape[1])


@dataclass(frozen=True)
class Design:
    """The draws' design at the sampled pairs S: ``P`` (systems × S) the systems'
    distributions, ``n`` their draws, ``pi`` each pair's inclusion probability; and,
    made once per design on first use, what every HT sum over it reads (the odds, the
    weights w_u = q_u/π_u², v_u = Σ_j n_j odds_ju², the odds by pair and by column).
    An estimate builds one Design and passes it to every sum: the cache lives here,
    the formulas below stay functions of their arrays."""

    P: sp.csr_matrix
    n: np.ndarray
    pi: np.ndarray

    @classmethod
    def of(cls, P: sp.spmatrix | np.ndarray, n: np.ndarray,
           pi: np.ndarray | None = None) -> Design:
        P, n = _csr(P), np.asarray(n, dtype=float)
        return cls(P, n, inclusion_probability(P, n) if pi is None else np.asarray(pi, float))

    @cached_property
    def w(self) -> np.ndarray:
        return (1.0 - self.pi) / (self.pi * self.pi)

    @cached_property
    def odds(self) -> sp.csr_matrix:
        return odds_ratio(self.P)

    @cached_property
    def v(self) -> np.ndarray:
        return np.asarray(self.odds.multiply(self.odds).T @ self.n).ravel()

    @cached_property
    def odds_by_pair(self) -> sp.csr_matrix:
        """The odds' transpose as CSR (S × systems): the sparse product's right side."""
        return self.odds.T.tocsr()

    @cached_property
    def odds_by_column(self) -> sp.csc_matrix:
        return self.odds.tocsc()

    @cached_property
    def systems_per_pair(self) -> np.ndarray:
        return np.bincount(self.odds.indices, minlength=self.P.shape[1])


def inclusion_probability(P: sp.spmatrix | np.ndarray, n: np.ndarray) -> np.ndarray:
    """π_u = 1 − Π_j (1 − P_j(u))^{n_j} for every column u of ``P`` (systems × pairs)."""
    P = _csr(P)
    n = np.asarray(n, dtype=float)
    logq = P.copy()
    logq.data = np.log1p(-np.minimum(logq.data, _P_MAX))
    return -np.expm1(np.asarray(logq.T @ n).ravel())


def ht_total(Y: Rows, pi: np.ndarray) -> np.ndarray:
    """T̂ = Σ_{u∈S} y_u / π_u per row of ``Y`` (totals × sampled pairs S)."""
    A, coef, shared = _parts(_rows(Y))
    inv = 1.0 / pi
    return np.asarray(A @ inv).ravel() + coef * float(shared @ inv)


def odds_ratio(P: sp.csr_matrix) -> sp.csr_matrix:
    """P_j(u) / (1 − P_j(u)) at every stored entry of ``P``."""
    odds = P.copy()
    odds.data = odds.data / (1.0 - np.minimum(odds.data, _P_MAX))
    return odds


def _scale_columns(Y: sp.csr_matrix | SharedRows, w: np.ndarray) -> sp.csr_matrix | SharedRows:
    """y_ku w_u at every stored entry (scipy's broadcasting multiply goes through COO)."""
    if isinstance(Y, SharedRows):
        return SharedRows(_scale_columns(Y.sparse, w), Y.coef, Y.shared * w)
    out = Y.copy()
    out.data = out.data * w[out.indices]
    return out


def _row_products(Ya: sp.csr_matrix | SharedRows, Yb: sp.csr_matrix | SharedRows,
                  *cs: np.ndarray) -> list[np.ndarray]:
    """Σ_u c_u a_ku b_ku per row k for each ``c``. With a_k = A_k + α_k t_a and
    b_k = B_k + β_k t_b: Σ c A∘B + β_k Σ c A t_b + α_k Σ c B t_a + α_k β_k Σ c t_a t_b."""
    A, alpha, ta = _parts(Ya)
    B, beta, tb = _parts(Yb)
    ab = A.multiply(B).tocsr()
    out = []
    for c in cs:
        s = np.asarray(ab @ c).ravel()
        if beta.any():
            s = s + beta * np.asarray(A @ (c * tb)).ravel()
        if alpha.any():
            s = s + alpha * np.asarray(B @ (c * ta)).ravel()
            if beta.any():
                s = s + alpha * beta * float(c @ (ta * tb))
        out.append(s)
    return out


def system_sums(R: sp.csr_matrix | SharedRows, design: Design) -> np.ndarray:
    """Σ_u r_ku odds_ju for every row k of ``R`` and system j (dense, rows × systems).

    Shared rows add α_k (Σ_u t_u odds_ju). The sparse product costs Σ_u a_u k_u
    multiply-adds (a_u rows and k_u systems on pair u), which the popular core,
    predicted by most systems, dominates; there a dense GEMM is cheaper. Pairs with
    a_u k_u ≥ CORE_SHARE × rows × systems go through GEMM in column blocks of at most
    BLOCK_BYTES, the rest through the sparse product.
    """
    if isinstance(R, SharedRows):
        out = _sparse_sums(R.sparse, design)
        if R.coef.any():
            out += np.outer(R.coef, design.odds @ R.shared)
        return out
    return _sparse_sums(R, design)


def _sparse_sums(R: sp.csr_matrix, design: Design) -> np.ndarray:
    K, S = R.shape
    J = design.P.shape[0]
    out = np.zeros((K, J))
    if not (K and J and S and R.nnz):
        return out
    a = np.bincount(R.indices, minlength=S)
    core = a * design.systems_per_pair >= CORE_SHARE * K * J
    if core.any():
        cols = np.flatnonzero(core)
        Rc, Oc = R.tocsc()[:, cols], design.odds_by_column[:, cols]
        step = max(1, BLOCK_BYTES // (8 * (K + J)))
        for start in range(0, len(cols), step):
            blk = slice(start, start + step)
            out += Rc[:, blk].toarray() @ Oc[:, blk].toarray().T
        R = R.copy()  # the rest: R without its core entries
        R.data[core[R.indices]] = 0.0
        R.eliminate_zeros()
    if R.nnz:
        out += (R @ design.odds_by_pair).toarray()
    return out


def ht_covariance(Ya: Rows, Yb: Rows, design: Design) -> np.ndarray:
    """Ĉov of the HT totals of row k of ``Ya`` and row k of ``Yb`` (same sample S), the
    bilinear form of ``ht_variance`` (not clipped):

        Σ_u q_u a_u b_u/π_u² − Σ_j n_j [(Σ_u ra_ju)(Σ_u rb_ju) − Σ_u ra_ju rb_ju],

    with ra_ju = odds_ju w_u a_u, odds_ju = P_j(u)/(1 − P_j(u)), w_u = q_u/π_u². The
    last sum is Σ_u w_u² a_u b_u v_u, v_u = Σ_j n_j odds_ju²: one vector over the pairs.
    Either side may be sparse or `SharedRows`.
    """
    same = Ya is Yb  # a variance: one set of sums serves both sides
    Ya = _rows(Ya)
    Yb = Ya if same else _rows(Yb)
    w = design.w
    diag, self_ab = _row_products(Ya, Yb, w, w * w * design.v)
    cross_a = system_sums(_scale_columns(Ya, w), design)  # Σ_u ra_ju
    cross_b = cross_a if same else system_sums(_scale_columns(Yb, w), design)
    return diag + self_ab - (cross_a * cross_b) @ design.n


def ht_variance(Y: Rows, design: Design) -> np.ndarray:
    """V̂ of ``ht_total`` per row of ``Y`` under ``design``.

    Clipped at 0 (the HT variance estimator of a random-size design can go below).
    """
    return np.maximum(ht_covariance(Y, Y, design), 0.0)


def _scale_rows(X: sp.csr_matrix, e: np.ndarray) -> sp.csr_matrix:
    """e_k x_ku at every stored entry."""
    out = X.copy()
    out.data = out.data * np.repeat(e, np.diff(out.indptr))
    return out


def _minus(Y: sp.csr_matrix | SharedRows, X: sp.csr_matrix | SharedRows,
           e: np.ndarray) -> sp.csr_matrix | SharedRows:
    """Y_k − e_k X_k, kept in the rows' kind (one shared row between them at most)."""
    A, alpha, ta = _parts(Y)
    B, beta, tb = _parts(X)
    sparse = (A - _scale_rows(B.tocsr(), e)).tocsr()
    if not (alpha.any() or beta.any()):
        return sparse
    if alpha.any() and beta.any() and not np.array_equal(ta, tb):
        raise ValueError("rows with two different shared rows are not SharedRows")
    return SharedRows(sparse, alpha - e * beta, tb if beta.any() else ta)


def ht_ratio(Y: Rows, X: Rows, design: Design, variance: bool = True
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hájek ratio ``T̂_Y / T̂_X`` per row, its linearised variance, and ``T̂_X``.

    ``X`` is (rows × S) or one row shared by all (e.g. the relations per true pair for
    recall's ν). A row whose ``T̂_X`` is 0 (nothing of it sampled) gets NaN. The
    residuals Y − (T̂_Y/T̂_X) X keep the rows' kind (sparse, or `SharedRows`).
    """
    Y = _rows(Y)
    if not isinstance(X, SharedRows) and X.shape[0] == 1 and Y.shape[0] > 1:
        X = SharedRows(sp.csr_matrix(Y.shape), np.ones(Y.shape[0]),
                       np.asarray(X.toarray() if sp.issparse(X) else X, float).ravel())
    X = _rows(X)
    ty, tx = ht_total(Y, design.pi), ht_total(X, design.pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(tx > 0, ty / tx, np.nan)
        if not variance:  # point estimates only
            return est, np.full(len(est), np.nan), tx
        resid = _minus(Y, X, np.nan_to_num(est))
        var = np.where(tx > 0, ht_variance(resid, design) / (tx * tx), np.nan)
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
    design = Design.of(P[:, drawn], n)
    return ht_ratio(right[:, drawn], design.P, design)


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
