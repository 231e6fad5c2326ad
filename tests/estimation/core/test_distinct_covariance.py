"""`ht_covariance` equals its formula, evaluated directly by loops on small designs.

    Cov_k = Σ_u q_u a_ku b_ku/π_u² − Σ_j n_j [(Σ_u ra_ku o_ju)(Σ_u rb_ku o_ju)
                                              − Σ_u ra_ku rb_ku o_ju²],
    r_ku = q_u y_ku/π_u², o_ju = P_j(u)/(1 − P_j(u)),

on designs with a popular core (pairs most systems predict, summed by dense GEMM) and a
sparse tail (summed by the sparse product), and on the edge cases of that split; and
rows given as a sparse part plus a shared row (`SharedRows`) give their dense rows' sums.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from estimation.core import distinct
from estimation.core.distinct import (
    Design,
    SharedRows,
    ht_covariance,
    ht_variance,
    inclusion_probability,
)


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
    monkeypatch.setattr(distinct, "CORE_SHARE", share)
    monkeypatch.setattr(distinct, "BLOCK_BYTES", 8 * 40 * 3)
    rng = np.random.default_rng(sorted(CASES).index(case))
    Ya, Yb, pi, P, n = _design(rng, **CASES[case])
    design = Design(sp.csr_matrix(P), n, pi)
    cov = ht_covariance(sp.csr_matrix(Ya), sp.csr_matrix(Yb), design)
    np.testing.assert_allclose(cov, _direct(Ya, Yb, pi, P, n), rtol=1e-10, atol=0)
    Y = sp.csr_matrix(Ya)
    var = ht_covariance(Y, Y, design)
    np.testing.assert_allclose(var, _direct(Ya, Ya, pi, P, n), rtol=1e-10, atol=0)
    # Dense arguments are the same totals.
    np.testing.assert_allclose(ht_covariance(Ya, Yb, design), cov, rtol=1e-12, atol=0)
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
    design = Design.of(P, np.ones(P.shape[0]))
    a = np.bincount(R.indices, minlength=P.shape[1])
    core = a * design.systems_per_pair >= distinct.CORE_SHARE * R.shape[0] * P.shape[0]
    assert core[:20].all() and not core[20:].any()
    np.testing.assert_allclose(distinct.system_sums(R, design),
                               Ya @ design.odds.toarray().T, rtol=1e-12, atol=1e-15)


def test_variance_is_the_clipped_covariance():
    rng = np.random.default_rng(9)
    Ya, _, pi, P, n = _design(rng, J=10, S=50, core=10)
    Y = sp.csr_matrix(Ya)
    np.testing.assert_allclose(ht_variance(Y, Design(sp.csr_matrix(P), n, pi)),
                               np.maximum(_direct(Ya, Ya, pi, P, n), 0.0), rtol=1e-10, atol=0)


def test_empty_design():
    """No sampled pairs, or no totals: zeros of the right length."""
    pi = np.zeros(0)
    out = ht_covariance(sp.csr_matrix((3, 0)), sp.csr_matrix((3, 0)),
                        Design(sp.csr_matrix((4, 0)), np.ones(4), pi))
    assert out.shape == (3,) and not out.any()
    Y = sp.csr_matrix((0, 5))
    design = Design(sp.csr_matrix(np.full((2, 5), 0.1)), np.ones(2), np.full(5, 0.5))
    assert ht_covariance(Y, Y, design).shape == (0,)


def _shared(rng, Y):
    """Y as a sparse part plus a shared row: Y = (Y − c ⊗ t) + c ⊗ t on Y's columns,
    with a few rows' coefficients 0 (then the sparse part is the row itself)."""
    t = np.where(Y.any(axis=0), rng.random(Y.shape[1]) + 0.2, 0.0)
    c = rng.normal(0, 1, Y.shape[0])
    c[::4] = 0.0
    A = np.where(Y != 0, Y - np.outer(c, t), 0.0)  # off Y's entries: c ⊗ t only
    out = SharedRows(sp.csr_matrix(A), c, t)
    return out, out.toarray()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("share", [0.0, 0.05, 0.3, np.inf])
