"""The battery's simulated crowd (estimation/validation/crowd.py): the production
label rule and the two error models."""

import numpy as np

from estimation.validation.crowd import NO_RELATION, CrowdSpec, answer, make_pool


def test_ties_ask_for_more_answers_and_majority_decides():
    rng = np.random.default_rng(0)
    truth = np.where(rng.random(4000) < 0.3, rng.integers(0, 20, 4000), NO_RELATION)
    spec = CrowdSpec(error_rate=0.3)
    got = answer(truth, make_pool(spec, 20, rng), spec, 20, rng)
    used = np.bincount(got.items, minlength=len(truth))
    # Two of four is no strict majority: a three-way tie always takes both extras.
    assert set(np.unique(used)) == {3, 5}
    for i in np.flatnonzero(used == 3)[:200]:
        votes = got.answers[got.items == i]
        assert (votes == got.labels[i]).sum() >= 2  # three answers: a strict majority
    for i in np.flatnonzero(used == 5)[:200]:
        votes = got.answers[got.items == i]
        assert np.unique(votes[:3]).size == 3  # more answers only after a three-way tie
        counts = np.array([(votes == v).sum() for v in votes])
        assert (votes == got.labels[i]).sum() == counts.max()  # then the plurality


def test_perfect_honest_workers_are_always_right():
    rng = np.random.default_rng(1)
    truth = np.where(rng.random(500) < 0.5, rng.integers(0, 20, 500), NO_RELATION)
    spec = CrowdSpec(error_rate=0.0, spammer_share=0.0)
    got = answer(truth, make_pool(spec, 20, rng), spec, 20, rng)
    assert np.array_equal(got.labels, truth)
    assert np.array_equal(got.answers, truth[got.items])


def test_blind_spots_repeat():
    """A systematic worker misses a relation type every time, never another way."""
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 20, 3000)
    spec = CrowdSpec(error_rate=0.2, systematic=True, spammer_share=0.0)
    pool = make_pool(spec, 20, rng)
    got = answer(truth, pool, spec, 20, rng)
    t = truth[got.items]
    blind = pool.blind[got.workers, t]
    assert np.all(got.answers[blind] == NO_RELATION)
    assert np.all(got.answers[~blind] == t[~blind])
    assert 0.15 < blind.mean() < 0.25
