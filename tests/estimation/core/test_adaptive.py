import itertools

import numpy as np
import pytest

from estimation.core import (
    Population,
    plan_sample_size,
    prepare_evidence,
    worst_case_variance,
)
from estimation.core.adaptive import _PlanProblem


def test_worst_case_variance_is_the_binomial_bound_for_flat_weights():
    assert worst_case_variance(np.full(10, 0.1), np.ones(10)) == pytest.approx(0.25)


def test_worst_case_variance_bounds_every_labelling():
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = rng.dirichlet(np.ones(7))
        z = rng.lognormal(0, 1, 7)
        bound = worst_case_variance(p, z)
        best = max(
            p @ (z * z * f) - (p @ (z * f)) ** 2
            for f in map(np.array, itertools.product([0, 1], repeat=7))
        )
        assert best <= bound + 1e-12
        # Fractional labellings (the relaxation) never exceed it either.
        f = rng.random((200, 7))
        assert np.all((f * z * z) @ p - ((f * z) @ p) ** 2 <= bound + 1e-12)


def _population():
    pop = Population()
    pairs = np.arange(400)
    preds = np.zeros(400, dtype=int)
    pop.add_system("old", pairs, preds)
    pop.add_system("copy", pairs, preds)  # identical to an evaluated system
    pop.add_system("new", np.arange(1000, 1400), preds)  # disjoint from everything
    pop.add_system("half", np.arange(200, 600), preds)
    rng = np.random.default_rng(0)
    label_pairs = np.arange(400)
    label_preds = np.where(rng.random(400) < 0.7, 0, -1)
    draws = {"old": rng.integers(0, 400, 500)}
    return pop, prepare_evidence(pop, draws, label_pairs, label_preds)


def test_identical_system_needs_no_labels():
    pop, ev = _population()
    assert plan_sample_size(pop, ev, "copy", target_halfwidth=0.05) == 0


def test_disjoint_system_needs_the_binomial_worst_case():
    pop, ev = _population()
    # No reuse possible: the worst case p(1-p) = 1/4 at a 0.05 half-width.
    expected = int(np.ceil(0.25 * (1.6448536 / 0.05) ** 2))
    assert plan_sample_size(pop, ev, "new", target_halfwidth=0.05) == expected
    # The paper's cruder bound (f = 1, second moment) asks for four times as many.
    n = plan_sample_size(pop, ev, "new", target_halfwidth=0.05, bound="second_moment")
    assert n == int(np.ceil((1.6448536 / 0.05) ** 2))


def test_partial_overlap_needs_some_labels_and_bound_decreases():
    pop, ev = _population()
    n = plan_sample_size(pop, ev, "half", target_halfwidth=0.05)
    assert n > 0
    problem = _PlanProblem(pop, ev, pop.index_of("half"), "instance", "worst_case")
    bounds = [problem.variance_bound(k) for k in (0, 1, 10, 100, 1000, 10000)]
    assert bounds[0] == np.inf
    assert all(a >= b for a, b in itertools.pairwise(bounds))
    # The answer is the smallest n meeting the target.
    target = (0.05 / 1.6448536) ** 2
    assert problem.variance_bound(n) <= target < problem.variance_bound(n - 1)


def test_target_variance_and_bad_targets():
    pop, ev = _population()
    assert plan_sample_size(pop, ev, "new", target_variance=0.25 / 500) == 500
    with pytest.raises(ValueError, match="target"):
        plan_sample_size(pop, ev, "new", target_halfwidth=None)


def _reference_bound(problem, n_new):
    """Per-donor loop over the unsorted pairs: the plain form of the planner's bound."""
    n = problem.n.copy()
    n[problem.k] = n_new
    w = problem.overlap * n
    w = w / w.sum()
    bt = problem.bt.toarray()
    q = bt @ w
    if np.any(q[problem.p > 0] <= 0):
        return np.inf
    z = problem.p / q
    total = 0.0
    for j in np.flatnonzero((w > 0) & (n > 0)):
        pj, lab, h = bt[:, j], problem.labelled, problem.h
        a0 = float(np.sum((pj * z * z * h * h)[lab]))
        b0 = float(np.sum((pj * z * h)[lab]))
        free = ~lab & (pj > 0)
        if problem.bound == "worst_case":
            v = worst_case_variance(pj[free], z[free], a0, b0)
        else:
            v = a0 + float(np.sum(pj[free] * z[free] ** 2))
        total += w[j] ** 2 / n[j] * v
    return total


def _labelled_world(seed):
    rng = np.random.default_rng(seed)
    pop = Population()
    label = np.where(rng.random(500) < 0.5, 0, -1)
    for k in range(6):
        pairs = rng.choice(500, int(rng.integers(20, 200)), replace=False)
        pop.add_system(f"s{k}", pairs, np.zeros(len(pairs), int))
    # Two predicates on some pairs: h (the right share of a pair's mass) is 1/2 there.
    new = rng.choice(500, 150, replace=False)
    preds = np.concatenate([np.zeros(150, int), np.ones(30, int)])
    pop.add_system("new", np.concatenate([new, new[:30]]), preds)
    draws = {f"s{k}": pop.pair_ids[pop.system_instances(k)[0]][rng.integers(0, 20, 30)]
             for k in range(6)}
    lab = np.unique(np.concatenate([*draws.values(), rng.choice(500, 60)]))
    return pop, prepare_evidence(pop, draws, lab, label[lab]), label


@pytest.mark.parametrize("bound", ["worst_case", "second_moment"])
@pytest.mark.parametrize("seed", range(4))
def test_vectorised_bound_equals_the_per_donor_loop(bound, seed):
    pop, ev, _ = _labelled_world(seed)
    problem = _PlanProblem(pop, ev, pop.index_of("new"), "instance", bound)
    for n in (0, 1, 7, 50, 400):
        got, ref = problem.variance_bound(n), _reference_bound(problem, n)
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-15) or (np.isinf(got) and np.isinf(ref))


@pytest.mark.parametrize("seed", range(4))
def test_bound_covers_every_completion_of_the_labels(seed):
    """The design variance of the joint estimate, for labels that agree with the
    known ones and are random elsewhere, never exceeds the planner's bound."""
    pop, ev, _ = _labelled_world(seed)
    problem = _PlanProblem(pop, ev, pop.index_of("new"), "instance", "worst_case")
    rng = np.random.default_rng(seed)
    bt = problem.bt.toarray()
    for n_new in (1, 30, 300):
        n = problem.n.copy()
        n[problem.k] = n_new
        w = problem.overlap * n / (problem.overlap * n).sum()
        z = problem.p / (bt @ w)
        bound = problem.variance_bound(n_new)
        for _ in range(50):
            h = np.where(problem.labelled, problem.h, rng.random(len(z)) < rng.random())
            var = sum(
                w[j] ** 2 / n[j] * (bt[:, j] @ (z * h) ** 2 - (bt[:, j] @ (z * h)) ** 2)
                for j in np.flatnonzero((w > 0) & (n > 0))
            )
            assert var <= bound + 1e-12
