"""Statistical checks of the estimators on a simulated shared task (seeded).

Tolerances come from the trial count T: a 90% interval's coverage over T trials
has standard error sqrt(0.09/T); a mean over T trials has standard error
sd/sqrt(T), with sd measured across the trials.
"""

import numpy as np
import pytest

from estimation.core import SCHEMES, Population, estimate, prepare_evidence
from estimation.core.intervals import covers
from estimation.simulate import truth


def _split(a):
    return a[..., 0], a[..., 1], a[..., 2]


def _truth(world, scheme, metric):
    p, r, f = truth(world, scheme)
    return {"precision": p, "recall": r, "f1": f}[metric]


@pytest.mark.parametrize("metric", ["precision", "recall"])
@pytest.mark.parametrize("kind", ["simple", "joint"])
def test_unbiased_instance_scheme(world, fixed_instance, metric, kind):
    est, _, _ = _split(fixed_instance[("instance", metric, kind)])
    t = _truth(world, "instance", metric)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    # 4 standard errors per system; recall's joint estimator is a ratio, its
    # O(1/n) bias is far below this at these sample sizes.
    assert np.all(np.abs(est.mean(axis=0) - t) <= 4 * se + 1e-9)


def test_recall_unbiased_for_the_disjoint_system(world, fixed_instance):
    # A proposal tailored to system i misses the disjoint system's
    # pool instances and overstates everyone's recall; the mixture of all draws does not.
    est, _, _ = _split(fixed_instance[("instance", "recall", "joint")])
    t = _truth(world, "instance", "recall")
    novel = int(np.flatnonzero(world.disjoint)[0])
    assert t[novel] > 0
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert abs(est[:, novel].mean() - t[novel]) <= 4 * se[novel]
    assert np.all(np.abs(est.mean(axis=0) - t) <= 4 * se + 1e-9)


@pytest.mark.parametrize("metric", ["precision", "recall", "f1"])
def test_joint_narrower_than_simple(fixed_instance, metric):
    _, lo_s, hi_s = _split(fixed_instance[("instance", metric, "simple")])
    _, lo_j, hi_j = _split(fixed_instance[("instance", metric, "joint")])
    assert np.median(hi_j - lo_j) < 0.8 * np.median(hi_s - lo_s)


def _coverage(world, results, scheme, metric, kind):
    _, lo, hi = _split(results[(scheme, metric, kind)])
    t = _truth(world, scheme, metric)
    return covers(lo, hi, t).mean(axis=0), len(lo)


def _check_coverage(cov_trials, label, below=4.5, above=4.5):
    """Coverage bands in standard errors sqrt(0.09/T) of one system's coverage.

    The mean over systems must lie within 3 (conservative: averaging only
    shrinks the error); each system within ``below``/``above`` (12 systems, so a
    Bonferroni-style margin).
    """
    cov, trials = cov_trials
    se = np.sqrt(0.09 / trials)
    assert abs(cov.mean() - 0.9) <= 3 * se, f"{label}: mean coverage {cov.mean():.3f}"
    assert np.all(cov >= 0.9 - below * se), f"{label}: coverage {np.round(cov, 3)}"
    assert np.all(cov <= 0.9 + above * se), f"{label}: coverage {np.round(cov, 3)}"


def _tolerances(scheme, metric, draw_scheme):
    # Known limitation (docs/internals/estimation.md): precision reweighted to the
    # predicate-macro scheme has right-skewed importance weights (a rare
    # predicate of a small system weighs 10x); the worst system's 90% interval
    # covers about 0.81, while the floor on its width makes others over-cover.
    # F1 over-covers when recall is tiny (delta method).
    reweighted = scheme == "predicate" != draw_scheme and metric != "recall"
    below = 7.0 if reweighted else 4.5
    above = 6.5 if reweighted or metric == "f1" else 4.5
    return {"below": below, "above": above}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("metric", ["precision", "recall", "f1"])
@pytest.mark.parametrize("kind", ["simple", "joint"])
def test_coverage_draws_from_instance(world, fixed_instance, scheme, metric, kind):
    _check_coverage(
        _coverage(world, fixed_instance, scheme, metric, kind),
        f"{scheme}/{metric}/{kind}",
        **_tolerances(scheme, metric, "instance"),
    )


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("metric", ["precision", "recall"])
@pytest.mark.parametrize("kind", ["simple", "joint"])
def test_coverage_draws_from_entity_relation(
    world, fixed_entity_relation, scheme, metric, kind
):
    _check_coverage(
        _coverage(world, fixed_entity_relation, scheme, metric, kind),
        f"{scheme}/{metric}/{kind}",
        **_tolerances(scheme, metric, "entity_relation"),
    )


# ---- edge cases -----------------------------------------------------------------


