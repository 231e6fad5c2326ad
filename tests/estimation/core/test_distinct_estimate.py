"""The distinct-pairs estimator wired into `estimate` and the planner (§12).

Its statistics are checked on matrices in test_distinct.py and test_distinct_recall.py
and under arrival-ordered planning by the battery's arrival scenarios
(test_validation.py); here: the wiring gives those formulas' numbers from a Population
and its Evidence, the planner sees what the labels know, and bad requests are refused.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from estimation.core import Population, estimate, prepare_evidence
from estimation.core.distinct import (
    distinct_precision,
    ht_ratio,
    inclusion_probability,
    plan_distinct,
)
from estimation.core.distinct_estimate import (
    distinct_joint,
    more_draws,
    plan_distinct_size,
)
from estimation.core.distinct_recall import (
    covered_instances,
    distinct_recall,
    precision_nu_covariance,
)

N_PAIRS = 400


@pytest.fixture(scope="module")
def world():
    """Five systems over 400 pairs (ids 1000 + u, one relation code each), truth per pair,
    80 documents of 5 pairs; a near-duplicate, a disjoint system and one without draws."""
    rng = np.random.default_rng(3)
    label = np.where(rng.random(N_PAIRS) < 0.55, rng.integers(0, 4, N_PAIRS), -1)
    systems = {}
    for name, pairs in (("a", np.arange(0, 220)), ("b", np.arange(120, 330)),
                        ("dup", np.arange(0, 220)[rng.random(220) < 0.95]),
                        ("far", np.arange(330, 400)), ("idle", np.arange(50, 150))):
        # Right where the truth says so on 70% of its true pairs, else a wrong relation.
        keep = (label[pairs] >= 0) & (rng.random(len(pairs)) < 0.7)
        preds = np.where(keep, label[pairs], (np.maximum(label[pairs], 0) + 1) % 4)
        systems[name] = (pairs, preds)
    pop = Population()
    for name, (pairs, preds) in systems.items():
        pop.add_system(name, 1000 + pairs, preds, np.zeros(len(pairs), np.int64))
    return pop, systems, label


def _evidence(pop, systems, label, n, rng, exhaustive=True):
    draws = {nm: 1000 + pairs[rng.integers(0, len(pairs), n[nm])] if n[nm] else
             np.zeros(0, np.int64) for nm, (pairs, _) in systems.items()}
    lab = np.unique(np.concatenate(list(draws.values())))
    y = ()
    if exhaustive:
        docs = rng.choice(80, 30, replace=False)
        true = np.flatnonzero(label >= 0)
        yp = true[np.isin(true // 5, docs)]
        y = (1000 + yp, label[yp], np.zeros(len(yp), np.int64),
             np.unique(yp // 5, return_inverse=True)[1].ravel())
    return prepare_evidence(pop, draws, lab, label[lab - 1000], *y), draws, lab


def _matrices(pop, systems, label):
    """P_i(u) (instance scheme: uniform over a system's pairs) and P_i h_i, over the
    population's dense pair index, built from the world, not from the code under test."""
    rows, cols, p, r, g = [], [], [], [], []
    for k, (pairs, preds) in enumerate(systems.values()):
        dense = pop.lookup_pairs(1000 + pairs)
        rows.append(np.full(len(pairs), k))
        cols.append(dense)
        p.append(np.full(len(pairs), 1 / len(pairs)))
        g.append((preds == label[pairs]).astype(float))
        r.append(p[-1] * g[-1])
    shape = (len(systems), pop.n_pairs)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    mk = [sp.csr_matrix((np.concatenate(x), (rows, cols)), shape=shape) for x in (p, r, g)]
    return (*mk, np.where(label[pop.pair_ids - 1000] >= 0, 1.0, 0.0))


def test_estimate_gives_the_distinct_formulas_numbers(world):
    pop, systems, label = world
    n = {"a": 60, "b": 40, "dup": 8, "far": 30, "idle": 0}
    ev, _, lab = _evidence(pop, systems, label, n, np.random.default_rng(1))
    res = estimate(pop, ev, "instance", ["instance"], estimator="distinct")
    P, R, G, kappa = _matrices(pop, systems, label)
    nn = np.array([n[k] for k in systems])
    dense = pop.lookup_pairs(lab)
    est, _, _ = distinct_precision(P, R, nn, dense)
    prec = res.results["instance"]["precision"]["joint"]
    # "idle" has no draws of its own; a's draws reach all its pairs.
    np.testing.assert_allclose(prec.estimate, est, rtol=1e-12)
    assert np.all(prec.lo <= prec.estimate) and np.all(prec.estimate <= prec.hi)
    # Recall: the same θ̂ ν̂ + ρ̂ as distinct_recall from the matrices.
    y = pop.lookup_pairs(1000 + np.flatnonzero(label >= 0))
    y_dense = ev.y_pairs  # Ŷ0's dense pair index
    gy = G[:, y_dense].toarray()
    rec = distinct_recall(P, G, kappa, nn, dense, covered_instances(P, nn, y_dense), gy,
                          ev.y_docs)
    got = res.results["instance"]["recall"]["joint"]
    np.testing.assert_allclose(got.estimate, rec.estimate, rtol=1e-12)
    np.testing.assert_allclose(got.lo, rec.lo, rtol=1e-12)
    np.testing.assert_allclose(got.hi, rec.hi, rtol=1e-12)
    assert len(y) > len(y_dense) > 0
    # F1's covariance: θ̂ Ĉov(P̂, ν̂) of the matrices' formula.
    ht = distinct_joint(pop, ev, "instance", ["instance"], 0.9)
    want = rec.theta * precision_nu_covariance(P, R, G, kappa, nn, dense)
    np.testing.assert_allclose(ht.cov, want, rtol=1e-9, atol=1e-15)
    assert (want > 0).sum() >= 3
    # F1 moves with the precision–recall covariance: positive here, so F1's interval is
    # wider than without it.
    f1 = res.results["instance"]["f1"]["joint"]
    assert np.all(f1.lo <= f1.estimate) and np.all(f1.estimate <= f1.hi)


def test_importance_and_distinct_agree_on_what_the_labels_decide(world):
    """Both estimators share the sure bounds: a system whose every pair is labelled gets
    its exact precision from either."""
    pop, systems, label = world
    n = {"a": 0, "b": 0, "dup": 0, "far": 2000, "idle": 0}  # every pair drawn
    ev, _, _ = _evidence(pop, systems, label, n, np.random.default_rng(2), exhaustive=False)
    far = list(systems).index("far")
    pairs, preds = systems["far"]
    truth = float(np.mean(preds == label[pairs]))
    for estimator in ("importance", "distinct"):
        iv = estimate(pop, ev, estimator=estimator).results["instance"]["precision"]["joint"]
        assert iv.estimate[far] == pytest.approx(truth, abs=1e-12)
        assert iv.lo[far] == pytest.approx(truth, abs=1e-12)
        assert iv.hi[far] == pytest.approx(truth, abs=1e-12)


def test_a_reweighted_scheme_takes_its_masses_and_the_draws_design(world):
    pop, systems, label = world
    n = {"a": 60, "b": 40, "dup": 8, "far": 30, "idle": 0}
    ev, _, lab = _evidence(pop, systems, label, n, np.random.default_rng(4))
    res = estimate(pop, ev, "instance", ["instance", "predicate"], estimator="distinct")
    P, _, _, _ = _matrices(pop, systems, label)
    Q = pop.stacked("predicate")
    # The predicate scheme's right mass from the world: each instance's p under it.
    inst = pop.instances()
    right = np.asarray(ev.correct(inst["pairs"], inst["predicates"]), float)
    RQ = sp.csr_matrix((pop.instance_probs("predicate") * right,
                        (inst["system"], inst["pairs"])), shape=Q.shape)
    dense = pop.lookup_pairs(lab)
    pi = inclusion_probability(P[:, dense], np.array([n[k] for k in systems]))
    est, _, _ = ht_ratio(RQ[:, dense], Q[:, dense], pi, P[:, dense],
                         np.array([n[k] for k in systems]))
    got = res.results["predicate"]["precision"]["joint"].estimate
    sampled = np.array([n[k] > 0 for k in systems])
    np.testing.assert_allclose(got[sampled], est[sampled], rtol=1e-12)


def test_the_planner_counts_only_what_the_labels_do_not_know(world):
    pop, systems, label = world
    n = {"a": 120, "b": 80, "dup": 0, "far": 0, "idle": 0}
    ev, _, _ = _evidence(pop, systems, label, n, np.random.default_rng(5), exhaustive=False)
    target = 0.25 / 500
    # By hand: q_old from a's and b's draws, h on the labelled pairs.
    pairs, preds = systems["dup"]
    p = np.full(len(pairs), 1 / len(pairs))
    q_old = (1 - np.where(pairs < 220, 1 / 220, 0.0)) ** 120 * \
        (1 - np.where((pairs >= 120) & (pairs < 330), 1 / 210, 0.0)) ** 80
    labelled = ev.label[pop.lookup_pairs(1000 + pairs)] != -2
    h = (preds == label[pairs]).astype(float)
    want = plan_distinct(p, q_old, h, labelled, target, 1.6448536 * np.sqrt(target))
    got = plan_distinct_size(pop, ev, "dup", target_variance=target)
    assert got == want
    # A near-duplicate of well-sampled systems costs less than the same system alone.
    alone, _, _ = _evidence(pop, systems, label, {k: 0 for k in systems},
                            np.random.default_rng(5), exhaustive=False)
    assert got < plan_distinct_size(pop, alone, "dup", target_variance=target)
    with pytest.raises(ValueError, match="positive target"):
        plan_distinct_size(pop, ev, "dup", target_halfwidth=0)


def test_more_draws_only_when_the_interval_is_wider_than_planned(world):
    pop, systems, label = world
    n = {"a": 10, "b": 0, "dup": 0, "far": 0, "idle": 0}
    ev, _, _ = _evidence(pop, systems, label, n, np.random.default_rng(6), exhaustive=False)
    iv = estimate(pop, ev, estimator="distinct").results["instance"]["precision"]["joint"]
    w = float(iv.hi[0] - iv.lo[0]) / 2
    assert more_draws(pop, ev, "a", w + 1e-6) == 0
    # Half the width: four times the variance, n·((w/h)² − 1) + 1 = 10·3 + 1 more.
    assert more_draws(pop, ev, "a", w / 2) == 31
    assert more_draws(pop, ev, "b", 0.01) == 0  # no draws yet: the planner's job


def test_unknown_estimators_are_refused(world):
    pop, systems, label = world
    n = {"a": 30, "b": 0, "dup": 0, "far": 0, "idle": 0}
    ev, _, _ = _evidence(pop, systems, label, n, np.random.default_rng(7), exhaustive=False)
    with pytest.raises(ValueError, match="estimator: expected one of importance, distinct"):
        estimate(pop, ev, estimator="ht")


@pytest.mark.parametrize("soft", [False, True])
def test_joint_in_row_blocks_equals_one_block(world, soft, monkeypatch):
    """ν̂'s dense G and X and the Cov(P̂, ν̂) residuals go a block of systems at a time:
    blocks of one or two systems give one block's precision, recall and covariance."""
    from estimation.core import distinct
    from estimation.core.noise import SoftLabels, with_soft_labels

    pop, systems, label = world
    n = {"a": 60, "b": 40, "dup": 8, "far": 30, "idle": 0}
    ev, _, lab = _evidence(pop, systems, label, n, np.random.default_rng(4))
    if soft:
        rng = np.random.default_rng(5)
        ev = with_soft_labels(pop, ev, SoftLabels(
            lab, label[lab - 1000], rng.uniform(0.6, 1.0, len(lab))))
        assert ev.true_prob is not None
    calls = []
    real = distinct.row_blocks

    def spy(rows, width):
        calls.append(len(real(rows, width)))
        return real(rows, width)

    monkeypatch.setattr(distinct, "_ROW_BLOCK_BYTES", 1 << 40)
    one = distinct_joint(pop, ev, "instance", ["instance", "predicate"], 0.9)
    import estimation.core.distinct_estimate as de
    monkeypatch.setattr(de, "row_blocks", spy)
    # A row per block, or the covariance's (over all S) two rows per block.
    for size, want in ((1, [len(pop)] * 2), (8 * 2 * len(ev.pairs), [None, 3])):
        calls.clear()
        monkeypatch.setattr(distinct, "_ROW_BLOCK_BYTES", size)
        blocks = distinct_joint(pop, ev, "instance", ["instance", "predicate"], 0.9)
        assert len(calls) == 2 and calls[1] == want[1] and (want[0] is None or calls[0] == want[0])
        for s in one.precision:
            for f in ("estimate", "lo", "hi"):
                np.testing.assert_allclose(getattr(blocks.precision[s], f),
                                           getattr(one.precision[s], f), rtol=1e-12)
        for f in ("estimate", "lo", "hi"):
            np.testing.assert_allclose(getattr(blocks.recall, f), getattr(one.recall, f),
                                       rtol=1e-12)
        np.testing.assert_allclose(blocks.cov, one.cov, rtol=1e-12, atol=0)
    assert np.count_nonzero(one.cov) >= 3 and np.isfinite(one.recall.estimate).sum() >= 3
