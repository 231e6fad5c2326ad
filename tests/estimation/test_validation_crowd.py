"""The battery's simulated crowd (estimation/validation/crowd.py): the production
label rule and the two error models."""

import numpy as np

from estimation.validation.crowd import NO_RELATION, CrowdLabeller, CrowdSpec, answer, make_pool


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


def _replicate_spread(n: int, spec: CrowdSpec, seed: int) -> float:
    """Variance over the parameter replicates of the mean P(pair true) of n labelled pairs."""
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, 21)
    truth = np.where(rng.random(3000) < 0.25, rng.choice(20, 3000, p=zipf / zipf.sum()),
                     NO_RELATION)
    labeller = CrowdLabeller(spec, truth, 20, rng)
    labeller.soft(np.arange(n))
    means = []
    for rep in labeller.replicates(np.random.default_rng(seed + 1)):
        rel = rep.predicates != NO_RELATION
        means.append(np.bincount(rep.pairs[rel], weights=rep.probs[rel], minlength=n).mean())
    return float(np.var(means, ddof=1))


def test_parameter_replicates_shrink_with_more_questions_and_vanish_for_a_perfect_crowd():
    """The correction's replicates vary the fitted rates and shares only (the answers
    stay): their spread falls like 1/questions — 4 times the questions, about a quarter
    of the variance (0.25–0.41 measured over three sets of worlds) — and a perfect
    crowd's rates leave nothing to vary."""
    spec = CrowdSpec(error_rate=0.2, bootstrap=20)
    # Pooled over 3 worlds (57 degrees of freedom a size): the ratio of the pooled
    # variances has a log-sd of about 0.26 from the replicates alone; 0.6 is about 2
    # of them above 0.35 and still fails a spread that does not shrink (ratio 1).
    small = np.mean([_replicate_spread(200, spec, s) for s in range(3)])
    large = np.mean([_replicate_spread(800, spec, s) for s in range(3)])
    assert small > 1e-6
    assert large < 0.6 * small, (small, large)
    # Perfect workers: certain posteriors under any refit; what is left (an sd of
    # about 1e-6) is rounding far below any interval's width.
    perfect = CrowdSpec(error_rate=0.0, spammer_share=0.0, bootstrap=8)
    assert _replicate_spread(200, perfect, 0) < 1e-10
