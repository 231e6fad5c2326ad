"""Validation battery: synthetic worlds with exact truth, run through the real
planner and estimators (``python -m estimation validate``; docs/internals/estimation.md §10)."""

from .battery import (
    SCENARIOS,
    Run,
    Scenario,
    format_table,
    passed,
    run_scenario,
    scenario,
    summarise,
    verdict,
)
from .noisy import NOISY, OPEN, UNCORRECTED
from .worlds import World, WorldSpec, make_world

SCENARIOS.update(NOISY)  # noisy-crowd scenarios live in their own module

__all__ = [
    "NOISY",
    "OPEN",
    "SCENARIOS",
    "UNCORRECTED",
    "Run",
    "Scenario",
    "World",
    "WorldSpec",
    "format_table",
    "make_world",
    "passed",
    "run_scenario",
    "scenario",
    "summarise",
    "verdict",
]
