"""The blocked exact effective size equals the triple expansion it replaced.

``_reference`` is the original implementation, kept here only as the oracle: it
expands every (system i, pair u, system j predicting u) triple. The production
code takes W·PT in column blocks (general w) or elementwise (diagonal w); both
must give the same numbers to rounding, including infinities for systems that
no draw can reach.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import estimation.core.importance as imp
import estimation.core.precision as prec
import estimation.core.products as products
from estimation.core import SCHEMES, Population, estimate, prepare_evidence
from estimation.core.estimators import exact_effective_size, mixing_weights

RTOL = 1e-12


def _reference(
    ps: sp.csr_matrix, pt: sp.csr_matrix, w: np.ndarray, n: np.ndarray
) -> np.ndarray:
    a = ps.tocoo()
    ptc = pt.tocsc()
    start, stop = ptc.indptr[a.col], ptc.indptr[a.col + 1]
    lengths = stop - start
    owner = np.repeat(np.arange(a.nnz), lengths)
    offsets = np.arange(lengths.sum()) - np.repeat(
        np.cumsum(lengths) - lengths, lengths
    )
    pos = np.repeat(start, lengths) + offsets
    j, pj = ptc.indices[pos], ptc.data[pos]
    i = a.row[owner]
    with np.errstate(divide="ignore", invalid="ignore"):
        w2n = np.where(n > 0, w * w / n[None, :], 0.0)
    q = np.bincount(owner, weights=w[i, j] * pj, minlength=a.nnz)
    v = np.bincount(owner, weights=w2n[i, j] * pj, minlength=a.nnz)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, a.data**2 * v / q**2, 0.0)
        return 1.0 / np.bincount(a.row, weights=terms, minlength=ps.shape[0])


def _same(new: np.ndarray, ref: np.ndarray) -> None:
    assert new.shape == ref.shape
    assert np.array_equal(np.isinf(new), np.isinf(ref)), (new, ref)
    assert not np.isnan(new).any() and not np.isnan(ref).any()
    fin = np.isfinite(ref)
    np.testing.assert_allclose(new[fin], ref[fin], rtol=RTOL, atol=0)


def _population(rng: np.random.Generator, m: int = 9) -> Population:
    """Random systems over a small pair universe: a shared core with heavy overlap,
    private tails, a system nobody overlaps, and one with a single instance."""
    pop = Population()
    n_pairs = 400
    for k in range(m - 2):
        size = int(rng.integers(5, 120))
        core = rng.choice(60, min(size // 2, 60), replace=False)
        tail = rng.choice(np.arange(60, n_pairs), size - len(core), replace=False)
        pairs = np.concatenate([core, tail])
        # Several predicates per pair now and then (kept as distinct instances).
        extra = rng.choice(pairs, len(pairs) // 5)
        pairs = np.concatenate([pairs, extra])
        preds = rng.integers(0, 6, len(pairs))
        subjects = pairs // int(rng.integers(1, 5))
        pop.add_system(f"s{k}", pairs, preds, subjects)
    disjoint = np.arange(1000, 1040)
    pop.add_system("disjoint", disjoint, rng.integers(0, 6, 40), disjoint // 3)
    pop.add_system("single", np.array([5]), np.array([1]))
    return pop


def _draw_counts(rng: np.random.Generator, m: int) -> np.ndarray:
    n = rng.integers(1, 40, m)
    n[rng.random(m) < 0.3] = 0  # systems without draws of their own
    n[-1] = 1  # the single-instance system has exactly one draw
    return n


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("block_bytes", [None, 16 * 9 * 7])
def test_matches_reference_on_random_populations(seed, block_bytes, monkeypatch):
    if block_bytes is not None:
        # A few pairs per block: every block boundary case is crossed.
        monkeypatch.setattr(products, "BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(seed)
    pop = _population(rng)
    m = len(pop)
    n = _draw_counts(rng, m)
    for scheme in SCHEMES:
        for draw_scheme in SCHEMES:
            ps, pt = pop.stacked(scheme), pop.stacked(draw_scheme)
            weights = {
                "simple": np.diag((n > 0).astype(float)),
                "mixing": mixing_weights(pop.overlap(scheme, draw_scheme), n),
                # Arbitrary non-negative weights, some rows and columns zero.
                "random": rng.random((m, m))
                * (rng.random((m, m)) < 0.6)
                * (rng.random(m) < 0.8)[:, None],
            }
            for name, w in weights.items():
                new = exact_effective_size(ps, pt, w, n)
                _same(new, _reference(ps, pt, w, n))
                if name == "mixing":
                    # The disjoint system is reachable only through its own draws.
                    k = pop.index_of("disjoint")
                    assert np.isinf(new[k]) == (n[k] == 0)


def test_different_patterns_and_scaled_diagonal():
    """pt need not share ps's pattern; a diagonal w need not be 0/1."""
    rng = np.random.default_rng(3)
    m, k = 7, 50
    ps = sp.random(m, k, density=0.3, random_state=1, format="csr")
    pt = sp.random(m, k, density=0.3, random_state=2, format="csr")
    n = np.array([3, 0, 5, 1, 2, 0, 8])
    for w in (
        np.diag(rng.random(m) * (n > 0)),
        np.diag(rng.random(m)),  # weight on systems without draws: v = 0 there
        rng.random((m, m)),
    ):
        _same(exact_effective_size(ps, pt, w, n), _reference(ps, pt, w, n))
    empty = sp.csr_matrix((m, k))
    w = rng.random((m, m))
    _same(exact_effective_size(empty, pt, w, n), _reference(empty, pt, w, n))
    _same(exact_effective_size(ps, empty, w, n), _reference(ps, empty, w, n))


