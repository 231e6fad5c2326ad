"""A small synthetic shared task with known truth, simulated once per session."""

import numpy as np
import pytest

from estimation.core import Population, prepare_evidence
from estimation.simulate import make_world, run_fixed
from estimation.validation.worlds import WorldSpec
from estimation.validation.worlds import make_world as make_spec_world

TRIALS = 400  # coverage standard error sqrt(0.09/400) = 0.015


@pytest.fixture(scope="session")
def world():
    return make_world(
        np.random.default_rng(11), n_systems=12, n_pairs=8000, disjoint_pairs=1200
    )


@pytest.fixture(scope="session")
def fixed_instance(world):
    return run_fixed(world, TRIALS, seed=5, n_per_system=100, n0=150, progress=False)


@pytest.fixture(scope="session")
def fixed_entity_relation(world):
    return run_fixed(
        world,
        TRIALS,
        seed=6,
        n_per_system=100,
        n0=150,
        draw_scheme="entity_relation",
        progress=False,
    )


def soft_label_task(n_systems: int, n_pairs: int, disjoint_pairs: int, world_seed: int,
                    draw_seed: int, draws: int, exhaustive: int) -> tuple:
    """(world, population, evidence, labelled pairs) of a small world: ``draws`` draws
    per system labelled by the truth, the first ``exhaustive`` true pairs as the
    exhaustive sample; for the soft-label tests to put crowd posteriors on."""
    spec = WorldSpec(n_systems=n_systems, n_pairs=n_pairs, disjoint_pairs=disjoint_pairs)
    world = make_spec_world(spec, np.random.default_rng(world_seed))
    pop = Population()
    for name, pairs, preds in world.systems:
        pop.add_system(name, pairs, preds, world.subject[pairs])
    rng = np.random.default_rng(draw_seed)
    drawn = {n: p[rng.choice(len(p), draws)] for n, p, _ in world.systems}
    lab = np.unique(np.concatenate(list(drawn.values())))
    y = np.flatnonzero(world.label >= 0)[:exhaustive]
    ev = prepare_evidence(pop, drawn, lab, world.label[lab],
                          y, world.label[y], world.subject[y], world.doc[y])
    return world, pop, ev, lab
