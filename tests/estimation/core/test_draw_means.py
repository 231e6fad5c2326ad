"""The importance estimator's draw means, summed in blocks of pairs: the floats of the
whole product ``cpd @ x.T``, whatever the block size and the draws' stored order."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from estimation.core import products
from estimation.core.importance import _draw_means, _Positions


def _problem(order: str, seed: int = 5) -> tuple[sp.csr_matrix, _Positions, np.ndarray]:
    rng = np.random.default_rng(seed)
    m, n_u = 9, 60
    pattern = sp.random(m, n_u, density=0.35, random_state=seed, format="csr")
    pattern.sum_duplicates()
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(pattern.indptr))
    at = _Positions(pattern, rows)
    cpd = sp.random(m, n_u, density=0.5, random_state=seed + 1, format="csr")
    cpd.data = rng.random(cpd.nnz) * 1e3  # magnitudes that make the order matter
    cpd.sum_duplicates()
    if order != "ascending":  # reverse (or shuffle) each row's stored entries
        for i in range(m):
            lo, hi = cpd.indptr[i], cpd.indptr[i + 1]
            perm = np.arange(hi - lo)[::-1] if order == "descending" else rng.permutation(hi - lo)
            cpd.indices[lo:hi] = cpd.indices[lo:hi][perm]
            cpd.data[lo:hi] = cpd.data[lo:hi][perm]
        cpd.has_sorted_indices = False
    values = rng.random(pattern.nnz) * np.exp(rng.normal(0, 4, pattern.nnz))
    return cpd, at, values


@pytest.mark.parametrize("order", ["ascending", "descending", "shuffled"])
@pytest.mark.parametrize("block_pairs", [1, 7, 1000])
def test_blocked_draw_means_are_the_whole_product_to_the_bit(order, block_pairs, monkeypatch):
    cpd, at, values = _problem(order)
    monkeypatch.setattr(products, "BLOCK_BYTES", 8 * at.shape[0] * block_pairs)
    x = sp.csr_matrix((values, at.pattern.indices, at.pattern.indptr), shape=at.shape)
    want = cpd @ x.T.toarray()
    got, got_lazy = _draw_means(cpd, at, [values, lambda: values], diagonal=False)
    assert np.array_equal(got, want)
    assert np.array_equal(got_lazy, want)
    assert np.count_nonzero(want) > 0.5 * want.size  # the blocks carry real sums


def test_diagonal_draw_means_are_the_products_diagonal():
    cpd, at, values = _problem("ascending")
    x = sp.csr_matrix((values, at.pattern.indices, at.pattern.indptr), shape=at.shape)
    (got,) = _draw_means(cpd, at, [values], diagonal=True)
    want = cpd @ x.T.toarray()
    np.testing.assert_allclose(np.diag(got), np.diag(want), rtol=1e-12)
    assert np.count_nonzero(got - np.diag(np.diag(got))) == 0


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, 4096])
@pytest.mark.parametrize("density", [0.0, 0.05, 0.5, 1.0])
def test_rank_bitmap_is_the_position_among_the_sorted_cells(size, density):
    from estimation.core.importance import RankBitmap

    rng = np.random.default_rng(size + int(100 * density))
    cells = np.flatnonzero(rng.random(size) < density).astype(np.int64)
    if size >= 64 and density == 0.05:  # the words' first and last bits set
        cells = np.union1d(cells, [c for c in (0, 63, 64, size - 1) if c < size])
    keys = np.arange(size, dtype=np.int64)
    expected = np.full(size, -1, dtype=np.int64)
    expected[cells] = np.arange(len(cells))
    got = RankBitmap(cells, size).rank(keys)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_positions_find_the_same_entries_with_the_bitmap_as_with_the_search():
    from estimation.core import importance

    _, at, _ = _problem("ascending")
    assert at.index is not None
    rng = np.random.default_rng(3)
    rows = rng.integers(0, at.shape[0], 500)
    cols = rng.integers(0, at.shape[1], 500)
    searched = importance._Positions(at.pattern, at.rows)
    searched.index = None  # the sorted keys' search
    want = at.find(rows, cols)
    np.testing.assert_array_equal(want, searched.find(rows, cols))
    assert (want >= 0).any() and (want < 0).any()
