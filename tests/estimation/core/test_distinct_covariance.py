"""`ht_covariance` equals its formula, evaluated directly by loops on small designs.

    Cov_k = Σ_u q_u a_ku b_ku/π_u² − Σ_j n_j [(Σ_u ra_ku o_ju)(Σ_u rb_ku o_ju)
                                              − Σ_u ra_ku rb_ku o_ju²],
    r_ku = q_u y_ku/π_u², o_ju = P_j(u)/(1 − P_j(u)),

on designs with a popular core (pairs most systems predict, summed by dense GEMM) and a
sparse tail (summed by the sparse product), and on the edge cases of that split.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from estimation.core import distinct
from estimation.core.distinct import ht_covariance, ht_variance, inclusion_probability


def _direct(Ya, Yb, pi, P, n):
    """The formula with plain loops over dense arrays."""
    K, S = Ya.shape
    J = P.shape[0]
    out = np.zeros(K)
    for k in range(K):
        total = 0.0
        for u in range(S):
            total += (1 - pi[u]) * Ya[k, u] * Yb[k, u] / pi[u] ** 2
        for j in range(J):
            sa = sb = sab = 0.0
            for u in range(S):
                o = P[j, u] / (1 - P[j, u])
                ra = (1 - pi[u]) * Ya[k, u] / pi[u] ** 2
                rb = (1 - pi[u]) * Yb[k, u] / pi[u] ** 2
                sa += ra * o
                sb += rb * o
                sab += ra * rb * o * o
            total -= n[j] * (sa * sb - sab)
        out[k] = total
    return out


def _design(rng, J, S, core, tail_k=3, K=None, empty_rows=()):
    """P (J × S): the first ``core`` pairs predicted by ~90% of the systems, every other
    by 1..tail_k; Ya, Yb (K × S) signed residual-like rows on their own system's pairs
    (K > J: extra rows on random systems' supports; K < J: the first K systems)."""
    K = J if K is None else K
    mask = np.zeros((J, S), bool)
    mask[:, :core] = rng.random((J, core)) < 0.9
    for u in range(core, S):
        mask[rng.choice(J, rng.integers(1, tail_k + 1), replace=False), u] = True
    P = np.where(mask, rng.lognormal(0, 1, (J, S)), 0.0)
    P /= np.maximum(P.sum(axis=1, keepdims=True), 1e-300)
    P *= 0.6  # the drawn pairs hold part of each system's mass
    n = rng.integers(1, 40, J).astype(float)
    pi = inclusion_probability(sp.csr_matrix(P), n)
    support = mask[np.arange(K) % J] if K <= J else mask[rng.integers(0, J, K)]
    Ya = np.where(support, rng.normal(0, 1, (K, S)), 0.0)
    Yb = np.where(support, rng.normal(0, 1, (K, S)), 0.0)
    Ya[list(empty_rows)] = 0.0
    Yb[list(empty_rows)] = 0.0
    return Ya, Yb, pi, P, n


CASES = {
    "core and tail": dict(J=12, S=90, core=15),
    "all core": dict(J=10, S=40, core=40),
    "no core": dict(J=10, S=80, core=0, tail_k=2),
    "more rows than systems": dict(J=8, S=60, core=10, K=13),
    "fewer rows than systems": dict(J=14, S=60, core=10, K=5),
    "empty rows": dict(J=9, S=50, core=8, empty_rows=(0, 4)),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("share", [0.0, 0.05, 0.3, np.inf])
def test_covariance_equals_the_formula(case, share, monkeypatch):
    """Every split of the pairs (share 0: all dense, ∞: all sparse) and tiny column blocks
    (several blocks per core) give the formula's value, for Ya is Yb and Ya is not Yb."""
    monkeypatch.setattr(distinct, "_CORE_SHARE", share)
    monkeypatch.setattr(distinct, "_BLOCK_BYTES", 8 * 40 * 3)
    rng = np.random.default_rng(sorted(CASES).index(case))
    Ya, Yb, pi, P, n = _design(rng, **CASES[case])
    Ps = sp.csr_matrix(P)
    cov = ht_covariance(sp.csr_matrix(Ya), sp.csr_matrix(Yb), pi, Ps, n)
    np.testing.assert_allclose(cov, _direct(Ya, Yb, pi, P, n), rtol=1e-10, atol=0)
    Y = sp.csr_matrix(Ya)
    var = ht_covariance(Y, Y, pi, Ps, n)
    np.testing.assert_allclose(var, _direct(Ya, Ya, pi, P, n), rtol=1e-10, atol=0)
    # Dense arguments are the same totals.
    np.testing.assert_allclose(ht_covariance(Ya, Yb, pi, P, n), cov, rtol=1e-12, atol=0)
    for k in CASES[case].get("empty_rows", ()):
        assert cov[k] == 0.0 and var[k] == 0.0
    if "empty_rows" not in CASES[case]:
        assert np.all(cov != 0.0)  # the check compares real sums, not zeros


def test_core_is_the_popular_pairs(monkeypatch):
    """At the default share the core pairs go to GEMM and the tail to the sparse product:
    both parts are used and together give the formula's value."""
    rng = np.random.default_rng(5)
    Ya, _, _, P, _ = _design(rng, J=20, S=120, core=20, tail_k=2)
    R = sp.csr_matrix(Ya)
    odds = distinct.odds_ratio(sp.csr_matrix(P))
    a = np.bincount(R.indices, minlength=P.shape[1])
    k = np.bincount(odds.indices, minlength=P.shape[1])
    core = a * k >= distinct._CORE_SHARE * R.shape[0] * P.shape[0]
    assert core[:20].all() and not core[20:].any()
    np.testing.assert_allclose(distinct.system_sums(R, odds), Ya @ odds.toarray().T,
                               rtol=1e-12, atol=1e-15)


def test_variance_is_the_clipped_covariance():
    rng = np.random.default_rng(9)
    Ya, _, pi, P, n = _design(rng, J=10, S=50, core=10)
    Y = sp.csr_matrix(Ya)
    np.testing.assert_allclose(ht_variance(Y, pi, P, n),
                               np.maximum(_direct(Ya, Ya, pi, P, n), 0.0), rtol=1e-10, atol=0)


def test_empty_design():
    """No sampled pairs, or no totals: zeros of the right length."""
    pi = np.zeros(0)
    out = ht_covariance(sp.csr_matrix((3, 0)), sp.csr_matrix((3, 0)), pi,
                        sp.csr_matrix((4, 0)), np.ones(4))
    assert out.shape == (3,) and not out.any()
    Y = sp.csr_matrix((0, 5))
    assert ht_covariance(Y, Y, np.full(5, 0.5), sp.csr_matrix(np.full((2, 5), 0.1)),
                         np.ones(2)).shape == (0,)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("share", [0.0, 0.05, 0.3, np.inf])
def test_dense_rows_equal_sparse(case, share, monkeypatch):
    """Dense (ndarray) rows take their own path (dense products, GEMM over the core by
    k_u alone, sparse odds × dense rows over the rest) and give the sparse rows' values,
    for Ya is Yb, Ya is not Yb, and one side sparse, the other dense."""
    monkeypatch.setattr(distinct, "_CORE_SHARE", share)
    monkeypatch.setattr(distinct, "_BLOCK_BYTES", 8 * 40 * 3)
    rng = np.random.default_rng(100 + sorted(CASES).index(case))
    Ya, Yb, pi, P, n = _design(rng, **CASES[case])
    Ps = sp.csr_matrix(P)
    Sa, Sb = sp.csr_matrix(Ya), sp.csr_matrix(Yb)
    cov = ht_covariance(Sa, Sb, pi, Ps, n)
    var = ht_covariance(Sa, Sa, pi, Ps, n)
    for a, b in ((Ya, Yb), (Sa, Yb), (Ya, Sb)):
        np.testing.assert_allclose(ht_covariance(a, b, pi, Ps, n), cov, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ht_covariance(Ya, Ya, pi, Ps, n), var, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ht_covariance(Ya, Ya.copy(), pi, Ps, n), var, rtol=1e-12,
                               atol=0)


def _dense_rows_spy(monkeypatch):
    """Record whether `system_sums` ever saw rows converted to sparse."""
    seen = []
    real = distinct.system_sums

    def spy(R, odds):
        seen.append(isinstance(R, np.ndarray))
        return real(R, odds)

    monkeypatch.setattr(distinct, "system_sums", spy)
    return seen


@pytest.mark.parametrize("case", ["core and tail", "empty rows", "more rows than systems"])
def test_ratio_dense_equals_sparse(case, monkeypatch):
    """`ht_ratio` over dense Y and X (per row, or one row shared) equals it over sparse
    ones, estimate, variance and T̂_X, and its dense residuals are never made sparse."""
    rng = np.random.default_rng(200 + sorted(CASES).index(case))
    Ya, _, pi, P, n = _design(rng, **CASES[case])
    Y = np.abs(Ya)
    X = np.where(Y != 0, Y + rng.random(Y.shape), 0.0)
    Ps = sp.csr_matrix(P)
    shared = rng.random((1, Y.shape[1])) + 0.5
    for x_dense, x_sparse in ((X, sp.csr_matrix(X)), (shared, shared[0][None, :])):
        want = distinct.ht_ratio(sp.csr_matrix(Y), sp.csr_matrix(x_sparse), pi, Ps, n)
        seen = _dense_rows_spy(monkeypatch)
        got = distinct.ht_ratio(Y, x_dense, pi, Ps, n)
        assert seen == [True]
        monkeypatch.undo()
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
        assert np.isfinite(want[1]).sum() >= Y.shape[0] - len(CASES[case].get("empty_rows", ()))


def test_row_blocks_cover_the_rows(monkeypatch):
    monkeypatch.setattr(distinct, "_ROW_BLOCK_BYTES", 8 * 30)
    blocks = distinct.row_blocks(7, 10)  # 3 rows of 10 floats a block
    assert [(b.start, b.stop) for b in blocks] == [(0, 3), (3, 6), (6, 7)]
    assert distinct.row_blocks(2, 1000) == [slice(0, 1), slice(1, 2)]  # at least a row
    assert distinct.row_blocks(0, 10) == [slice(0, 0)]
