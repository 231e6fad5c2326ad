"""Statistics core of KBPO: numpy/scipy only, no Django (see docs/internals/estimation.md)."""

from .adaptive import plan_sample_size, worst_case_variance
from .estimators import (
    NO_RELATION,
    Estimates,
    Evidence,
    Interval,
    LabelBounds,
    estimate,
    label_bounds,
    mixing_weights,
    prepare_evidence,
)
from .population import Population
from .schemes import SCHEMES, sample_draws, scheme_weights

__all__ = [
    "NO_RELATION",
    "SCHEMES",
    "Estimates",
    "Evidence",
    "Interval",
    "LabelBounds",
    "Population",
    "estimate",
    "label_bounds",
    "mixing_weights",
    "plan_sample_size",
    "prepare_evidence",
    "sample_draws",
    "scheme_weights",
    "worst_case_variance",
]