def test_input_matrices_are_left_alone_and_shapes_checked():
    ps = sp.csr_matrix(
        (np.array([0.5, 0.25, 0.25]), np.array([2, 1, 0]), np.array([0, 1, 3])),
        shape=(2, 3),
    )  # row 1 unsorted: not canonical
    before = (ps.data.copy(), ps.indices.copy())
    n = np.array([2, 2])
    w = np.array([[0.5, 0.5], [0.5, 0.5]])
    _same(exact_effective_size(ps, ps, w, n), _reference(ps, ps, w, n))
    assert np.array_equal(ps.data, before[0]) and np.array_equal(ps.indices, before[1])
    with pytest.raises(ValueError, match="shapes differ"):
        exact_effective_size(ps, ps[:, :2], w, n)
    with pytest.raises(ValueError, match="shapes differ"):
        exact_effective_size(ps, ps, w[:1], n)


def _world(seed: int):
    rng = np.random.default_rng(seed)
    pop = _population(rng)
    m = len(pop)
    n = _draw_counts(rng, m)
    draws, labelled = {}, []
    for k, name in enumerate(pop.names):
        pairs, _, _ = pop.system_instances(k)
        picked = pop.pair_ids[pairs[rng.integers(0, len(pairs), n[k])]]
        draws[name] = picked
        labelled.append(picked)
    ids = np.unique(np.concatenate(labelled))
    truth = rng.integers(-1, 6, pop.n_pairs)
    dense = pop.lookup_pairs(ids)
    y = rng.choice(pop.pair_ids, 30)
    ev = prepare_evidence(
        pop, draws, ids, truth[dense], y, truth[pop.lookup_pairs(y)].clip(0)
    )
    return pop, ev


@pytest.mark.parametrize("seed", range(4))
def test_estimates_unchanged_for_every_scheme(seed, monkeypatch):
    """Every interval of every scheme equals the one computed with the reference."""
    pop, ev = _world(seed)
    new = {
        d: estimate(pop, ev, draw_scheme=d, schemes=SCHEMES)
        for d in ("instance", "entity_relation")
    }
    monkeypatch.setattr(prec, "exact_effective_size", _reference)
    for draw_scheme, res in new.items():
        ref = estimate(pop, ev, draw_scheme=draw_scheme, schemes=SCHEMES)
        assert set(res.results) == set(SCHEMES)
        for scheme, metrics in ref.results.items():
            for metric, kinds in metrics.items():
                for kind, iv in kinds.items():
                    got = res.results[scheme][metric][kind]
                    for part in ("estimate", "lo", "hi"):
                        np.testing.assert_allclose(
                            getattr(got, part),
                            getattr(iv, part),
                            rtol=RTOL,
                            atol=1e-15,
                            err_msg=f"{draw_scheme}/{scheme}/{metric}/{kind}/{part}",
                        )


def _unreached_reference(ps, pt, w, i):
    """The original per-system computation of the mass no donor's draws can reach."""
    cols = ps.indices[ps.indptr[i] : ps.indptr[i + 1]]
    mass = ps.data[ps.indptr[i] : ps.indptr[i + 1]]
    donors = np.flatnonzero(w[i] > 0)
    covered = (
        np.asarray((pt[donors][:, cols] > 0).sum(axis=0)).ravel() > 0
        if len(donors)
        else np.zeros(len(cols), bool)
    )
    return float(mass[~covered].sum())


