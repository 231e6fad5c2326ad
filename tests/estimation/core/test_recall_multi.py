"""Joint recall counts true instances, not true pairs (issue 17).

A pair holding two true relations is two true instances: a system naming one of them
found half of the pair, as truth.json and simple recall count it. Counted per pair
(the pair true, the system right on it) it was a full hit, and a system naming both
counted twice against one in the denominator.

The world: pair 0 holds relations 1 and 2, pair 1 holds 3, pair 3 holds 4, pair 2
none. A names 1 on pair 0 and 3 on pair 1 (recall 2/4); B names all four and a wrong
relation on pair 2 (recall 1). Every system draws each of its instances once and the
exhaustive sample is the whole world, so θ = 1 and joint recall is ν̂ itself, exactly:
with the balance heuristic q = 3/7, 2/7, 1/7, 1/7 and 3, 2, 1, 1 draws per pair,
ν̂_A = (3·(2/q0)·½ + 2/q1) / (3·2/q0 + 2/q1 + 1/q3) = 14/28. Per pair it was 14/21.
"""

from __future__ import annotations

import numpy as np
import pytest

from estimation.core import Population, estimate, prepare_evidence
from estimation.core.noise import SoftLabels, with_soft_labels
from estimation.core.points import PointPlan

SYSTEMS = {"A": ([0, 1], [1, 3]), "B": ([0, 0, 1, 2, 3], [1, 2, 3, 5, 4])}
LABELS = ([0, 0, 1, 2, 3], [1, 2, 3, -1, 4])  # pair 0: two relations
GOLD = ([0, 0, 1, 3], [1, 2, 3, 4], [0, 0, 1, 2])  # pairs, predicates, documents
TRUTH = np.array([0.5, 1.0])


def _world() -> tuple[Population, dict]:
    pop = Population()
    for name, (pairs, preds) in SYSTEMS.items():
        pop.add_system(name, np.array(pairs), np.array(preds))
    return pop, {name: np.array(pairs) for name, (pairs, _) in SYSTEMS.items()}


def _hard(pop: Population, draws: dict):
    return prepare_evidence(pop, draws, np.array(LABELS[0]), np.array(LABELS[1]),
                            np.array(GOLD[0]), np.array(GOLD[1]),
                            exhaustive_docs=np.array(GOLD[2]))


def _joint(pop: Population, ev) -> np.ndarray:
    return estimate(pop, ev, "instance", ["instance"]).results["instance"]["recall"]["joint"]


def test_hard_labels_count_instances() -> None:
    pop, draws = _world()
    ev = _hard(pop, draws)
    np.testing.assert_array_equal(ev.relations_per_true(np.arange(4)), [2, 1, 1, 1])
    joint = _joint(pop, ev)
    np.testing.assert_allclose(joint.estimate, TRUTH, rtol=1e-12)
    assert (joint.lo <= TRUTH + 1e-12).all() and (joint.hi >= TRUTH - 1e-12).all()
    simple = estimate(pop, ev, "instance", ["instance"]).results["instance"]["recall"]["simple"]
    np.testing.assert_allclose(simple.estimate, TRUTH)  # the exhaustive count agrees


def test_soft_labels_count_expected_instances() -> None:
    """Certain soft labels (marginals per predicate, as stored) give the hard result;
    an uncertain second relation counts by its probability: the stored posterior
    P("1|2") = 0.8, P("1") = 0.2 has marginals 1.0 and 0.8, so pair 0 holds 1.8 true
    instances in expectation and A, naming 1, finds 1/1.8 of it."""
    pop, draws = _world()
    ev = _hard(pop, draws)
    certain = SoftLabels(np.array([0, 0, 1, 2, 3]), np.array([1, 2, 3, -1, 4]), np.ones(5))
    soft = with_soft_labels(pop, ev, certain)
    np.testing.assert_allclose(_joint(pop, soft).estimate, TRUTH, rtol=1e-12)
    unsure = SoftLabels(np.array([0, 0, 1, 2, 3]), np.array([1, 2, 3, -1, 4]),
                        np.array([1.0, 0.8, 1.0, 1.0, 1.0]))
    soft = with_soft_labels(pop, ev, unsure)
    assert soft.relations_per_true(np.array([0]))[0] == pytest.approx(1.8)
    # a_u = κ_u/q_u, c = 3, 2, 1 draws: A's numerator 3·(1.8·7/3)/1.8 + 2·7/2 = 14.
    den = 3 * 1.8 * 7 / 3 + 2 * 7 / 2 + 7
    np.testing.assert_allclose(_joint(pop, soft).estimate, [14 / den, 1.0], rtol=1e-12)


