"""Soft labels: a system's instances take one prior per agreement group (noise.py).

On real text a system's instances that no other system predicts are almost never
right and those three systems predict almost always are (Re-DocRED demo, 20% crowd
error: 0–15% against 100%). One prior per system then re-weights a singleton's
posterior towards the system's precision, far above its group's, and precision comes
out high wherever the posteriors' likelihood ratios are not exact (the crowd's stated
shares are corpus-wide, the fit's are per pair type). Each group's own fixed point
does not lean on them so: the test world here has that structure and likelihood
ratios overstated by the prior they are divided by (half the true share).
"""

import numpy as np
import pytest

from estimation.core import Population, estimate, points, prepare_evidence
from estimation.core.noise import from_posterior, self_consistent, with_soft_labels

TRIALS = 60
SYSTEMS = 4


def _trial(rng: np.random.Generator, understate: float) -> np.ndarray:
    """Joint precision − truth per system on one world, every pair labelled."""
    systems: list[list[int]] = [[] for _ in range(SYSTEMS)]
    truth = []
    # True pairs: most predicted by 2–4 systems; false pairs: mostly by one.
    for share, n, is_true in (([0.15, 0.15, 0.3, 0.4], 120, True),
                              ([0.85, 0.15, 0.0, 0.0], 160, False)):
        for _ in range(n):
            k = rng.choice([1, 2, 3, 4], p=share)
            for s in rng.choice(SYSTEMS, k, replace=False):
                systems[s].append(len(truth))
            truth.append(is_true)
    is_true = np.asarray(truth)
    pop = Population()
    for s, pairs in enumerate(systems):
        p = np.asarray(sorted(pairs), np.int64)
        pop.add_system(f"s{s}", p, np.zeros(len(p), np.int64), p)
    lab = np.arange(len(is_true))
    # Five answers at accuracy 0.8: exact likelihood ratios, a posterior under the
    # crowd's share, stated with a prior ``understate`` times too small.
    yes = rng.binomial(5, np.where(is_true, 0.8, 0.2))
    lr = 4.0 ** (2 * yes - 5)
    share = is_true.mean()
    post = share * lr / (share * lr + 1 - share)
    stated = share / understate
    soft = from_posterior(lab, [-1, 0], np.column_stack([1 - post, post]),
                          np.asarray([1 - stated, stated]))
    draws = {f"s{s}": np.asarray(pairs, np.int64) for s, pairs in enumerate(systems)}
    ev = prepare_evidence(pop, draws, lab, np.where(is_true, 0, -1))
    ev = self_consistent(pop, with_soft_labels(pop, ev, soft))
    est = estimate(pop, ev).results["instance"]["precision"]["joint"].estimate
    return est - np.asarray([is_true[p].mean() for p in systems])


def _errors(understate: float, seed: int, strength: float, monkeypatch) -> np.ndarray:
    """(TRIALS × SYSTEMS) precision − truth, the groups shrunk by ``strength``."""
    monkeypatch.setattr(points, "GROUP_STRENGTH", strength)
    rng = np.random.default_rng(seed)
    return np.asarray([_trial(rng, understate) for _ in range(TRIALS)])


@pytest.mark.parametrize("understate", [1.0, 2.0])
def test_group_priors_beat_one_prior_per_system(understate, monkeypatch):
    """Paired on the same worlds: the agreement groups' priors against one prior per
    system (the groups shrunk all the way to the system's precision, as before)."""
    group = _errors(understate, 11, points.GROUP_STRENGTH, monkeypatch)
    system = _errors(understate, 11, 1e12, monkeypatch)
    # Systems of one world share pairs: a trial is the independent unit.
    gain = (system**2 - group**2).mean(axis=1)
    assert gain.mean() > 3 * gain.std(ddof=1) / np.sqrt(TRIALS), gain.mean()
    bias = group.mean(axis=1)
    se = bias.std(ddof=1) / np.sqrt(TRIALS)
    if understate == 1.0:
        # Exact likelihood ratios: no bias beyond the fixed point's small-sample pull
        # at the groups' edges (measured ≤ 0.0014 over three seeds).
        assert abs(bias.mean()) <= 4 * se + 0.003, (bias.mean(), se)
    else:
        # Overstated ratios: both are biased up, the groups by half as much (measured
        # +0.028 against +0.057 over three seeds).
        sys_bias = system.mean(axis=1)
        assert bias.mean() < 0.7 * sys_bias.mean(), (bias.mean(), sys_bias.mean())
