"""Soft labels (estimation/core/noise.py): exact with a perfect crowd, honest with a noisy one.

The noisy-crowd bias and coverage are checked by the battery's crowd scenarios
(tests/estimation/test_validation.py); here the pieces.
"""

import numpy as np
import pytest

from annotations.quality.resampling import resample_questions
from estimation.core import estimate
from estimation.core.evidence import reprior
from estimation.core.noise import (
    SoftLabels,
    correction_variance,
    from_posterior,
    self_consistent,
    widen,
    with_soft_labels,
)
from tests.estimation.core.conftest import soft_label_task

CATS = list(range(-1, 20))


@pytest.fixture(scope="module")
def task():
    return soft_label_task(10, 5_000, 800, world_seed=4, draw_seed=9, draws=80,
                           exhaustive=250)


def _same(a, b):
    for scheme, metrics in a.results.items():
        for metric, kinds in metrics.items():
            for kind, iv in kinds.items():
                other = b.results[scheme][metric][kind]
                for x, y in ((iv.estimate, other.estimate), (iv.lo, other.lo), (iv.hi, other.hi)):
                    np.testing.assert_allclose(x, y, atol=1e-12, err_msg=f"{metric}/{kind}")


def test_perfect_crowd_gives_todays_results(task):
    """Posteriors of 0 and 1: every estimate and interval equals the hard-label one."""
    world, pop, ev, lab = task
    post = np.zeros((len(lab), len(CATS)))
    post[np.arange(len(lab)), world.label[lab] + 1] = 1.0
    priors = np.full(len(CATS), 1 / len(CATS))
    soft = with_soft_labels(pop, ev, from_posterior(lab, CATS, post, priors))
    schemes = ["instance", "predicate", "entity_relation"]
    _same(estimate(pop, ev, schemes=schemes), estimate(pop, soft, schemes=schemes))
    _same(estimate(pop, ev), estimate(pop, self_consistent(pop, soft)))


def test_soft_labels_move_precision_by_their_probability(task):
    """Halving the confidence on every right instance halves the known right mass."""
    world, pop, ev, lab = task
    truth = world.label[lab]
    post = np.zeros((len(lab), len(CATS)))
    post[np.arange(len(lab)), truth + 1] = 0.5
    post[np.arange(len(lab)), np.where(truth >= 0, 0, 1)] += 0.5  # none, or predicate 0
    soft = with_soft_labels(pop, ev, from_posterior(lab, CATS, post))
    hard = estimate(pop, ev).results["instance"]["precision"]["joint"]
    half = estimate(pop, soft).results["instance"]["precision"]["joint"]
    ok = np.isfinite(hard.estimate) & (hard.estimate > 0.05)
    assert ok.sum() >= 5
    # Instances with predicate 0 on false pairs gain half a right each: at most +0.5·share.
    assert np.all(half.estimate[ok] < hard.estimate[ok])
    assert np.all(half.estimate[ok] >= 0.5 * hard.estimate[ok] - 1e-9)
    # Coin-flip labels are no evidence of a narrower interval: the variance counts
    # the truth's spread around c (without it the widths fall by a quarter here).
    ratio = (half.hi - half.lo)[ok] / (hard.hi - hard.lo)[ok]
    assert ratio.mean() >= 0.95


def testreprior_keeps_the_likelihood_ratio():
    post = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    prior = np.array([0.3, 0.3, 0.3, 0.3, 0.3])
    assert reprior(post, prior, prior) == pytest.approx(post)
    moved = reprior(post, prior, np.full(5, 0.7))
    assert moved[0] == 0.0 and moved[-1] == 1.0  # certain answers stay certain
    assert np.all(moved[1:-1] > post[1:-1])
    # odds(new)/odds(post) = odds(0.7)/odds(0.3)
    odds = lambda p: p / (1 - p)  # noqa: E731
    assert odds(moved[2]) / odds(post[2]) == pytest.approx(odds(0.7) / odds(0.3))


def test_soft_labels_reject_bad_probabilities():
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        SoftLabels(np.array([1]), np.array([0]), np.array([1.5]))
    with pytest.raises(ValueError, match="differ in length"):
        SoftLabels(np.array([1, 2]), np.array([0]), np.array([0.5]))