@pytest.mark.parametrize("soft", [False, True])
def test_replicates_points_agree(soft: bool) -> None:
    """The replicates' ν̂ (PointPlan) counts instances as `estimate` does."""
    pop, draws = _world()
    ev = _hard(pop, draws)
    if soft:
        ev = with_soft_labels(pop, ev, SoftLabels(
            np.array([0, 0, 1, 2, 3]), np.array([1, 2, 3, -1, 4]),
            np.array([1.0, 0.8, 1.0, 1.0, 1.0])))
    points = PointPlan(pop, ev).estimates(ev)
    np.testing.assert_allclose(points[("instance", "recall", "joint")],
                               _joint(pop, ev).estimate, rtol=1e-12)


def test_one_relation_per_pair_is_unchanged() -> None:
    """Without the second relation on pair 0 (B's second instance there wrong) κ is 1
    everywhere and A, right on both its true pairs of three, gets 2/3 as before."""
    pop, draws = _world()
    ev = prepare_evidence(pop, draws, np.array([0, 1, 2, 3]), np.array([1, 3, -1, 4]),
                          np.array([0, 1, 3]), np.array([1, 3, 4]),
                          exhaustive_docs=np.array([0, 1, 2]))
    np.testing.assert_array_equal(ev.relations_per_true(np.arange(4)), 1.0)
    # a = 1/q: den = 3·7/3 + 2·7/2 + 7 = 21, A's numerator 7 + 7.
    np.testing.assert_allclose(_joint(pop, ev).estimate, [14 / 21, 1.0], rtol=1e-12)


def test_certain_soft_labels_give_the_hard_interval_when_a_system_names_two() -> None:
    """ν̂'s variance takes a²g² per pair: with a system naming both true relations of a
    pair, c_i²/q² = 4/q², not c_i/q² (certain soft labels were read as the latter,
    narrowing joint recall where systems find several facts of one pair)."""
    systems = {"A": ([0, 1, 4], [1, 3, 6]), "B": ([0, 0, 1, 2, 3, 5], [1, 2, 3, 5, 4, 7])}
    labels = ([0, 0, 1, 2, 3, 4, 5], [1, 2, 3, -1, 4, 6, 8])
    pop = Population()
    for name, (pairs, preds) in systems.items():
        pop.add_system(name, np.array(pairs), np.array(preds))
    draws = {"A": np.array([0, 1, 4, 0]), "B": np.array([0, 0, 1, 2, 3, 5, 1])}
    gold = ([0, 0, 1, 3, 4, 5, 6], [1, 2, 3, 4, 6, 8, 9], [0, 0, 1, 2, 3, 4, 5])
    ev = prepare_evidence(pop, draws, np.array(labels[0]), np.array(labels[1]),
                          np.array(gold[0]), np.array(gold[1]), exhaustive_docs=np.array(gold[2]))
    hard = _joint(pop, ev)
    certain = SoftLabels(np.array(labels[0]), np.array(labels[1]), np.ones(len(labels[0])))
    soft = _joint(pop, with_soft_labels(pop, ev, certain))
    assert 0 < hard.estimate[1] < 1 and hard.hi[1] - hard.lo[1] > 0.01
    for end in ("estimate", "lo", "hi"):
        np.testing.assert_allclose(getattr(soft, end), getattr(hard, end), rtol=1e-9)
