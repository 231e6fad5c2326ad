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


def test_pooled_prior_is_ems_fixed_point() -> None:
    """Solved directly, each group's prior is where plain EM rounds end up (run to the
    end), with weights, pairs at P 0 and 1 (fixed whatever the prior), a group near
    the floor (whose EM crawls) and one clipped there."""
    from estimation.core.evidence import likelihood_ratio, reprior_lr
    from estimation.core.recall import POOL_STRENGTH

    rng = np.random.default_rng(4)
    crowd = 0.5
    parts = [_group(rng, 800, rate, crowd, mu)[0]
             for rate, mu in ((0.4, 1.0), (0.02, 0.3), (0.0, 2.0), (0.7, 0.5))]
    post = np.concatenate(parts)
    post[:800:37], post[5:800:41] = 0.0, 1.0
    mix = np.repeat([0.5, 0.05, 0.002, 0.9], 800)
    k = np.tile([1, 2, 3, 1], 800)
    w = rng.uniform(0.2, 3.0, len(post))
    got = pooled_true_prior(post, crowd, mix, k, weights=w)
    # The reference: the rounds as they were, until they stop moving.
    edges = np.quantile(mix, np.linspace(0, 1, 7)[1:-1])
    _, inv = np.unique(np.searchsorted(edges, mix) * 3 + np.clip(k, 1, 3) - 1,
                       return_inverse=True)
    n = np.bincount(inv).astype(float)
    centre = np.bincount(inv, weights=mix) / n
    scale = n / np.bincount(inv, weights=w)
    lr = likelihood_ratio(post, np.full(len(post), crowd))
    pi = centre
    for _ in range(200_000):
        new = np.clip((scale * np.bincount(inv, weights=w * reprior_lr(post, lr, pi[inv]))
                       + POOL_STRENGTH * centre) / (n + POOL_STRENGTH), 1e-3, 1 - 1e-3)
        if np.abs(new - pi).max() < 1e-14:
            break
        pi = new
    np.testing.assert_allclose(got, new[inv], rtol=0, atol=1e-10)
    assert (new == 1e-3).any() and (new < 0.05).sum() > 1
