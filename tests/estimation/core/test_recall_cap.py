"""Joint recall's P(pair true) and P(i right) are one calibration per system: the pair's
prior leans to the predicted relations, and where P(i right) still exceeds it, system i's
sums take P(i right) as the pair's P(true); nothing is capped, no interval widened."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from estimation.core import Population, estimate, estimators, prepare_evidence
from estimation.core.difference import _Linear, compare
from estimation.validation.battery import _doc_members, _Sampler
from estimation.validation.crowd import CrowdLabeller, CrowdSpec
from estimation.validation.worlds import WorldSpec, make_world


def _evidence(crowd_spec: CrowdSpec, seed: int) -> tuple:
    """One small battery trial's population and the crowd's and the world's evidence
    (12 systems, 100 draws each, 24 exhaustive documents)."""
    world = make_world(replace(WorldSpec(), n_systems=12, n_pairs=8000, disjoint_pairs=1200),
                       np.random.default_rng(1))
    pop = Population()
    for name, pairs, preds in world.systems:
        pop.add_system(name, pairs, preds, world.subject[pairs])
    rng = np.random.default_rng(seed)
    sampler = _Sampler(world, "instance")
    draws = {world.names[k]: sampler.draw(k, 100, rng) for k in range(len(world.systems))}
    lab = np.unique(np.concatenate(list(draws.values())))
    docs = rng.choice(world.n_docs, 24, replace=False)
    members = _doc_members(world)
    y = np.concatenate([members[d][world.label[members[d]] >= 0] for d in docs])
    exhaustive = (y, world.label[y], world.subject[y], world.doc[y])
    crowd = CrowdLabeller(crowd_spec, world.label, 20, np.random.default_rng([seed, 1]))
    ev = crowd.evidence(pop, draws, lab, *exhaustive)
    return pop, ev, prepare_evidence(pop, draws, lab, world.label[lab], *exhaustive)


def _recall_parts(pop, ev, monkeypatch) -> tuple:
    """Joint recall's interval and the parts `recall_instance` computed it with."""
    parts = []
    original = estimators.recall_instance

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        parts.append(out[1])
        return out

    monkeypatch.setattr(estimators, "recall_instance", spy)
    res = estimate(pop, ev, "instance", ["instance"])
    monkeypatch.undo()
    return res.results["instance"]["recall"]["joint"], parts[0]


def _trial(crowd_spec: CrowdSpec, seed: int, monkeypatch) -> tuple:
    """Joint recall's interval from the crowd's soft labels, the recall parts it was
    computed with, and the interval from the world's own labels on the same draws."""
    pop, ev, hard_ev = _evidence(crowd_spec, seed)
    joint, parts = _recall_parts(pop, ev, monkeypatch)
    hard = estimate(pop, hard_ev, "instance", ["instance"])
    return joint, parts, hard.results["instance"]["recall"]["joint"]


@pytest.mark.parametrize("seed", [0, 1])
def test_no_cap_and_no_widening(monkeypatch, seed: int) -> None:
    """Under a 20% blind-spot crowd P(i right), re-weighted to system i's agreement-group
    prior, exceeds P(pair true) on pairs 3+ systems predict. The cap
    min(1, P(i right)/P(pair true)) took θ·gap > 1e-4 from most systems and moved their
    upper ends up by it (docs/internals/noisy-crowds.md §3). With each system's sums lifting the
    pair's P(true) to its P(i right) there is nothing to cap: the interval is the
    lognormal's, symmetric on the log scale (lo·hi = r̂²), for every system."""
    iv, parts, _ = _trial(CrowdSpec(error_rate=0.2, systematic=True), seed, monkeypatch)
    assert np.abs(parts["cap_gap"]).max() == 0.0
    ok = np.isfinite(iv.estimate) & (iv.lo > 0) & (iv.hi < 1)
    assert ok.sum() >= 10
    np.testing.assert_allclose(iv.lo[ok] * iv.hi[ok], iv.estimate[ok] ** 2, rtol=1e-9)


