"""The coverage band and the bias check of tests/stat_checks.py, on known inputs."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.core.intervals import covers
from tests.stat_checks import assert_coverage, assert_unbiased, coverage_band, design_effect


def test_band_for_independent_intervals_is_binomial() -> None:
    hits = np.arange(600) % 10 != 0  # 540 of 600 cover
    rate, lo, hi = coverage_band(hits)
    assert rate == pytest.approx(0.9)
    assert (lo, hi) == pytest.approx((0.9 - 0.0403, 0.9 + 0.0403), abs=5e-4)


def test_band_is_two_sided() -> None:
    assert_coverage("nominal", np.arange(600) % 10 != 0)
    with pytest.raises(AssertionError, match=r"covered 1\.000"):
        assert_coverage("always", np.ones(600, bool))  # e.g. every interval [0, 1]
    with pytest.raises(AssertionError, match=r"covered 0\.833"):
        assert_coverage("too narrow", np.arange(600) % 6 != 0)


def test_correlated_intervals_widen_the_band() -> None:
    rng = np.random.default_rng(0)
    trial_covers = rng.random(300) < 0.9
    together = np.repeat(trial_covers[:, None], 4, axis=1)  # a trial's 4 intervals agree
    assert design_effect(together) == pytest.approx(4, rel=0.01)
    _, lo, hi = coverage_band(together)
    _, lo1, hi1 = coverage_band(trial_covers)
    assert (lo, hi) == pytest.approx((lo1, hi1), rel=1e-3)  # 1200 intervals worth 300
    independent = rng.random((300, 4)) < 0.9
    assert design_effect(independent) < 1.3


def test_bias_check_catches_a_shift_and_passes_noise() -> None:
    rng = np.random.default_rng(1)
    noise = 0.3 + 0.05 * rng.standard_normal(400)
    assert_unbiased({"noise": (noise, 0.3)})
    with pytest.raises(AssertionError, match="halved"):
        assert_unbiased({"ok": (noise, 0.3), "halved": (noise / 2, 0.3)})
    with pytest.raises(AssertionError, match="constant"):  # no spread, still off
        assert_unbiased({"constant": (np.full(50, 0.31), 0.3)})
    with pytest.raises(AssertionError, match="only 1 estimates"):
        assert_unbiased({"undefined": ([np.nan, np.nan, 0.3], 0.3)})


def test_covers_forgives_rounding_only() -> None:
    # An interval that is exactly the sure bounds [L, L+U]: the truth summed in another
    # order lands an ulp outside and still counts; a real miss of 1e-6 does not.
    masses = np.array([0.1, 0.2, 0.3])
    hi = masses.sum()
    truth = masses[::-1].sum()
    assert truth != hi
    assert covers(0.0, hi, truth) and covers(truth, 1.0, hi)
    assert not covers(0.0, hi, hi + 1e-6) and not covers(hi + 1e-6, 1.0, hi)
    assert covers(np.array([0.0, 0.5]), np.array([0.5, 0.6]), 0.45).tolist() == [True, False]
