"""Joint recall's interval covers both ways of reconciling P(i right) with P(pair true),
and the pair's prior leans to the predicted relations so that the two rarely differ."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from estimation.core import Population, estimate, estimators, prepare_evidence
from estimation.validation.battery import _doc_members, _Sampler
from estimation.validation.crowd import CrowdLabeller, CrowdSpec
from estimation.validation.worlds import WorldSpec, make_world


def _trial(crowd_spec: CrowdSpec, seed: int, monkeypatch) -> tuple:
    """One small battery trial (12 systems, 100 draws each, 24 exhaustive documents):
    joint recall's interval and the recall parts it was computed with."""
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
    seen = []
    original = estimators.recall_instance

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        seen.append(out[1])
        return out

    monkeypatch.setattr(estimators, "recall_instance", spy)
    res = estimate(pop, ev, "instance", ["instance"])
    hard = estimate(pop, prepare_evidence(pop, draws, lab, world.label[lab], *exhaustive),
                    "instance", ["instance"])
    return res.results["instance"]["recall"]["joint"], seen[0], \
        hard.results["instance"]["recall"]["joint"]


@pytest.mark.parametrize("seed", [0, 1])
def test_upper_end_moves_by_what_the_cap_took(monkeypatch, seed: int) -> None:
    """Under a 20% blind-spot crowd the cap min(P(i right), P(pair true)) takes mass
    from most systems' ν̂ (the battery's crowd20_sys: the bulk of joint recall's bias
    was this, docs/noisy-crowds.md §3); the interval's upper end then lies at least
    that far (θ × the gap) beyond the lognormal interval's own upper half-width, which
    is at least its lower one."""
    iv, parts, _ = _trial(CrowdSpec(error_rate=0.2, systematic=True), seed, monkeypatch)
    gap = parts["cap_gap"]
    assert (gap >= 0).all() and (gap > 1e-4).sum() >= 6, gap
    ok = np.isfinite(iv.estimate) & (iv.hi < 1)
    upper, lower = iv.hi[ok] - iv.estimate[ok], iv.estimate[ok] - iv.lo[ok]
    assert (upper >= lower + gap[ok] - 1e-12).all()


SEEDS = 4


def test_pair_prior_on_predicted_relations_leaves_the_cap_little(monkeypatch) -> None:
    """P(pair true) whose true class leans to the relations systems predict
    (recall.predicted_true_share) agrees with P(i right): over 4 seeds × random and
    blind-spot 20% error (8 trials) the cap takes θ·gap 0.0007 on average (largest
    trial 0.0010) where the crowd's relation shares made it take 0.0031 (smallest trial
    0.0018), and joint recall from the soft labels misses the world's own labels' on the
    same draws by −0.0009 on average (−0.0048 before; per-trial sd 0.0014, so 3 standard
    errors of the 8-trial mean are 0.0015)."""
    gaps, errors = [], []
    for systematic in (False, True):
        for seed in range(SEEDS):
            iv, parts, truth = _trial(CrowdSpec(error_rate=0.2, systematic=systematic), seed,
                                      monkeypatch)
            monkeypatch.undo()
            gaps.append(parts["cap_gap"].mean())
            errors.append(np.nanmean(iv.estimate - truth.estimate))
    assert np.mean(gaps) < 0.0015, gaps
    assert abs(np.mean(errors)) < 0.0025, errors


def test_no_gap_with_a_perfect_crowd(monkeypatch) -> None:
    """An error-free crowd without spammers gives labels certain up to the model's
    rate clipping (1e-6): the cap takes nothing beyond rounding and the joint recall
    interval is the hard labels' (with a perfect crowd the results equal today's)."""
    spec = CrowdSpec(error_rate=0.0, spammer_share=0.0)
    iv, parts, hard = _trial(spec, 0, monkeypatch)
    assert np.abs(parts["cap_gap"]).max() < 1e-6
    np.testing.assert_allclose(iv.hi, hard.hi, atol=1e-5)
    np.testing.assert_allclose(iv.estimate, hard.estimate, atol=1e-5)
