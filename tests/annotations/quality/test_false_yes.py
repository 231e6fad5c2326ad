"""False "yes" per worker and relation (`rates.false_yes_rates`): a yes-biased crowd
(estimation.validation.crowd, `CrowdSpec.attractive`) against its known rates."""

import numpy as np

from annotations.quality.rates import Offered, false_yes_rates, weak_relations
from estimation.validation import crowd

N_REL = 12


def _biased(seed: int, attractive: int, n: int = 3000):
    rng = np.random.default_rng(seed)
    truth = np.where(rng.random(n) < 0.3, rng.integers(0, N_REL, n), -1)
    spec = crowd.CrowdSpec(error_rate=0.05, attractive=attractive, pair_types=4,
                           type_options=4)
    pool = crowd.make_pool(spec, N_REL, rng)
    typed = crowd.pair_types(truth, spec, N_REL, rng)
    got = crowd.answer(truth, pool, spec, N_REL, rng, typed)
    obs = got.answers + 1  # categories −1..P−1 as columns 0..P
    offered = Offered.seen(typed[0], got.items, obs, {}, N_REL + 1, 0)
    # The pairs' true P(none): the rates alone are tested, not EM.
    p_none = (truth[got.items] < 0).astype(float)
    fp = false_yes_rates(p_none, got.items, got.workers, obs, 0, len(pool.accuracy), offered)
    return pool, fp[:, 1:], _said_rates(pool, typed, truth, got)


def _said_rates(pool: crowd.Pool, typed: tuple, truth: np.ndarray, got) -> np.ndarray:
    """(workers × relations) the simulation's chance of naming r on a pair holding none
    that offers it, averaged over each worker's such answers: its rate for r, once no
    attractive relation offered before r was named (`crowd._answer` checks in order)."""
    assert pool.yes is not None
    types, sets = typed
    n_w = len(pool.accuracy)
    num, den = np.zeros((n_w, N_REL)), np.zeros((n_w, N_REL))
    for i, w in zip(got.items, got.workers, strict=True):
        if truth[i] >= 0:
            continue
        left = 1.0
        for r in sets[types[i]]:
            num[w, r] += left * pool.yes[w, r]
            den[w, r] += 1
            left *= 1 - pool.yes[w, r]
    return num / np.maximum(den, 1)


def test_attractive_cells_get_each_workers_own_rate():
    """Each honest worker's rate on an attractive relation follows their own (0.2–0.6,
    drawn per worker and relation, less where another attractive relation offered before
    it was said first): correlation above 0.8 over the cells, mean error
    within 0.05; the other relations stay near the 5% error's share per relation."""
    pool, fp, said = _biased(1, attractive=2)
    honest = ~pool.spammer
    got, want = fp[honest, :2].ravel(), said[honest, :2].ravel()
    assert np.corrcoef(got, want)[0, 1] > 0.8
    assert abs(float((got - want).mean())) < 0.05
    assert float(np.median(fp[honest, 2:])) < 0.05
    # A spammer answers at random: a high rate on every relation, not a bias on one.
    assert fp[pool.spammer, 2:].mean() > 3 * fp[honest, 2:].mean()


def test_random_errors_give_no_relation_its_own_rate():
    """Without a bias the cells scatter no more than their counts explain and are
    shrunk to their relation's rate times the worker's propensity: over 800 pairs the
    honest workers' cells of a relation spread 0.012–0.014 (seeds 0–3; what is left is
    the workers' own accuracy), unshrunk cells 0.026–0.030."""
    pool, fp, _ = _biased(2, attractive=0, n=800)
    honest = ~pool.spammer
    assert float(fp[honest].std(axis=0).mean()) < 0.018


def test_the_report_names_the_attractive_relations_and_their_biased_workers():
    """`weak_relations` on the fitted rates: the two attractive relations (0, 1) and no
    other; the workers it names on each are those the simulation made most biased."""
    pool, fp, said = _biased(1, attractive=2)
    cats = [-1, *range(N_REL)]
    full = np.hstack([np.zeros((len(fp), 1)), fp])
    names = [f"w{w}" for w in range(len(fp))]
    weak = weak_relations(full, cats, 0, names, np.ones(len(fp), dtype=bool))
    assert sorted(w["relation"] for w in weak) == [0, 1]
    for entry in weak:
        r = entry["relation"]
        named = [int(w["worker"][1:]) for w in entry["workers"]]
        assert named, entry
        # Everyone named is above the relation's median true rate.
        assert (said[named, r] > np.median(said[~pool.spammer, r])).all(), entry
