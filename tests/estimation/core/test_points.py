"""The lean point estimates (estimation/core/points.py) are `estimate`'s, to rounding.

Worlds with systems without draws of their own (estimates borrowed, or none), several
schemes, hard labels, soft labels with priors and the systems' own priors.
"""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import estimation.core.products as products
from estimation.core import Population, estimate, prepare_evidence
from estimation.core.evidence import AGREE_GROUPS, agreement_groups
from estimation.core.noise import (
    correction_variance,
    from_posterior,
    self_consistent,
    with_soft_labels,
)
from estimation.core.points import (
    GROUP_STRENGTH,
    PRIOR_FLOOR,
    PointPlan,
    _at_entries,
    consistent,
)
from estimation.core.precision import RowSums
from estimation.validation.worlds import WorldSpec, make_world

CATS = list(range(-1, 20))
SCHEMES = ["instance", "predicate", "entity", "entity_relation"]


@pytest.fixture(scope="module", params=["instance", "entity_relation"])
def task(request):
    spec = WorldSpec(n_systems=12, n_pairs=5_000, disjoint_pairs=800)
    world = make_world(spec, np.random.default_rng(7))
    pop = Population()
    for name, pairs, preds in world.systems:
        pop.add_system(name, pairs, preds, world.subject[pairs])
    rng = np.random.default_rng(3)
    # Two systems without draws: one estimate borrowed from the others' draws, or none.
    draws = {n: p[rng.choice(len(p), 60)] for n, p, _ in world.systems[2:]}
    lab = np.unique(np.concatenate(list(draws.values())))
    lab = np.concatenate([lab, rng.choice(len(world.label), 300)])  # undrawn labels too
    lab = np.unique(lab)
    y = np.flatnonzero(world.label >= 0)[:200]
    ev = prepare_evidence(pop, draws, lab, world.label[lab],
                          y, world.label[y], world.subject[y], world.doc[y])
    return world, pop, ev, lab, request.param


def _noisy(world, lab, seed):
    """A posterior that puts most of its mass on the truth, the rest spread at random."""
    rng = np.random.default_rng(seed)
    post = rng.dirichlet(np.full(len(CATS), 0.3), len(lab)) * 0.4
    post[np.arange(len(lab)), world.label[lab] + 1] += 0.6
    priors = rng.dirichlet(np.full(len(CATS), 2.0))
    return from_posterior(lab, CATS, post, priors)


def _check(pop, ev, draw_scheme, plan, confidence=0.9):
    full = estimate(pop, ev, draw_scheme, SCHEMES, confidence)
    lean = plan.estimates(ev, SCHEMES, confidence)
    assert len(lean) == 4 * 3 * 2
    for (s, metric, kind), got in lean.items():
        want = full.results[s][metric][kind].estimate
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{s} {metric}")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"{s} {metric} {kind}")
    return full


def test_hard_labels(task):
    _, pop, ev, _, draw_scheme = task
    plan = PointPlan(pop, ev, draw_scheme)
    full = _check(pop, ev, draw_scheme, plan)
    # The world has what the masks are for: a borrowed estimate and a missing one.
    est = full.results[draw_scheme]["precision"]["joint"].estimate
    assert np.isnan(est[:2]).sum() >= 1 and np.isnan(est).sum() < len(est)


def test_soft_labels_and_replicates_share_one_plan(task):
    world, pop, ev, lab, draw_scheme = task
    plan = PointPlan(pop, with_soft_labels(pop, ev, _noisy(world, lab, 0)), draw_scheme)
    _check(pop, ev, draw_scheme, plan)  # a plan made on soft labels serves hard ones
    for seed in (1, 2, 3):
        soft = with_soft_labels(pop, ev, _noisy(world, lab, seed))
        _check(pop, soft, draw_scheme, plan)
        own = self_consistent(pop, soft, draw_scheme)
        assert own.system_prior is not None and np.isfinite(own.system_prior).sum() >= 8
        _check(pop, own, draw_scheme, plan, confidence=0.8)


def _full_self_consistent(pop, ev, draw_scheme, rounds=4, start=None):
    """The fixed point as it was computed before points.py: full estimates (the
    agreement groups' priors around each round's precision from the plan)."""
    keys, groups = agreement_groups(pop)
    ev = replace(ev, agree_keys=keys, agree_group=groups)
    plan = PointPlan(pop, ev, draw_scheme)
    prior = np.full(len(pop), np.nan) if start is None else np.asarray(start, float)
    group = None if start is None else plan.group_priors(ev, prior)
    for _ in range(rounds):
        cur = replace(ev, system_prior=prior, group_prior=group)
        res = estimate(pop, cur, draw_scheme, ["instance"])
        new = np.clip(res.results["instance"]["precision"]["joint"].estimate, 1e-3, 1 - 1e-3)
        if np.allclose(np.nan_to_num(new, nan=-1), np.nan_to_num(prior, nan=-1), atol=1e-4):
            break
        prior = new
        group = plan.group_priors(ev, prior)
    return prior


