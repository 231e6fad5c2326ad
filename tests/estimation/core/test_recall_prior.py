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


class _SoftRows:
    """The part of `Evidence` that `predicted_true_share` reads: soft rows by key and
    the prior share each row's probability divides out."""

    def __init__(self, keys: np.ndarray, probs: np.ndarray, share: np.ndarray):
        self.soft_keys, self.soft_probs, self._share = keys, probs, share

    def reweight_prior(self, pos: np.ndarray, found: np.ndarray) -> np.ndarray:
        return np.where(found, self._share[pos], 0.5)


def test_predicted_true_share_stops_at_rhos_fixed_point() -> None:
    """The share ρ of true pairs whose relation a system predicted is found by secant
    steps: the answer is the one plain rounds of ρ's update reach when run until ρ
    stops moving (to 1e-13), within what the 1e-5 stopping rule leaves — and ρ matters
    here (ρ held at its 0.9 start is far off)."""
    from estimation.core.recall import PairGroups, predicted_true_share

    rng = np.random.default_rng(11)
    n, K = 3000, 8
    T = np.full(n, 0.45)
    t, _ = _group(rng, n, 0.5, 0.45, 0.8)
    # One to three predicted relations per pair, each with a soft row of its own.
    per = rng.integers(1, 4, n)
    col = np.repeat(np.arange(n), per)
    preds = np.concatenate([np.sort(rng.choice(K, size=c, replace=False)) for c in per])
    keys = col * 100 + preds  # sorted, as soft rows' keys are
    probs = t[col] * rng.dirichlet(np.ones(4), len(col))[:, 0]
    share = rng.uniform(0.03, 0.2, len(col))
    ev = _SoftRows(keys, probs, share)
    count = rng.integers(1, 5, len(col)).astype(float)
    mix = rng.uniform(0.2, 0.9, n)
    k = rng.integers(1, 5, n)
    weights = rng.uniform(0.5, 4.0, n)
    post, prior = predicted_true_share(ev, t, (keys, col, count), mix, k, weights, T)

    # The reference: ρ ← g(ρ) as the rounds were, until ρ stops moving.
    rel = probs / share
    pred = np.bincount(col, weights=count * rel, minlength=n) / np.bincount(
        col, weights=count, minlength=n)
    crowd, none = t / T, (1 - t) / (1 - T)
    groups = PairGroups(mix, k, weights)
    w = weights / weights.sum()

    def at(rho: float):
        lik = rho * pred + (1 - rho) * crowd
        p = T * lik / (T * lik + (1 - T) * none)
        pi = groups.priors(p, T)[groups.inv]
        p_true = reprior(p, T, pi)
        new = float(np.clip((w * p_true * rho * pred / lik).sum() / (w * p_true).sum(),
                            1e-3, 1 - 1e-3))
        return new, p, pi

    rho = 0.9
    for _ in range(10_000):
        new, ref_post, ref_prior = at(rho)
        if abs(new - rho) < 1e-13:
            break
        rho = new
    assert abs(rho - 0.9) > 0.05  # the fixed point is not the start
    start_post = at(0.9)[1]
    assert np.abs(start_post - ref_post).max() > 1e-2  # ρ moves the posteriors
    np.testing.assert_allclose(post, ref_post, rtol=0, atol=2e-5)
    np.testing.assert_allclose(prior, ref_prior, rtol=0, atol=2e-5)
