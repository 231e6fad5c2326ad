"""Recall's prior of a soft-labelled pair holding a relation, pooled per group."""

from __future__ import annotations

import numpy as np

from estimation.core.evidence import reprior
from estimation.core.recall import pooled_true_prior


def _group(rng: np.random.Generator, n: int, rate: float, crowd: float, mu: float = 1.0):
    """Posteriors under the crowd-wide prior ``crowd`` from a calibrated likelihood
    ratio: a score N(±mu, 1) by the truth, LR = exp(2 mu s)."""
    truth = rng.random(n) < rate
    score = rng.normal(np.where(truth, mu, -mu), 1.0)
    odds = np.exp(2 * mu * score) * crowd / (1 - crowd)
    return odds / (1 + odds), truth


def test_pooled_prior_recovers_each_groups_share_of_true_pairs() -> None:
    """Two groups the systems' precision cannot tell apart (mix 0.4 for both) hold
    15% and 60% true pairs: the pooled prior finds each share, and the re-weighted
    posteriors then sum to each group's true count (2,000 pairs a group: a share's
    standard error is about 0.01 with this weak a signal)."""
    rng = np.random.default_rng(0)
    crowd = 0.5
    a, ya = _group(rng, 2000, 0.15, crowd)
    b, yb = _group(rng, 2000, 0.60, crowd)
    post = np.concatenate([a, b])
    truth = np.concatenate([ya, yb])
    mix = np.full(len(post), 0.4)
    k = np.r_[np.ones(2000, int), np.full(2000, 3)]
    prior = pooled_true_prior(post, crowd, mix, k)
    # Seeds 0-3 measured: shares within 0.017, sums within 36 pairs of 2,000.
    assert abs(prior[0] - ya.mean()) < 0.04 and abs(prior[-1] - yb.mean()) < 0.04
    t = reprior(post, np.full(len(post), crowd), prior)
    for group in (k == 1, k == 3):
        assert abs(t[group].sum() - truth[group].sum()) < 70
    # The systems' precision as the prior misses both groups by far more (measured
    # +214 to +233 and −143 to −190).
    plain = reprior(post, np.full(len(post), crowd), mix)
    assert plain[k == 1].sum() - ya.sum() > 100
    assert yb.sum() - plain[k == 3].sum() > 100


def test_pooled_prior_of_a_small_group_stays_near_its_precision() -> None:
    """Ten pairs of a group: POOL_STRENGTH pseudo-pairs keep its prior near the
    systems' precision rather than at the ten posteriors' mean."""
    post = np.full(10, 0.99)
    prior = pooled_true_prior(post, 0.5, np.full(10, 0.3), np.ones(10, int))
    assert 0.3 < prior[0] < 0.8


def test_weighted_pooled_prior_is_the_share_recall_sums() -> None:
    """One group, two kinds of pairs: 2,000 at 15% true that recall weights 3 (drawn
    rarely for their proposal, so each counts more) and 2,000 at 60% weighted 1. With
    the weights the prior is the weighted share (0.26) and the weighted posteriors sum
    to the weighted true count; unweighted it is the plain share (0.375), and recall's
    weighted sum overshoots the truth."""
    rng = np.random.default_rng(1)
    crowd = 0.5
    a, ya = _group(rng, 2000, 0.15, crowd)
    b, yb = _group(rng, 2000, 0.60, crowd)
    post, truth = np.concatenate([a, b]), np.concatenate([ya, yb])
    w = np.r_[np.full(2000, 3.0), np.ones(2000)]
    mix, k = np.full(4000, 0.4), np.ones(4000, int)
    want = (w * truth).sum() / w.sum()
    weighted = pooled_true_prior(post, crowd, mix, k, weights=w)
    plain = pooled_true_prior(post, crowd, mix, k)
    # Seeds 1-4 measured: weighted share within 0.014 of the truth, plain 0.106-0.123 above.
    assert abs(weighted[0] - want) < 0.03
    assert plain[0] - want > 0.06
    crowd_v = np.full(4000, crowd)
    err_w = (w * reprior(post, crowd_v, weighted)).sum() - (w * truth).sum()
    err_p = (w * reprior(post, crowd_v, plain)).sum() - (w * truth).sum()
    assert abs(err_w) < 0.5 * abs(err_p)
    # Weights on another scale give the same prior (only their ratios count).
    np.testing.assert_allclose(pooled_true_prior(post, crowd, mix, k, weights=7 * w),
                               weighted, atol=1e-9)