def test_shared_rows_equal_their_dense_rows(case, share, monkeypatch):
    """`SharedRows` (sparse + coef ⊗ shared) give the sums of their dense rows, against
    the loops' formula, for Ya is Yb, Ya is not Yb, and one side plain sparse."""
    monkeypatch.setattr(distinct, "CORE_SHARE", share)
    monkeypatch.setattr(distinct, "BLOCK_BYTES", 8 * 40 * 3)
    rng = np.random.default_rng(100 + sorted(CASES).index(case))
    Ya, Yb, pi, P, n = _design(rng, **CASES[case])
    design = Design(sp.csr_matrix(P), n, pi)
    Sa, Da = _shared(rng, Ya)
    Sb, Db = _shared(rng, Yb)
    assert np.abs(Da - Ya).max() > 0.1  # the shared row reaches off the sparse part
    np.testing.assert_allclose(ht_covariance(Sa, Sb, design), _direct(Da, Db, pi, P, n),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ht_covariance(Sa, Sa, design), _direct(Da, Da, pi, P, n),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ht_covariance(sp.csr_matrix(Yb), Sa, design),
                               _direct(Yb, Da, pi, P, n), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(distinct.ht_total(Sa, pi), Da @ (1 / pi), rtol=1e-12)


def _dense_rows_spy(monkeypatch):
    """Record which kinds of rows `system_sums` saw."""
    seen = []
    real = distinct.system_sums

    def spy(R, design):
        seen.append(type(R).__name__)
        return real(R, design)

    monkeypatch.setattr(distinct, "system_sums", spy)
    return seen


@pytest.mark.parametrize("case", ["core and tail", "empty rows", "more rows than systems"])
def test_ratio_over_shared_rows_equals_dense(case, monkeypatch):
    """`ht_ratio` with X given as `SharedRows`, or as one row all rows share, equals it
    over the same X made explicit (estimate, variance, T̂_X); the residuals stay
    `SharedRows` (never a dense or densely stored (rows × pairs) array)."""
    rng = np.random.default_rng(200 + sorted(CASES).index(case))
    Ya, _, pi, P, n = _design(rng, **CASES[case])
    design = Design(sp.csr_matrix(P), n, pi)
    Y = sp.csr_matrix(np.abs(Ya))
    X, Xd = _shared(rng, np.abs(Ya) + (np.abs(Ya) > 0) * rng.random(Ya.shape))
    X = SharedRows(X.sparse, np.abs(X.coef), X.shared)  # masses: positive totals
    Xd = X.toarray()
    one = rng.random((1, Ya.shape[1])) + 0.5
    for x, x_dense in ((X, Xd), (one, np.repeat(one, Ya.shape[0], axis=0))):
        want = distinct.ht_ratio(Y, sp.csr_matrix(x_dense), design)
        seen = _dense_rows_spy(monkeypatch)
        got = distinct.ht_ratio(Y, x, design)
        assert seen == ["SharedRows"]
        monkeypatch.undo()
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=0)
        assert np.isfinite(want[1]).sum() >= Ya.shape[0] - len(CASES[case].get("empty_rows", ()))


def test_design_caches_what_the_sums_read():
    """A Design makes its odds, weights and v once, from its own arrays."""
    rng = np.random.default_rng(3)
    _, _, pi, P, n = _design(rng, J=6, S=30, core=5)
    design = Design.of(P, n)
    np.testing.assert_allclose(design.pi, pi, rtol=1e-14)
    assert design.odds is design.odds
    odds = P / (1 - P)
    np.testing.assert_allclose(design.v, (n[:, None] * odds**2).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(design.w, (1 - pi) / pi**2, rtol=1e-12)
