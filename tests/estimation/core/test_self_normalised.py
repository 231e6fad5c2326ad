"""Joint precision is self-normalised: a system whose every prediction is right is
estimated at 1 with an interval reaching 1, whatever mass the draws carried."""

import numpy as np

from estimation.core import Population, estimate, prepare_evidence


def _world(seed):
    """"perfect" (400 pairs, all right) overlapping half of "other" (800 pairs, 40%
    right); both drew 60 pairs."""
    rng = np.random.default_rng(seed)
    label = np.where(rng.random(1000) < 0.4, 0, -1)
    label[:400] = 0
    pop = Population()
    pop.add_system("perfect", np.arange(400), np.zeros(400, int))
    pop.add_system("other", np.arange(200, 1000), np.zeros(800, int))
    draws = {"perfect": rng.choice(400, 60), "other": rng.choice(np.arange(200, 1000), 60)}
    lab = np.unique(np.concatenate(list(draws.values())))
    return pop, prepare_evidence(pop, draws, lab, label[lab]), label


def test_perfect_system_is_one_with_an_interval_reaching_one():
    for seed in range(20):
        pop, ev, _ = _world(seed)
        p = estimate(pop, ev).results["instance"]["precision"]["joint"]
        assert p.estimate[0] == 1.0 and p.hi[0] == 1.0, seed
        # Never narrower than the ~100 draws that landed on it support (Wilson at 1).
        assert 0.95 < p.lo[0] < 0.99, (seed, p.lo[0])


def test_joint_precision_is_unbiased_enough_and_covers():
    """The ratio estimate's bias is O(1/n): over 300 worlds the other system's mean
    error stays within 4 standard errors + 0.005, and its intervals cover 0.87-0.97."""
    errs, cover = [], []
    for seed in range(300):
        pop, ev, label = _world(100 + seed)
        truth = float(np.mean(label[200:1000] == 0))
        p = estimate(pop, ev).results["instance"]["precision"]["joint"]
        errs.append(p.estimate[1] - truth)
        cover.append(p.lo[1] <= truth <= p.hi[1])
    errs = np.asarray(errs)
    assert abs(errs.mean()) <= 4 * errs.std(ddof=1) / np.sqrt(len(errs)) + 0.005
    assert 0.87 - 3.29 * np.sqrt(0.09 / 300) <= np.mean(cover) <= 0.93 + 3.29 * np.sqrt(
        0.09 / 300)
