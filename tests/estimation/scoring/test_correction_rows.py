"""The correction's soft-label rows from a replicate's posteriors (`soft_rows`),
against a plain row-by-row construction of the same rows: equal arrays, to the bit."""

from __future__ import annotations

import numpy as np

from annotations.quality.aggregation import NO_RELATION
from estimation.core.noise import SoftLabels
from estimation.correction_rows import soft_rows


def _plain(categories: list, posterior: np.ndarray, priors: np.ndarray,
           type_priors: np.ndarray, pair_of: np.ndarray, codes: dict[str, int]) -> SoftLabels:
    """Category by category, predicate by predicate, label by label."""
    rows: list[tuple[int, int, float, float, float]] = []
    share: dict[int, float] = {}
    own: dict[int, np.ndarray] = {}
    named = [[-1 if n == NO_RELATION else codes.get(n, -2) for n in str(k).split("|")]
             for k in categories]
    for c, ks in enumerate(named):
        for k in ks:
            share[k] = share.get(k, 0.0) + float(priors[c])
            own[k] = own.get(k, 0.0) + type_priors[:, c]
    for c, ks in enumerate(named):
        for k in ks:
            if k == -2:
                continue
            for i in range(len(pair_of)):
                if posterior[i, c] > 1e-6:
                    rows.append((int(pair_of[i]), k, float(posterior[i, c]), share[k],
                                 float(own[k][i])))
    merged: dict[tuple[int, int], list] = {}
    for pair, k, prob, prior, type_prior in rows:  # the first row keeps its priors
        merged.setdefault((pair, k), [0.0, prior, type_prior])[0] += prob
    keys = sorted(merged)
    return SoftLabels(np.asarray([p for p, _ in keys], np.int64),
                      np.asarray([k for _, k in keys], np.int64),
                      np.asarray([min(merged[key][0], 1.0) for key in keys]),
                      np.asarray([merged[key][1] for key in keys]),
                      np.asarray([merged[key][2] for key in keys]))


def test_rows_equal_the_plain_construction() -> None:
    rng = np.random.default_rng(3)
    codes = {"a": 0, "b": 1, "c": 2, "d": 3}
    # Two keys naming two relations (one of them twice over), one unknown to the
    # estimators, "no relation", and labels on a repeated pair.
    categories = ["a", "b", "a|c", NO_RELATION, "zzz", "c", "d|b", "unknown|d"]
    for trial in range(20):
        n = int(rng.integers(0, 40))
        posterior = rng.dirichlet(np.full(len(categories), 0.3), size=n)
        posterior[posterior < 1e-3] = 0.0  # some exact zeros, some rows dropped
        if n:
            posterior[0, 2] = 1e-6  # at the threshold: left out
        priors = rng.dirichlet(np.ones(len(categories)))
        type_priors = rng.dirichlet(np.ones(len(categories)), size=n)
        pair_of = rng.integers(0, max(n // 2, 1), n).astype(np.int64) * 7 + 5
        got = soft_rows(categories, posterior, priors, type_priors, pair_of, codes)
        want = _plain(categories, posterior, priors, type_priors, pair_of, codes)
        for field in ("pairs", "predicates", "probs", "priors", "type_priors"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.shape == b.shape and np.array_equal(a, b), (trial, field)
    empty = soft_rows(["zzz"], np.ones((3, 1)), np.ones(1), np.ones((3, 1)),
                             np.arange(3), codes)
    assert len(empty.pairs) == 0