def _tiny():
    pop = Population()
    pop.add_system("perfect", np.arange(10), np.zeros(10, int))
    pop.add_system("hopeless", np.arange(20, 30), np.zeros(10, int))
    pop.add_system("twin", np.arange(10), np.zeros(10, int))  # same as perfect, no draws
    pop.add_system("unseen", np.arange(40, 45), np.zeros(5, int))  # no draws, no overlap
    pop.add_system("half", np.arange(5, 15), np.zeros(10, int))  # no draws, half labelled
    pop.add_system("big", np.arange(100, 300), np.zeros(200, int))  # mostly unlabelled
    rng = np.random.default_rng(0)
    draws = {
        "perfect": np.concatenate([np.arange(10), rng.integers(0, 10, 20)]),
        "hopeless": np.concatenate([np.arange(20, 30), rng.integers(20, 30, 20)]),
        "big": rng.integers(100, 300, 40),
    }
    # Every drawn pair is labelled; pairs 10-14 and most of big's are not.
    label_pairs = np.unique(np.concatenate([np.arange(10), np.arange(20, 30), draws["big"]]))
    # perfect's pairs are right, hopeless's wrong, big's right on odd pairs.
    big_label = label_pairs % 2 - 1
    label_preds = np.where(label_pairs < 10, 0, np.where(label_pairs >= 100, big_label, -1))
    ev = prepare_evidence(
        pop,
        draws,
        label_pairs,
        label_preds,
        np.array([0, 3, 7, 50]),
        np.array([0, 0, 0, 1]),
    )
    return estimate(pop, ev, schemes=SCHEMES)


def test_precision_zero_and_one_and_no_draws():
    p = _tiny().results["instance"]["precision"]
    j = p["joint"]
    # Every pair of perfect, hopeless and twin is labelled: exact, zero width.
    for k, value in ((0, 1.0), (1, 0.0), (2, 1.0)):
        assert j.estimate[k] == j.lo[k] == j.hi[k] == pytest.approx(value)
    # Perfect and hopeless drew all their ten pairs themselves: simple is exact too.
    for k, value in ((0, 1.0), (1, 0.0)):
        simple = p["simple"]
        assert simple.estimate[k] == simple.lo[k] == simple.hi[k] == pytest.approx(value)
    # Without draws: no simple estimate.
    assert np.isnan(p["simple"].estimate[2]) and (p["simple"].lo[2], p["simple"].hi[2]) == (0, 1)
    # Nothing known about unseen: not estimable, [0, 1].
    assert np.isnan(j.estimate[3]) and (j.lo[3], j.hi[3]) == (0, 1)
    # Half: pairs 5-9 are labelled right, 10-14 unlabelled and unreachable: [0.5, 1].
    assert np.isnan(j.estimate[4]) and j.lo[4] == pytest.approx(0.5) and j.hi[4] == 1
    # Big: a real sampling interval inside its sure bounds.
    assert 0 < j.lo[5] < j.estimate[5] < j.hi[5] < 1 and j.hi[5] - j.lo[5] > 0.1


def test_recall_edge_cases_do_not_crash():
    res = _tiny()
    for scheme, metrics in res.results.items():
        for metric, kinds in metrics.items():
            for kind, iv in kinds.items():
                assert np.all((iv.lo >= 0) & (iv.hi <= 1) & (iv.lo <= iv.hi)), (
                    scheme,
                    metric,
                    kind,
                )
                ok = np.isnan(iv.estimate) | ((iv.lo <= iv.estimate) & (iv.estimate <= iv.hi))
                assert np.all(ok), (scheme, metric, kind)
    r = res.results["instance"]["recall"]
    # hopeless: every pair labelled, none right: recall is exactly 0.
    for kind in ("simple", "joint"):
        assert r[kind].estimate[1] == r[kind].lo[1] == r[kind].hi[1] == 0
    # big found none of Ŷ0 but has true instances elsewhere: an honest upper end.
    assert r["simple"].estimate[5] == 0 and r["simple"].hi[5] > 0.3


def test_no_exhaustive_sample_and_no_systems():
    pop = Population()
    pop.add_system("a", np.arange(5), np.zeros(5, int))
    ev = prepare_evidence(pop, {"a": np.array([0, 1])}, np.arange(5), np.zeros(5, int))
    r = estimate(pop, ev).results["instance"]["recall"]["joint"]
    assert np.isnan(r.estimate[0]) and (r.lo[0], r.hi[0]) == (0, 1)
    empty = Population()
    assert estimate(empty, prepare_evidence(empty, {}, [], [])).results == {}


def test_unlabelled_draws_are_pending():
    pop = Population()
    pop.add_system("a", np.arange(5), np.zeros(5, int))
    ev = prepare_evidence(
        pop, {"a": np.array([0, 1, 4, 4])}, np.array([0, 1]), np.array([0, -1])
    )
    assert ev.n[0] == 2 and ev.pending[0] == 2
    with pytest.raises(ValueError, match="not among"):
        prepare_evidence(pop, {"a": np.array([9])}, np.array([0]), np.array([0]))


def test_pairs_with_two_true_relations_count_both_predicates() -> None:
    """A founder who is also an employee: both systems' predictions are correct."""
    from estimation.core import Population, estimate, prepare_evidence

    pop = Population()
    pop.add_system("founded", np.array([1, 2]), np.array([0, 0]))
    pop.add_system("employee", np.array([1, 2]), np.array([1, 1]))
    draws = {"founded": np.array([1, 2]), "employee": np.array([1, 2])}
    # Pair 1 holds both relations; pair 2 only "founded".
    ev = prepare_evidence(pop, draws, np.array([1, 1, 2]), np.array([0, 1, 0]))
    res = estimate(pop, ev)
    simple = res.results["instance"]["precision"]["simple"].estimate
    assert simple.tolist() == [1.0, 0.5]