def test_resample_questions_keeps_each_drawn_questions_answers():
    """A bootstrap replicate over questions draws each group to its own size (as many
    controls as before) and holds a drawn question's answers once per draw."""
    items = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4, 5])
    groups = [np.array([0, 1, 2, 3]), np.array([4, 5])]
    rng = np.random.default_rng(5)
    seen = np.zeros(6)
    for _ in range(400):
        idx, new, pick = resample_questions(items, groups, rng)
        assert set(pick[:4]) <= {0, 1, 2, 3} and set(pick[4:]) <= {4, 5} and len(pick) == 6
        assert len(idx) == len(new) == sum((items == i).sum() for i in pick)
        for slot, i in enumerate(pick):
            assert sorted(idx[new == slot]) == list(np.flatnonzero(items == i))
        seen += np.bincount(pick, minlength=6)
    assert np.all(np.abs(seen / 400 - 1) < 0.2)  # each question once per replicate on average


def _halved(world, lab, share):
    """Posterior giving the truth ``share`` (the rest to another answer)."""
    truth = world.label[lab]
    post = np.zeros((len(lab), len(CATS)))
    post[np.arange(len(lab)), truth + 1] = share
    post[np.arange(len(lab)), np.where(truth >= 0, 0, 1)] += 1 - share
    return from_posterior(lab, CATS, post)


def test_correction_variance_is_the_replicates_spread(task):
    """The added variance is the between-replicate variance of each estimate; equal
    replicates add nothing and leave every interval as it was."""
    world, pop, ev, lab = task
    soft = with_soft_labels(pop, ev, _halved(world, lab, 0.8))
    reps = [_halved(world, lab, s) for s in (0.7, 0.8, 0.9)]
    var = correction_variance(pop, soft, reps)
    got = [estimate(pop, with_soft_labels(pop, ev, r)).results["instance"] for r in reps]
    for metric in ("precision", "recall"):
        est = np.stack([g[metric]["joint"].estimate for g in got])
        np.testing.assert_allclose(var[("instance", metric, "joint")],
                                   np.var(est, axis=0, ddof=1), atol=1e-15)
    assert np.nanmax(var[("instance", "precision", "joint")]) > 1e-4
    same = correction_variance(pop, soft, [reps[1]] * 3)
    assert all(np.all(v < 1e-20) for v in same.values())  # rounding only
    _same(estimate(pop, soft), widen(estimate(pop, soft), same))
    assert correction_variance(pop, soft, reps[:1]) == {}


def test_widen_adds_the_variance_to_each_side(task):
    _, pop, ev, _ = task
    res = estimate(pop, ev)
    before = res.results["instance"]["precision"]["joint"]
    est, lo, hi = before.estimate.copy(), before.lo.copy(), before.hi.copy()
    v = np.full(len(est), 1e-4)
    after = widen(res, {("instance", "precision", "joint"): v}).results["instance"]
    iv = after["precision"]["joint"]
    z = 1.6448536269514722
    ok = np.isfinite(est) & (est - np.sqrt((est - lo) ** 2 + z * z * 1e-4) > 0) & \
        (est + np.sqrt((hi - est) ** 2 + z * z * 1e-4) < 1)
    assert ok.sum() >= 3
    np.testing.assert_allclose((est - iv.lo)[ok], np.sqrt((est - lo) ** 2 + z * z * v)[ok])
    np.testing.assert_allclose((iv.hi - est)[ok], np.sqrt((hi - est) ** 2 + z * z * v)[ok])
    assert np.all(iv.lo >= 0) and np.all(iv.hi <= 1)
    np.testing.assert_array_equal(iv.estimate, est)


def test_distinct_replicates_give_the_spread_of_the_full_distinct_estimates(task):
    """Under the distinct estimator the replicates compute its points without variances
    (`distinct_joint(points_only=True)`): the same floats as the full estimate's."""
    world, pop, ev, lab = task
    soft = with_soft_labels(pop, ev, _halved(world, lab, 0.8))
    reps = [_halved(world, lab, s) for s in (0.7, 0.8, 0.9)]
    var = correction_variance(pop, soft, reps, estimator="distinct")
    got = [estimate(pop, with_soft_labels(pop, ev, r), estimator="distinct").results["instance"]
           for r in reps]
    for metric in ("precision", "recall"):
        est = np.stack([g[metric]["joint"].estimate for g in got])
        assert np.isfinite(est).any()
        np.testing.assert_allclose(var[("instance", metric, "joint")],
                                   np.var(est, axis=0, ddof=1), atol=1e-15)
