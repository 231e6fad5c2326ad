"""The paired difference's precision terms are the reported estimate's: the ratio's
linearised terms (r − π̂ z)/mass, not the plain sum's r (docs/internals/crowd-bias.md
§1), so its variances are the estimator's own and its correlations follow from them."""

from __future__ import annotations

import numpy as np

from estimation.core import intervals as ci
from estimation.core.difference import _Linear
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
