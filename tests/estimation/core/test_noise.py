"""Soft labels (estimation/core/noise.py): exact with a perfect crowd, honest with a noisy one.

The noisy-crowd bias and coverage are checked by the battery's crowd scenarios
(tests/estimation/test_validation.py); here the pieces.
"""

import numpy as np
import pytest

from estimation.core import Population, estimate, prepare_evidence
from estimation.core.evidence import reprior
from estimation.core.noise import SoftLabels, from_posterior, self_consistent, with_soft_labels
from estimation.validation.worlds import WorldSpec, make_world

CATS = list(range(-1, 20))


@pytest.fixture(scope="module")
def task():
    spec = WorldSpec(n_systems=10, n_pairs=5_000, disjoint_pairs=800)
    world = make_world(spec, np.random.default_rng(4))
    pop = Population()
    for name, pairs, preds in world.systems:
        pop.add_system(name, pairs, preds, world.subject[pairs])
    rng = np.random.default_rng(9)
    draws = {n: p[rng.choice(len(p), 80)] for n, p, _ in world.systems}
    lab = np.unique(np.concatenate(list(draws.values())))
    y = np.flatnonzero(world.label >= 0)[:250]
    exhaustive = (y, world.label[y], world.subject[y], world.doc[y])
    ev = prepare_evidence(pop, draws, lab, world.label[lab], *exhaustive)
    return world, pop, ev, lab


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