SEEDS = 4


def test_one_calibration_per_system_keeps_recall_on_the_labels(monkeypatch) -> None:
    """Joint recall from the soft labels, each system's P(pair true) lifted to its
    P(i right) where that is larger (no cap), misses the world's own labels' on the
    same draws by −0.0004 on average over 4 seeds × random and blind-spot 20% error
    (capped: −0.0009; per-trial sd 0.0014, so 3 standard errors of the 8-trial mean are
    0.0015); no trial's interval is widened (the cap's θ·gap was 0.0007 on average)."""
    gaps, errors = [], []
    for systematic in (False, True):
        for seed in range(SEEDS):
            iv, parts, truth = _trial(CrowdSpec(error_rate=0.2, systematic=systematic), seed,
                                      monkeypatch)
            monkeypatch.undo()
            gaps.append(np.abs(parts["cap_gap"]).max())
            errors.append(np.nanmean(iv.estimate - truth.estimate))
    assert max(gaps) == 0.0, gaps
    assert abs(np.mean(errors)) < 0.0025, errors


def test_no_gap_with_a_perfect_crowd(monkeypatch) -> None:
    """An error-free crowd without spammers gives labels certain up to the model's
    rate clipping (1e-6): the joint recall interval is the hard labels'."""
    spec = CrowdSpec(error_rate=0.0, spammer_share=0.0)
    iv, parts, hard = _trial(spec, 0, monkeypatch)
    assert np.abs(parts["cap_gap"]).max() < 1e-6
    np.testing.assert_allclose(iv.hi, hard.hi, atol=1e-5)
    np.testing.assert_allclose(iv.estimate, hard.estimate, atol=1e-5)


def test_the_difference_uses_each_systems_own_recall_residual(monkeypatch) -> None:
    """Comparing two systems linearises ν̂_i with the residual joint recall used,
    e_i = ag_i − ν_i (a + lift_i) over system i's own denominator. With the world's
    labels its draw variance is recall's v_ν; with a 20% blind-spot crowd's soft labels,
    where every system is lifted on some pairs, it is v_ν without the labels' own noise
    (which the reported intervals' scales carry; the linearisation gives only the
    correlation). The CI's SQLite demo found `compare` failing on lifted soft labels:
    the per-system denominators did not broadcast; before, unlifted soft labels took
    t·P(i right)/q for P(i right)/q."""
    pop, soft_ev, hard_ev = _evidence(CrowdSpec(error_rate=0.2, systematic=True), 0)
    m = len(pop)
    for ev in (hard_ev, soft_ev):
        joint, p = _recall_parts(pop, ev, monkeypatch)
        assert np.isfinite(joint.estimate).all()
        if ev is soft_ev:
            lifted = np.asarray((p["lift"] > 0).sum(axis=1)).ravel()
            assert (lifted > 0).sum() >= 2, "no system was lifted: not the case under test"
        for a, b in ((0, 1), (m - 1, 0), (3, 7)):
            lin = _Linear(pop, ev, "instance", "instance", (a, b), 0.9)
            for k, s in enumerate((a, b)):
                v = lin._draw_variance([(1.0, lin.v_theta_nu[k])], [])
                if ev is hard_ev:
                    assert v == pytest.approx(p["v_nu"][s], rel=1e-9), (s, v, p["v_nu"][s])
                else:
                    assert 0.5 * p["v_nu"][s] < v <= p["v_nu"][s], (s, v, p["v_nu"][s])
            diff = compare(pop, ev, a, b, "instance", "instance", 0.9).differences
            for metric in ("precision", "recall", "f1"):
                d = diff[metric]
                assert np.isfinite([d.estimate, d.lo, d.hi, d.paired_sd]).all()
                assert d.lo < d.estimate < d.hi
