"""The soft labels' answer-noise term (noise.calibration_multiplier, noise.as_instances,
Evidence.label_scale; docs/internals/crowd-bias.md §17): φ measured on questions with known
answers scales the labels' Bernoulli variance in precision's sampling variance."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.special import expit, logit

from estimation.core import estimate
from estimation.core.evidence import reprior
from estimation.core.importance import label_variance_at_pairs
from estimation.core.noise import (
    as_instances,
    calibration_multiplier,
    from_posterior,
    self_consistent,
    with_soft_labels,
)
from tests.estimation.core.conftest import soft_label_task

CATS = list(range(-1, 20))


@pytest.fixture(scope="module")
def task():
    return soft_label_task(8, 4_000, 600, world_seed=11, draw_seed=12, draws=60,
                           exhaustive=200)


def _posterior(world, lab, sure: float, rng) -> np.ndarray:
    """Each labelled pair's truth with probability ``sure`` on some pairs (the rest on a
    random other relation), certain elsewhere."""
    post = np.zeros((len(lab), len(CATS)))
    truth = world.label[lab] + 1
    post[np.arange(len(lab)), truth] = 1.0
    unsure = rng.random(len(lab)) < 0.4
    other = (truth + 1 + rng.integers(0, len(CATS) - 1, len(lab))) % len(CATS)
    post[unsure, truth[unsure]] = sure
    post[unsure, other[unsure]] = 1 - sure
    return post


def test_label_variance_is_phi_times_the_bernoulli_spread_of_each_drawn_instance(task):
    """Against a direct loop over the instances on the drawn labelled pairs:
    Σ p(x)² c(1 − c) φ per (system, pair), c = P(the instance is right)."""
    world, pop, ev, lab = task
    soft = with_soft_labels(pop, ev, from_posterior(lab, CATS, _posterior(
        world, lab, 0.7, np.random.default_rng(3))))
    phi = 2.6
    got = label_variance_at_pairs(pop, replace(soft, label_scale=phi), "instance")
    got = got.toarray()
    want = np.zeros_like(got)
    inst = pop.instances()
    probs = pop.instance_probs("instance")
    col = {int(u): j for j, u in enumerate(soft.pairs)}
    for i in range(len(inst["pairs"])):
        u, k = int(inst["pairs"][i]), int(inst["system"][i])
        if u not in col:
            continue
        c = float(soft.correct(np.array([u]), np.array([inst["predicates"][i]]))[0])
        want[k, col[u]] += probs[i] ** 2 * c * (1 - c) * phi
    assert want.sum() > 0
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("estimator", ["distinct", "importance"])
def test_phi_widens_precision_only_where_posteriors_are_undecided(task, estimator):
    """φ > 1 leaves every point and decided posteriors' intervals alone, and widens the
    joint precision interval of a system with undecided instances."""
    world, pop, ev, lab = task
    rng = np.random.default_rng(5)
    for sure, widened in ((1.0, False), (0.6, True)):
        soft = self_consistent(pop, with_soft_labels(pop, ev, from_posterior(
            lab, CATS, _posterior(world, lab, sure, rng))))
        base = estimate(pop, soft, estimator=estimator).results["instance"]["precision"]
        more = estimate(pop, replace(soft, label_scale=3.0),
                        estimator=estimator).results["instance"]["precision"]
        a, b = base["joint"], more["joint"]
        np.testing.assert_array_equal(a.estimate, b.estimate)
        wa, wb = a.hi - a.lo, b.hi - b.lo
        if widened:
            # (One system's interval here is set by the design-size cap, not the variance.)
            assert np.all(wb >= wa - 1e-12) and (wb > wa + 1e-4).sum() >= len(wa) - 1
        else:
            np.testing.assert_allclose(wb, wa, atol=1e-12)
        # Recall is not scaled (its label terms are its own).
        r0 = estimate(pop, soft, estimator=estimator).results["instance"]["recall"]["joint"]
        r1 = estimate(pop, replace(soft, label_scale=3.0),
                      estimator=estimator).results["instance"]["recall"]["joint"]
        np.testing.assert_allclose(r1.hi - r1.lo, r0.hi - r0.lo, atol=1e-12)


def _ratio_and_se(p: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    """E Σ (p − y)² / Σ p(1 − p) at truth frequencies q, and the sd of the sample ratio
    (Var (p − y)² = q(1 − q)(1 − 2p)² per event)."""
    den = np.sum(p * (1 - p))
    return (float(np.sum((p - q) ** 2 + q * (1 - q)) / den),
            float(np.sqrt(np.sum(q * (1 - q) * (1 - 2 * p) ** 2)) / den))


@pytest.mark.parametrize("stretch", [1.0, 2.0, 3.0])
def test_phi_measures_a_known_overconfidence(stretch):
    """Posteriors stretched on the logit scale (p = expit(s · logit q)) are over-confident
    by a known amount: φ recovers E(p − y)²/p(1 − p) within 4 sd; calibrated ones (s = 1)
    give 1 within 4 sd, never below 1."""
    rng = np.random.default_rng(int(stretch * 10))
    q = rng.uniform(0.02, 0.98, 3_000)
    y = (rng.random(len(q)) < q).astype(float)
    p = expit(stretch * logit(q))
    phi = calibration_multiplier(p, y, pseudo=0.0)
    want, se = _ratio_and_se(p, q)
    assert phi >= 1.0
    assert abs(phi - max(want, 1.0)) < 4 * se, (phi, want, se)
    if stretch >= 2:
        assert phi > 1.3  # the test can fail: an over-confident crowd is seen


def test_phi_is_one_for_decided_right_or_underconfident_answers_and_bounded_by_pseudo():
    assert calibration_multiplier(np.array([0.0, 1.0, 1.0]), np.array([0.0, 1.0, 1.0])) == 1.0
    q = np.random.default_rng(1).uniform(0.1, 0.9, 2_000)
    y = (np.random.default_rng(2).random(len(q)) < q).astype(float)
    assert calibration_multiplier(expit(0.5 * logit(q)), y) == 1.0  # under-confident
    # One confident miss among decided answers: 1 + (squared error 1)/(pseudo/4).
    got = calibration_multiplier(np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0]),
                                 pseudo=2.0)
    assert got == pytest.approx((1.0 + 0.5) / 0.5)


def test_as_instances_reweights_each_system_and_mixes_by_weight():
    rng = np.random.default_rng(7)
    p, div = rng.uniform(0.01, 0.99, 50), rng.uniform(0.05, 0.6, 50)
    prior = np.array([0.3, 0.9, np.nan])
    w = rng.integers(0, 4, (50, 3)).astype(float)
    w[:5] = 0.0
    got = as_instances(p, div, prior, w)
    for e in range(50):
        each = [float(reprior(p[e:e + 1], div[e:e + 1], prior[s:s + 1])[0]) for s in range(2)]
        total = w[e, :2].sum()
        want = p[e] if total == 0 else sum(w[e, s] * each[s] for s in range(2)) / total
        assert got[e] == pytest.approx(want, rel=1e-12, abs=1e-15)
    # A system whose precision is the divided-out share leaves the posterior as it is.
    np.testing.assert_allclose(as_instances(p, np.full(50, 0.4), np.array([0.4]),
                                            np.ones((50, 1))), p, rtol=1e-12)