def test_consistent_is_the_full_fixed_point(task):
    world, pop, ev, lab, draw_scheme = task
    soft = with_soft_labels(pop, ev, _noisy(world, lab, 5))
    plan = PointPlan(pop, soft, draw_scheme)
    want = _full_self_consistent(pop, soft, draw_scheme)
    np.testing.assert_allclose(consistent(plan, soft).system_prior, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(self_consistent(pop, soft, draw_scheme).system_prior, want,
                               rtol=0, atol=1e-12)
    start = np.clip(want + 0.05, 0, 1)
    one = _full_self_consistent(pop, soft, draw_scheme, rounds=1, start=start)
    np.testing.assert_allclose(consistent(plan, soft, 1, start).system_prior, one,
                               rtol=0, atol=1e-12)
    assert np.nanmax(np.abs(one - start)) > 1e-3  # the round moved it


def _em_group_priors(plan, ev, prior, tol=1e-14, max_rounds=200_000):
    """The agreement groups' priors by plain EM rounds (each group's mean P(right)
    re-weighted to its prior, shrunk to the system's), run until they stop moving."""
    m, cells = plan.m, plan._cells
    goal = np.repeat(np.asarray(prior, float), AGREE_GROUPS)
    ok = np.isfinite(goal)
    goal = np.where(ok, goal, 0.5)
    size = np.bincount(cells, minlength=m * AGREE_GROUPS)
    pi = goal.copy()
    for _ in range(max_rounds):
        right = plan.right(replace(ev, system_prior=goal[::AGREE_GROUPS],
                                   group_prior=pi.reshape(m, AGREE_GROUPS)))
        new = (np.bincount(cells, weights=right, minlength=m * AGREE_GROUPS)
               + GROUP_STRENGTH * goal) / (size + GROUP_STRENGTH)
        new = np.clip(new, PRIOR_FLOOR, 1 - PRIOR_FLOOR)
        if np.abs(new - pi).max() < tol:
            break
        pi = new
    else:
        raise AssertionError("EM did not settle")
    return np.where(ok, new, np.nan).reshape(m, AGREE_GROUPS)


def test_group_priors_are_ems_fixed_point(task):
    """Solved directly, the groups' priors are where plain EM ends up, wherever the search
    starts, including shares EM approaches slowly (near the floor) and ones clipped there."""
    world, pop, ev, lab, draw_scheme = task
    keys, groups = agreement_groups(pop)
    soft = replace(with_soft_labels(pop, ev, _noisy(world, lab, 8)), agree_keys=keys,
                   agree_group=groups)
    plan = PointPlan(pop, soft, draw_scheme)
    fixed = consistent(plan, soft).system_prior
    for prior in (fixed, np.full(len(pop), 0.01), np.full(len(pop), 1e-3)):
        prior = prior.copy()
        prior[0] = np.nan  # a system without a prior has none in its groups either
        want = _em_group_priors(plan, soft, prior)
        got = plan.group_priors(soft, prior)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
        guess = np.clip(np.nan_to_num(want, nan=0.5) + 0.3, 0, 1)
        np.testing.assert_allclose(plan.group_priors(soft, prior, guess=guess), got,
                                   rtol=0, atol=1e-10)
    assert (want[1:] == PRIOR_FLOOR).any() and (want[1:] > PRIOR_FLOOR).any()


def test_right_is_reprior_lr_to_the_bit(task):
    """`right` reprices P(right) with the systems' priors in fewer passes than
    Evidence.correct's reprior_lr: the same floats, including a system without a prior
    and soft labels at exactly 0 and 1 (kept as they are)."""
    world, pop, ev, lab, draw_scheme = task
    soft = with_soft_labels(pop, ev, _noisy(world, lab, 6))
    probs = soft.soft_probs.copy()
    probs[::7], probs[3::11] = 0.0, 1.0
    soft = replace(soft, soft_probs=probs)
    plan = PointPlan(pop, soft, draw_scheme)
    inst = pop.instances()
    judged = plan.state.judged
    prior = np.random.default_rng(1).uniform(0.05, 0.95, len(pop))
    prior[2] = np.nan
    for sp_ in (None, prior):
        cur = replace(soft, system_prior=sp_)
        want = cur.correct(inst["pairs"][judged], inst["predicates"][judged],
                           inst["system"][judged])
        got = plan.right(cur)
        np.testing.assert_array_equal(got, want)
    assert ((got > 0) & (got < 1)).any() and (got == 1).any() and (got == 0).any()


@pytest.mark.parametrize("few", [0, 8])
def test_product_at_entries_is_the_dense_one_to_the_bit(few, monkeypatch):
    """(w·x)[rows, cols] at repeated entries, in blocks of a few pairs, entry by entry
    (pairs of at most `few` systems) or densely: the floats of the whole dense product."""
    monkeypatch.setattr(products, "_FEW_SYSTEMS", few)
    monkeypatch.setattr(products, "BLOCK_BYTES", 8 * 7 * 3)
    rng = np.random.default_rng(2)
    x = sp.random(7, 50, density=0.3, random_state=3, format="csr")
    w = rng.random((7, 7))
    w[:, 4] = 0.0  # a system no weight uses
    rows, cols = rng.integers(0, 7, 200), rng.integers(0, 50, 200)
    got = _at_entries(rows, cols, x.shape, x, w)
    assert np.array_equal(got, np.asarray(x.T.tocsr() @ w.T)[cols, rows])  # whole product


@pytest.mark.parametrize("sorted_rows", [True, False])
def test_row_sums_are_bincounts_to_the_bit(sorted_rows):
    """RowSums's matvec adds each row's terms in the same order as np.bincount."""
    rng = np.random.default_rng(4)
    rows = rng.integers(0, 9, 5_000)
    if sorted_rows:
        rows = np.sort(rows)
    cols = rng.integers(0, 700, 5_000)  # repeated columns too
    data, x = rng.random(5_000), rng.random(700)
    sums = RowSums(rows, 10, cols, 700)
    want = np.bincount(rows, weights=data * x[cols], minlength=10)
    np.testing.assert_array_equal(sums.matrix(data) @ x, want)
    np.testing.assert_array_equal(sums.matrix() @ x, np.bincount(rows, weights=x[cols],
                                                                 minlength=10))


def test_the_fixed_points_plan_gives_the_replicates_variance(task):
    """recompute reuses the plan its systems' priors were fixed with (made on the soft
    evidence before the fixed point) for the replicates: the same variance, to the bit,
    as a plan made on the fixed evidence."""
    world, pop, ev, lab, draw_scheme = task
    soft = with_soft_labels(pop, ev, _noisy(world, lab, 7))
    early = PointPlan(pop, soft, draw_scheme)
    fixed = self_consistent(pop, soft, draw_scheme, plan=early)
    reps = [_noisy(world, lab, seed) for seed in (8, 9, 10)]
    got = correction_variance(pop, fixed, reps, draw_scheme, SCHEMES, 0.9, early)
    want = correction_variance(pop, fixed, reps, draw_scheme, SCHEMES, 0.9,
                               PointPlan(pop, fixed, draw_scheme))
    assert got.keys() == want.keys() and len(got) == 24
    for key, v in want.items():
        np.testing.assert_array_equal(got[key], v, err_msg=str(key))
    assert any(np.nanmax(v) > 0 for v in want.values())


def test_the_full_estimate_on_the_plans_state_gives_the_same_floats(task):
    """recompute hands the plan's LabelState, with the plan's verdicts, to the full
    estimate (and its pair terms and label variances read those verdicts): every
    estimate and interval end is the float the estimate gives with its own state."""
    world, pop, ev, lab, draw_scheme = task
    soft = with_soft_labels(pop, ev, _noisy(world, lab, 7))
    plan = PointPlan(pop, soft, draw_scheme)
    fixed = self_consistent(pop, soft, draw_scheme, plan=plan)
    assert fixed.system_prior is not None and np.isfinite(fixed.system_prior).any()
    hard_plan = PointPlan(pop, ev, draw_scheme)
    for evidence, p in ((fixed, plan), (ev, hard_plan)):
        state = p.state.for_evidence(evidence, p.right(evidence))
        got = estimate(pop, evidence, draw_scheme, SCHEMES, 0.9, state=state)
        want = estimate(pop, evidence, draw_scheme, SCHEMES, 0.9)
        for s in SCHEMES:
            for metric in ("precision", "recall", "f1"):
                for kind in ("simple", "joint"):
                    g, w = got.results[s][metric][kind], want.results[s][metric][kind]
                    for part in ("estimate", "lo", "hi"):
                        np.testing.assert_array_equal(getattr(g, part), getattr(w, part),
                                                      err_msg=f"{s} {metric} {kind} {part}")
        assert state.cache and not p.state.cache  # the plan's own state is left alone
