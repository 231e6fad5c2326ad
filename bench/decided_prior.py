"""The agreement groups' priors fitted only from pairs the answers decide: the variant of
the system-prior step measured in docs/internals/crowd-bias.md §15 (not shipped).

Shipped (`points.consistent`): per system and agreement group, the share at which the
group's judged instances, re-weighted to it, average to it, shrunk towards the system's
precision, iterated with that precision to a fixed point. Every undecided instance moves
with the prior, so likelihood ratios inflated on them (the yes-biased crowd's false
attractive pairs, §12–§13) raise the prior that raises them.

Here (`decided_consistent`): only judged instances whose crowd P(right) — at the crowd's
prior, before any system's — is at most DECIDED or at least 1 − DECIDED count, each at
that P (a hard verdict counts as decided). With k = GROUP_STRENGTH pseudo-instances,

    d_s     = (Σ_{j ∈ s, decided} p_j + k·c_s) / (n_s + k)
    π_{s,g} = (Σ_{j ∈ (s,g), decided} p_j + k·d_s) / (n_{s,g} + k)

where c_s is the mean prior the crowd used on system s's soft instances (its fallback
when nothing is decided); clipped to [PRIOR_FLOOR, 1 − PRIOR_FLOOR]. No fixed point: the
priors do not depend on the P(right) they give. The system's prior is then its joint
precision under them. DECIDED = 0.1: a pair the answers alone leave at most 10% in doubt;
on `test_agreement_prior`'s world with exact ratios (workers at 0.8, five answers) a true
and a false pair are then decided equally often, so the decided share is the true share;
at 0.02 they are not (the crowd's prior makes "surely true" harder to reach) and the
share reads 0.02 low.

`use(fit)` switches `noise.self_consistent` (every caller's route to the fixed point:
the service's data loading, the CLI, the battery) between "fixed_point" and "decided".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from estimation.core import noise
from estimation.core.evidence import AGREE_GROUPS, Evidence, agreement_groups
from estimation.core.points import GROUP_STRENGTH, PRIOR_FLOOR, PointPlan

DECIDED = 0.1
SHIPPED = noise.consistent


def decided_shares(systems: np.ndarray, groups: np.ndarray, prob: np.ndarray,
                   decided: np.ndarray, goal: np.ndarray, strength: float,
                   floor: float) -> np.ndarray:
    """(m × AGREE_GROUPS) π of the module docstring; ``systems``, ``groups``, ``prob``,
    ``decided`` per judged instance, ``goal`` (m,) the fallback c_s."""
    m = len(goal)
    at = systems[decided].astype(np.int64) * AGREE_GROUPS + groups[decided]
    size = np.bincount(at, minlength=m * AGREE_GROUPS).reshape(m, AGREE_GROUPS)
    mass = np.bincount(at, weights=prob[decided],
                       minlength=m * AGREE_GROUPS).reshape(m, AGREE_GROUPS)
    row = (mass.sum(axis=1) + strength * goal) / (size.sum(axis=1) + strength)
    return np.clip((mass + strength * row[:, None]) / (size + strength), floor, 1 - floor)


def decided_priors(plan: PointPlan, ev: Evidence, threshold: float | None = None) -> np.ndarray:
    """The decided priors of ``plan``'s judged instances under ``ev``'s soft labels."""
    threshold = DECIDED if threshold is None else threshold
    plan.right(replace(ev, system_prior=None))  # sets plan._base: P at the crowd's prior
    base, live = plan._base
    decided = (base <= threshold) | (base >= 1 - threshold)
    # The prior each instance's crowd posterior was computed with (divided out by the
    # re-weighting), by its distinct key.
    keys = plan._ukeys
    pos = np.minimum(np.searchsorted(ev.soft_keys, keys), max(len(ev.soft_keys) - 1, 0))
    found = ev.soft_keys[pos] == keys if len(ev.soft_keys) else np.zeros(len(keys), bool)
    used = np.where(found, ev.reweight_prior(pos, found), np.nan)[plan._uinv]
    ok = live & np.isfinite(used)
    n = np.bincount(plan.j_sys[ok], minlength=plan.m)
    goal = np.where(n > 0, np.bincount(plan.j_sys[ok], weights=used[ok], minlength=plan.m)
                    / np.maximum(n, 1), 0.5)
    return decided_shares(plan.j_sys, plan.j_group, base, decided, goal, GROUP_STRENGTH,
                          PRIOR_FLOOR)


def decided_consistent(plan: PointPlan, ev: Evidence, rounds: int = 4,
                       start: np.ndarray | None = None, confidence: float = 0.9,
                       start_group: np.ndarray | None = None) -> Evidence:
    """`points.consistent`'s signature and result fields, the priors fitted as above
    (``rounds``, ``start``, ``start_group`` unused: nothing to iterate)."""
    if ev.true_prob is None or ev.soft_prior is None or plan.m == 0:
        return ev
    keys, groups = agreement_groups(plan.pop)
    ev = replace(ev, agree_keys=keys, agree_group=groups)
    group = decided_priors(plan, ev)
    # `right` takes the groups' priors once any system prior is set.
    at = replace(ev, system_prior=np.full(plan.m, 0.5), group_prior=group)
    prior = np.clip(plan.joint_precision(at, confidence=confidence), PRIOR_FLOOR,
                    1 - PRIOR_FLOOR)
    return replace(ev, system_prior=prior, group_prior=group)


def set_fit(fit: str) -> None:
    """Route `noise.self_consistent` to the shipped fixed point or the decided fit."""
    noise.consistent = {"fixed_point": SHIPPED, "decided": decided_consistent}[fit]


@contextmanager
def use(fit: str) -> Iterator[None]:
    set_fit(fit)
    try:
        yield
    finally:
        noise.consistent = SHIPPED

