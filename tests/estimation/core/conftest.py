"""A small synthetic shared task with known truth, simulated once per session."""

import numpy as np
import pytest

from estimation.simulate import make_world, run_fixed

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
