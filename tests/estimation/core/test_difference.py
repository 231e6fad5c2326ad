"""The paired difference of two systems: coverage of the true difference by simulation,
how much tighter it is than separate intervals, and the edges."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.core import estimate
from estimation.core.difference import compare
from estimation.core.intervals import covers
from estimation.simulate import draw_evidence, make_world, truth
from tests.stat_checks import assert_coverage

TRIALS = 200


def _pairs(world) -> list[tuple[int, int]]:
    """(0, 1) two teams; a team and its near-duplicate run; a team and the system
    nobody overlaps (independent estimates). Found by name, not by index: which team
    the world's other run copies is itself a random draw."""
    names = [name for name, _, _ in world.systems]
    dup = next(i for i, n in enumerate(names) if "-run" in n)
    novel = names.index("novel")
    other = 1 if world.team[dup] != 1 else 0
    return [(0, 1), (int(world.team[dup]), dup), (other, novel)]


@pytest.fixture(scope="module", params=["importance", "distinct"])
def simulated(request: pytest.FixtureRequest) -> dict:
    """200 trials of both joint estimators, the board's and the comparison's alike."""
    estimator = request.param
    rng = np.random.default_rng(7)
    world = make_world(rng, n_systems=8, n_pairs=4000, disjoint_pairs=500)
    pop = world.population()
    probs = [s.probs("instance") for s in pop._systems]
    true = dict(zip(("precision", "recall", "f1"), truth(world, "instance"), strict=True))
    pairs = _pairs(world)
    hits = {m: np.zeros((TRIALS, len(pairs)), bool) for m in true}
    ratio = {m: np.zeros((TRIALS, len(pairs))) for m in true}
    for t in range(TRIALS):
        ev, _ = draw_evidence(world, pop, rng, np.full(len(pop), 150), 300, "instance", probs)
        res = estimate(pop, ev, "instance", ["instance"], 0.9, estimator=estimator)
        for k, (a, b) in enumerate(pairs):
            diffs = compare(pop, ev, a, b, "instance", "instance", 0.9, estimates=res,
                            estimator=estimator).differences
            for m, d in diffs.items():
                hits[m][t, k] = covers(d.lo, d.hi, true[m][a] - true[m][b])
                ratio[m][t, k] = d.paired_sd / d.separate_sd
    return {"hits": hits, "ratio": ratio}


@pytest.mark.parametrize("metric", ["precision", "recall", "f1"])
def test_the_difference_interval_covers_the_true_difference(simulated: dict, metric: str) -> None:
    assert_coverage(f"A − B {metric}", simulated["hits"][metric])


def test_shared_labels_make_the_paired_interval_tighter(simulated: dict) -> None:
    ratio = {m: np.median(r, axis=0) for m, r in simulated["ratio"].items()}
    print({m: r.round(2).tolist() for m, r in ratio.items()})
    # Near-duplicates share almost every label: far tighter than separate intervals.
    assert ratio["precision"][1] < 0.5 and ratio["f1"][1] < 0.6
    # A system nobody overlaps shares no draw: its precision is independent of the other.
    assert ratio["precision"][2] == pytest.approx(1.0, abs=0.05)


def _tiny() -> tuple:
    rng = np.random.default_rng(3)
    world = make_world(rng, n_systems=4, n_pairs=600, disjoint_pairs=100)
    pop = world.population()
    probs = [s.probs("instance") for s in pop._systems]
    ev, _ = draw_evidence(world, pop, rng, np.full(len(pop), 30), 60, "instance", probs)
    return world, pop, ev


def test_edges_are_refused_with_a_reason() -> None:
    _, pop, ev = _tiny()
    with pytest.raises(ValueError, match="two different systems"):
        compare(pop, ev, 1, 1)
    with pytest.raises(ValueError, match="out of range"):
        compare(pop, ev, 0, len(pop))
    with pytest.raises(ValueError):
        compare(pop, ev, 0, 1, scheme="nope")


def test_a_system_compared_with_itself_reversed_flips_sign() -> None:
    _, pop, ev = _tiny()
    ab = compare(pop, ev, 0, 1).differences
    ba = compare(pop, ev, 1, 0).differences
    for m in ab:
        assert ab[m].estimate == pytest.approx(-ba[m].estimate)
        assert ab[m].lo == pytest.approx(-ba[m].hi) and ab[m].hi == pytest.approx(-ba[m].lo)
        assert ab[m].verdict == -ba[m].verdict


def test_the_limits_keep_each_intervals_asymmetry() -> None:
    """An interval need not be symmetric about its estimate (Wilson; sure label bounds,
    with the clipped estimate at an edge). A exact, B's estimate at its upper limit:
    the truth of A − B lies anywhere in ea − [lo_B, hi_B], so that is the difference's
    interval; a width-implied sd would centre it on ea − eb and miss half of it."""
    _, pop, ev = _tiny()
    res = estimate(pop, ev, "instance", ["instance"], 0.9)
    for metric in ("precision", "recall"):
        iv = res.results["instance"][metric]["joint"]
        iv.lo[0] = iv.hi[0] = iv.estimate[0] = 0.5
        iv.estimate[1], iv.lo[1], iv.hi[1] = 0.787, 0.745, 0.787
    d = compare(pop, ev, 0, 1, estimates=res).differences
    for metric in ("precision", "recall"):
        assert d[metric].estimate == pytest.approx(0.5 - 0.787)
        assert d[metric].lo == pytest.approx(0.5 - 0.787)
        assert d[metric].hi == pytest.approx(0.5 - 0.745)
