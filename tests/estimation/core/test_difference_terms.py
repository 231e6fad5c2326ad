"""The paired difference's precision terms are the reported estimate's: the ratio's
linearised terms (r − π̂ z)/mass, not the plain sum's r (docs/internals/crowd-bias.md
§1), so its variances are the estimator's own and its correlations follow from them."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.core import intervals as ci
from estimation.core.difference import _Linear, compare, with_correction
from estimation.core.importance import at_pairs
from estimation.core.precision import LabelState, precision
from estimation.simulate import draw_evidence, make_world


def test_the_difference_linearises_the_ratio_the_board_reports() -> None:
    rng = np.random.default_rng(3)
    world = make_world(rng, n_systems=6, n_pairs=2000, disjoint_pairs=200)
    pop = world.population()
    probs = [s.probs("instance") for s in pop._systems]
    ev, _ = draw_evidence(world, pop, rng, np.full(len(pop), 120), 200, "instance", probs)
    pf, _ = at_pairs(pop, ev, "instance")
    _, joint, _ = precision(pop, ev, "instance", "instance", pf, ci.z_value(0.9),
                            "wilson_design", LabelState(pop, ev))
    eye = np.eye(4)
    for a, b in ((0, 1), (2, 3)):
        lin = _Linear(pop, ev, "instance", "instance", (a, b), 0.9)
        for k, s in ((0, a), (2, b)):
            v = lin.variance(eye[k])
            # The ratio's linearised variance, which the reported interval is built on;
            # the plain sum's (what the difference used before) differs by 1–9% here.
            assert v == np.float64(joint.ratio_variance[s]) or \
                abs(v / joint.ratio_variance[s] - 1) < 1e-9, (s, v, joint.ratio_variance[s])
            assert abs(joint.variance[s] / joint.ratio_variance[s] - 1) > 1e-3


def test_the_correction_widens_the_difference_by_its_own_variance() -> None:
    """The board widens each system's interval by the correction's replicates; the
    difference is widened by the replicates' variance of A − B: none when every
    replicate moves both systems alike, √(h² + z² v) each side when they move apart."""
    rng = np.random.default_rng(5)
    world = make_world(rng, n_systems=4, n_pairs=1000, disjoint_pairs=100)
    pop = world.population()
    probs = [s.probs("instance") for s in pop._systems]
    ev, _ = draw_evidence(world, pop, rng, np.full(len(pop), 100), 150, "instance", probs)
    base = compare(pop, ev, 0, 1, "instance", "instance", 0.9)
    shifts = np.array([-0.02, 0.01, 0.03, -0.01, 0.0, -0.01])

    def reps(sign_b: float) -> list[dict]:
        out = []
        for s in shifts:
            est = {}
            for m in ("precision", "recall", "f1"):
                v = np.full(len(pop), 0.5)
                v[0], v[1] = 0.5 + s, 0.5 + sign_b * s
                est[("instance", m, "joint")] = v
            out.append(est)
        return out

    alike = with_correction(base, reps(1.0))
    apart = with_correction(base, reps(-1.0))
    z = ci.z_value(0.9)
    v = np.var(2 * shifts, ddof=1)
    for m, d in base.differences.items():
        same = alike.differences[m]  # alike: the difference does not move
        assert (same.lo, same.hi, same.paired_sd) == (d.lo, d.hi, d.paired_sd)
        # (each system's own interval widens: so does the independent-estimates sd)
        assert same.separate_sd > d.separate_sd
        w = apart.differences[m]
        assert w.estimate == d.estimate
        assert w.lo == pytest.approx(max(d.estimate - np.sqrt((d.estimate - d.lo) ** 2
                                                               + z * z * v), -1.0))
        assert w.hi == pytest.approx(min(d.estimate + np.sqrt((d.hi - d.estimate) ** 2
                                                               + z * z * v), 1.0))
        assert w.hi - w.lo > d.hi - d.lo + 0.01
        assert w.paired_sd == pytest.approx(np.sqrt(d.paired_sd ** 2 + v))
    assert with_correction(base, reps(-1.0)[:1]) is base  # one replicate: no variance
