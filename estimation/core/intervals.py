"""Confidence intervals. All functions are vectorised over systems."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t


def z_value(confidence: float) -> float:
    """Two-sided normal quantile: 1.645 for a 90% interval."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    return float(norm.ppf(0.5 + confidence / 2))


def t_value(confidence: float, df: np.ndarray | float) -> np.ndarray:
    """Two-sided Student t quantile; infinite degrees of freedom give the normal one."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    df = np.asarray(df, dtype=float)
    q = 0.5 + confidence / 2
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(df) & (df < 1e7)
        return np.where(finite, student_t.ppf(q, np.maximum(df, 1.0)), norm.ppf(q))


def wilson(
    phat: np.ndarray, n: np.ndarray, z: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion estimated from ``n`` (effective) trials.

    ``n`` may be fractional (an effective sample size); n <= 0 gives [0, 1].
    """
    phat = np.clip(np.asarray(phat, dtype=float), 0, 1)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z2n = z * z / n
        center = (phat + z2n / 2) / (1 + z2n)
        half = z * np.sqrt(phat * (1 - phat) / n + z2n / (4 * n)) / (1 + z2n)
    ok = n > 0
    # At p̂ = 0 or 1 the end is exactly 0 or 1; rounding must not cut the estimate off.
    lo = np.where(ok & (phat > 0), np.clip(center - half, 0, 1), 0.0)
    hi = np.where(ok & (phat < 1), np.clip(center + half, 0, 1), 1.0)
    return lo, hi


def normal(est: np.ndarray, var: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    half = z * np.sqrt(np.maximum(var, 0))
    return np.clip(est - half, 0, 1), np.clip(est + half, 0, 1)


def lognormal(
    est: np.ndarray, var: np.ndarray, z: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Interval symmetric on the log scale: est · exp(±z·sd/est).

    Suits small positive quantities such as recall, whose estimators are skewed
    to the right; an estimate of 0 gives [0, 0] here and is handled by callers.
    """
    est = np.asarray(est, dtype=float)
    # An sd many times a tiny estimate overflows k to inf: the interval is then [0, 1].
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        k = np.exp(z * np.sqrt(np.maximum(var, 0)) / est)
        lo = np.where(est > 0, est / k, 0.0)
        hi = np.where(est > 0, est * k, 0.0)
    return np.clip(lo, 0, 1), np.clip(hi, 0, 1)


def f1_score(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    s = p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, 2 * p * r / s, 0.0)


def f1_delta(
    p: np.ndarray,
    p_lo: np.ndarray,
    p_hi: np.ndarray,
    r: np.ndarray,
    r_lo: np.ndarray,
    r_hi: np.ndarray,
    z: float,
    cov: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F1 = 2PR/(P+R) with a delta-method interval.

    The variances of P and R are those implied by their intervals (whatever
    method made them); ``cov`` is their covariance (0 when independent).
    """
    s = p + r
    f1 = f1_score(p, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        dp = np.where(s > 0, 2 * r * r / (s * s), 0.0)
        dr = np.where(s > 0, 2 * p * p / (s * s), 0.0)
    var = (
        dp * dp * var_from_interval(p_lo, p_hi, z)
        + dr * dr * var_from_interval(r_lo, r_hi, z)
        + 2 * dp * dr * cov
    )
    lo, hi = normal(f1, var, z)
    # With P = R = 0 the derivatives vanish; F1 is increasing in both, so bound it
    # by the value at the upper ends instead of reporting a zero-width interval.
    hi = np.where(s > 0, hi, f1_score(np.asarray(p_hi), np.asarray(r_hi)))
    return f1, lo, hi


def var_from_interval(lo: np.ndarray, hi: np.ndarray, z: float) -> np.ndarray:
    """Variance implied by an interval's width, for propagating into F1."""
    return ((np.asarray(hi) - np.asarray(lo)) / (2 * z)) ** 2


# A truth that equals a sure bound (an interval that is exactly [L, L+U]) is computed
# by summing the same masses in another order: it may sit a few ulps outside.
ROUNDING_TOL = 1e-9


def covers(lo: np.ndarray | float, hi: np.ndarray | float, truth: np.ndarray | float,
           tol: float = ROUNDING_TOL) -> np.ndarray:
    """Whether [lo, hi] contains ``truth`` up to rounding (elementwise, broadcast)."""
    lo, hi, truth = np.asarray(lo), np.asarray(hi), np.asarray(truth)
    return (lo <= truth + tol) & (truth - tol <= hi)


# A value this close to a printed grid point (in grid units) is taken to be on it: it
# is a few ulps off a decimal such as 0.5 (no true value with a denominator below
# 10^12 lies that close to the grid without being on it).
_GRID_TOL = 1e-6


def round_down(x: float, decimals: int) -> float:
    """x rounded down to ``decimals`` places (a printed lower end must not exceed x)."""
    scaled = x * 10.0**decimals
    near = round(scaled)
    return (near if abs(scaled - near) < _GRID_TOL else math.floor(scaled)) / 10.0**decimals


def round_up(x: float, decimals: int) -> float:
    """x rounded up to ``decimals`` places (a printed upper end must not fall below x)."""
    scaled = x * 10.0**decimals
    near = round(scaled)
    return (near if abs(scaled - near) < _GRID_TOL else math.ceil(scaled)) / 10.0**decimals


def rounded_outward(lo: float, hi: float, decimals: int = 6) -> tuple[float, float]:
    """An interval's ends for printing: lo down, hi up, so that the printed interval
    still contains every value the exact one does (an exact 1/6 rounded to the
    nearest 6th decimal, [0.166667, 0.166667], would not contain 1/6)."""
    return round_down(lo, decimals), round_up(hi, decimals)