@pytest.mark.parametrize("seed", range(6))
def test_unreached_mass_matches_reference(seed, monkeypatch):
    monkeypatch.setattr(products, "BLOCK_BYTES", 8 * 9 * 5)
    rng = np.random.default_rng(seed)
    pop = _population(rng)
    m = len(pop)
    n = _draw_counts(rng, m)
    none = n == 0
    for scheme in SCHEMES:
        ps, pt = pop.stacked(scheme), pop.stacked("instance")
        for w in (
            mixing_weights(pop.overlap(scheme, "instance"), n),
            rng.random((m, m)) * (rng.random((m, m)) < 0.3),
        ):
            rows, missing = imp.unreached_mass(ps, pt, w, none)
            assert list(rows) == list(np.flatnonzero(none))
            assert missing == [_unreached_reference(ps, pt, w, i) for i in rows]
    # The disjoint system without draws: nothing of it is reached.
    n[pop.index_of("disjoint")] = 0
    ps = pop.stacked("entity")
    w = mixing_weights(pop.overlap("entity", "instance"), n)
    k = pop.index_of("disjoint")
    _, (missing,) = imp.unreached_mass(ps, pop.stacked("instance"), w, np.array([k]))
    assert missing == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(3))
def test_dense_blocks_with_unused_systems(seed, monkeypatch):
    """Pairs of more than _FEW_SYSTEMS used systems go through the dense blocks; with
    systems without draws (unused columns) or a subset of rows (unreached_mass) the
    block's row width is the rows of ps, not the systems used (an old bug: wrong sizes
    or an IndexError)."""
    monkeypatch.setattr(products, "BLOCK_BYTES", 8 * 14 * 3)
    rng = np.random.default_rng(seed)
    pop = Population()
    m = 14
    for k in range(m):  # a core of 30 pairs every system predicts, private tails
        pairs = np.concatenate([np.arange(30), 100 + 50 * k + np.arange(int(rng.integers(1, 40)))])
        pop.add_system(f"s{k}", pairs, rng.integers(0, 6, len(pairs)), pairs // 3)
    n = rng.integers(1, 30, m)
    n[:3] = 0
    none = n == 0
    for scheme in ("instance", "entity"):
        ps, pt = pop.stacked(scheme), pop.stacked("instance")
        w = mixing_weights(pop.overlap(scheme, "instance"), n)
        _same(exact_effective_size(ps, pt, w, n), _reference(ps, pt, w, n))
        rows, missing = imp.unreached_mass(ps, pt, w, none)
        assert missing == pytest.approx([_unreached_reference(ps, pt, w, i) for i in rows],
                                        abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("diagonal", [True, False])
def test_importance_estimate_sums_repeated_entries_like_dense_sums(seed, diagonal):
    """pf and the label variance reach importance_estimate as coo with repeated
    (system, pair) entries (several predicates per pair): each must count once per
    term, divided by q (pf) or q² (label variance), as the dense sums do."""
    rng = np.random.default_rng(seed)
    m, n_u = 6, 40
    a = sp.random(m, n_u, density=0.4, random_state=seed, format="csr") + sp.csr_matrix(
        (np.full(m, 0.5), (np.arange(m), np.arange(m))), shape=(m, n_u))
    a.sum_duplicates()
    b = a.copy() if diagonal else sp.random(m, n_u, density=0.5, random_state=seed + 9,
                                            format="csr") + a
    ac = a.tocoo()
    # Up to 4 terms per entry of a, in shuffled order.
    pick = rng.choice(ac.nnz, 3 * ac.nnz)
    pick = pick[rng.permutation(len(pick))]
    pf = sp.coo_matrix((rng.random(len(pick)) * 0.3, (ac.row[pick], ac.col[pick])),
                       shape=a.shape)
    lv = sp.coo_matrix((rng.random(len(pick)) * 0.05, (ac.row[pick], ac.col[pick])),
                       shape=a.shape)
    n = rng.integers(2, 9, m).astype(float)
    n[1] = 1
    counts = sp.random(m, n_u, density=0.3, random_state=seed + 3, format="csr")
    cpd = sp.csr_matrix(sp.diags(1.0 / n) @ counts)
    w = np.diag(np.ones(m)) if diagonal else mixing_weights(rng.random((m, m)) + np.eye(m), n)
    got = imp.importance_estimate(a, pf, b, w, cpd, n, lv)
    # Dense reference.
    q = w @ b.toarray()
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(q > 0, pf.toarray() / q, 0.0)
        extra = np.where(q > 0, lv.toarray() / q**2, 0.0)
    c = cpd.toarray()
    m1, m2 = c @ r.T, c @ (r * r).T + c @ extra.T
    est = (w * m1.T).sum(axis=1)
    coef = w * w / n[None, :]
    var = (coef * imp.per_draw_variance(m1, m2, n).T).sum(axis=1)
    np.testing.assert_allclose(got.r.toarray(), r, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.estimate, est, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.variance, var, rtol=1e-12, atol=0)
    assert got.estimate.min() > 0 and (extra > 0).any()
