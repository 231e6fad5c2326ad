"""`products.products_at`: the same floats as the dense product, and the remembered
plans of an earlier label batch (the same systems over fewer pairs) dropped before the
next batch's is made rather than kept beside it."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from estimation.core import products


def _rows(m: int, n: int, seed: int) -> sp.csr_matrix:
    x = sp.random(m, n, density=0.3, random_state=seed, format="csr")
    x.sum_duplicates()
    return x


def _plans() -> list[tuple]:
    return [k for k in products._PATTERNS if k[0][-1] == "plan"]


def test_products_at_equal_the_dense_product_at_the_entries():
    ps, pt = _rows(12, 40, 1), _rows(12, 40, 2)
    w = np.random.default_rng(3).random((12, 12))
    (got,) = products.products_at(ps, pt, [w])
    dense = w @ pt.toarray()
    rows = np.repeat(np.arange(12), np.diff(ps.indptr))
    np.testing.assert_allclose(got, dense[rows, ps.indices], rtol=1e-12)


def test_a_later_batchs_plan_replaces_the_earlier_ones_of_the_same_systems(monkeypatch):
    monkeypatch.setattr(products, "_PATTERNS", type(products._PATTERNS)())
    w = np.ones((10, 10))
    other = _rows(7, 30, 9)  # another population's (other systems): kept
    products.products_at(other, other, [np.ones((7, 7))])
    for n in (30, 31, 33):  # the labelled pairs grow batch by batch
        ps = _rows(10, n, n)
        products.products_at(ps, ps, [w])
        plans = _plans()
        assert sorted(k[0][0] for k in plans) == [(7, 30), (10, n)]
    # Asked again, the current batch's plan is a hit and the other still there.
    products.products_at(ps, ps, [w])
    assert sorted(k[0][0] for k in _plans()) == [(7, 30), (10, 33)]
    # Fewer pairs than the newest (labels withdrawn): a new plan, nothing superseded.
    fewer = _rows(10, 32, 4)
    products.products_at(fewer, fewer, [w])
    assert sorted(k[0][0] for k in _plans()) == [(7, 30), (10, 32), (10, 33)]
