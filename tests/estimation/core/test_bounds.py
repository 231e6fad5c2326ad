"""No interval narrower than its evidence: sure label bounds, the landed-draws floor,
and the planner's worst case (docs/internals/estimation.md §4-§5; issue 13's cases)."""

import warnings

import numpy as np
import pytest

from estimation.core import (
    SCHEMES,
    Population,
    estimate,
    label_bounds,
    plan_sample_size,
    prepare_evidence,
)
from estimation.core.intervals import lognormal


def _shared_task(copy_pairs, draws_avoid=(), labelled_extra=()):
    """A 600-pair system that drew 150 pairs, and a copy of some of its pairs."""
    rng = np.random.default_rng(4)
    label = np.where(rng.random(600) < 0.6, 0, -1)
    pop = Population()
    pop.add_system("big", np.arange(600), np.zeros(600, int))
    pop.add_system("copy", np.asarray(copy_pairs), np.zeros(len(copy_pairs), int))
    allowed = np.setdiff1d(np.arange(600), draws_avoid)
    drawn = rng.choice(allowed, 150)
    lab = np.union1d(drawn, labelled_extra).astype(int)
    ev = prepare_evidence(pop, {"big": drawn}, lab, label[lab])
    return pop, ev, label


def test_copy_that_no_draw_reached_is_not_known():
    """Issue 13: six relations copied from an evaluated system, four right, no draw
    on them. Precision was reported as 0.000 [0.000, 0.000] and planned 0 draws."""
    pop, ev, label = _shared_task([])
    right = np.flatnonzero(label == 0)
    wrong = np.flatnonzero(label < 0)
    copy = np.concatenate([right[:4], wrong[:2]])
    pop, ev, label = _shared_task(copy, draws_avoid=copy)
    res = estimate(pop, ev).results["instance"]
    p = res["precision"]["joint"]
    assert np.isnan(p.estimate[1]) and p.lo[1] == 0 and p.hi[1] == 1
    assert np.isnan(res["precision"]["simple"].estimate[1])
    assert plan_sample_size(pop, ev, "copy", target_halfwidth=0.05) > 0


def test_copy_reached_by_a_few_draws_gets_a_wide_interval():
    pop, ev, label = _shared_task([])
    right = np.flatnonzero(label == 0)
    wrong = np.flatnonzero(label < 0)
    copy = np.concatenate([right[:4], wrong[:2]])
    # Two of its pairs are labelled by the big system's draws, one right, one wrong.
    hit = np.array([right[0], wrong[0]])
    pop = Population()
    pop.add_system("big", np.arange(600), np.zeros(600, int))
    pop.add_system("copy", copy, np.zeros(6, int))
    rng = np.random.default_rng(1)
    drawn = np.concatenate([hit, rng.choice(np.setdiff1d(np.arange(600), copy), 148)])
    ev = prepare_evidence(pop, {"big": drawn}, np.unique(drawn), label[np.unique(drawn)])
    p = estimate(pop, ev).results["instance"]["precision"]["joint"]
    assert np.isnan(p.estimate[1])
    # Sure bounds: 1/6 known right, 1/6 known wrong: [1/6, 5/6] at most.
    assert p.lo[1] >= 1 / 6 - 1e-12 and p.hi[1] <= 5 / 6 + 1e-12
    assert p.lo[1] <= 4 / 6 <= p.hi[1] and p.hi[1] - p.lo[1] > 0.4


def test_small_system_whose_pairs_are_all_labelled_is_exact_and_needs_no_draws():
    """Issue 13: twelve relations, every pair labelled: it was given 271 draws and
    estimates up to 0.06 off although the labels decide its precision."""
    pop, ev, label = _shared_task([])
    copy = np.unique(ev.pairs)[:12]  # dense index = pair id here
    pop, ev, label = _shared_task(copy, labelled_extra=copy)
    assert plan_sample_size(pop, ev, "copy", target_halfwidth=0.05) == 0
    truth = float(np.mean(label[copy] == 0))
    p = estimate(pop, ev).results["instance"]["precision"]["joint"]
    assert p.estimate[1] == p.lo[1] == p.hi[1] == pytest.approx(truth)


def test_planner_needs_nothing_once_the_bounds_meet_the_target():
    # 96% of the copy labelled (U = 0.04 <= 2 * 0.05): no draw; U = 0.12: draws.
    pop, ev, _ = _shared_task([])
    pairs = np.arange(100)
    pop, ev, _ = _shared_task(pairs, labelled_extra=pairs[:96])
    assert plan_sample_size(pop, ev, "copy", target_halfwidth=0.05) == 0
    pop, ev, _ = _shared_task(pairs, labelled_extra=pairs[:88], draws_avoid=pairs[88:])
    assert plan_sample_size(pop, ev, "copy", target_halfwidth=0.05) > 0


@pytest.mark.parametrize("seed", range(5))
def test_zero_width_only_where_exact(seed):
    """Random populations, partial labels, every scheme: lo == hi only where the
    labels decide the value (precision: every pair labelled; recall: surely 0)."""
    rng = np.random.default_rng(seed)
    pop = Population()
    n_pairs = 300
    label = np.where(rng.random(n_pairs) < 0.4, rng.integers(0, 4, n_pairs), -1)
    for k in range(8):
        size = int(rng.integers(3, 80))
        pairs = rng.choice(n_pairs, size, replace=False)
        preds = np.where(rng.random(size) < 0.5, label[pairs].clip(0), rng.integers(0, 4, size))
        pop.add_system(f"s{k}", pairs, preds, pairs // 5)
    n = rng.integers(0, 30, len(pop))
    draws = {}
    for k, name in enumerate(pop.names):
        pairs = pop.pair_ids[pop.system_instances(k)[0]]
        draws[name] = pairs[rng.integers(0, len(pairs), n[k])]
    extra = rng.choice(n_pairs, 40)
    lab = np.unique(np.concatenate([*draws.values(), extra]))
    lab = lab[pop.lookup_pairs(lab) >= 0]
    y = np.flatnonzero(label >= 0)[:60]
    ev = prepare_evidence(
        pop, draws, lab, label[lab], y, label[y], exhaustive_docs=y // 7
    )
    res = estimate(pop, ev, schemes=SCHEMES)
    for scheme, metrics in res.results.items():
        bounds = label_bounds(pop, ev, scheme)
        own = label_bounds(pop, ev, scheme, own_draws_only=True)
        zero_recall = label_bounds(pop, ev, "instance")
        for metric, kinds in metrics.items():
            for kind, iv in kinds.items():
                flat = iv.hi - iv.lo <= 0
                assert np.all(iv.lo <= iv.hi + 1e-12)
                if metric == "precision":
                    allowed = (own if kind == "simple" else bounds).exact
                elif metric == "recall":
                    allowed = zero_recall.exact & (zero_recall.known == 0)
                else:
                    continue
                assert not np.any(flat & ~allowed), (scheme, metric, kind, np.flatnonzero(flat))


def test_lognormal_interval_of_a_tiny_estimate_with_a_wide_sd_is_everything():
    """An sd many times the estimate overflows the log-scale factor: [0, 1], silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = lognormal(np.array([1e-300, 0.2]), np.array([1.0, 0.001]), 1.645)
    assert (lo[0], hi[0]) == (0.0, 1.0)
    assert 0 < lo[1] < 0.2 < hi[1] < 1
