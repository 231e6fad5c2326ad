"""Two-sided coverage bands and bias checks for the statistical tests.

Both take results of repeated, independent trials (rows). A trial may count several
intervals (one per system, say) that share its draws and exhaustive sample: those are
correlated, so the trial — not the interval — is the independent unit, and the standard
errors below come from the spread between trials.

Coverage. Under the hypothesis that the intervals cover at the nominal rate c = 0.9,
the pooled rate over N = T·S intervals has variance c(1−c)/N · deff. deff, the design
effect of the trials, is 1 when each trial counts one interval; when a trial's S
intervals are positively correlated it is larger, and it is estimated as the ratio of
the between-trial variance of the per-trial rates (s_y²/T) to the binomial variance at
the observed rate, floored at 1. The band is c ± z·sqrt(c(1−c)/N · deff), z = 3.29
(two-sided false alarm 0.001): for one interval per trial and N = 600 that is
0.9 ± 0.040. A rate above the band fails as surely as one below it: intervals that
always cover (say, [0, 1]) are as wrong as intervals that are too narrow.

Bias. The mean estimate of a system over T trials has standard error s/√T (s: the
spread of its estimates). It fails when |mean − truth| > z_K·s/√T + slack, with z_K the
Bonferroni-corrected two-sided 0.001 quantile over the K checks of the call, and
`slack` the bias the estimators are allowed to have (self-normalised and ratio
estimators have an O(1/n) bias; the target is |bias| ≤ 0.005).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import norm

NOMINAL = 0.9
FALSE_ALARM = 0.001
BIAS_SLACK = 0.005


def coverage_band(hits: np.ndarray, nominal: float = NOMINAL,
                  false_alarm: float = FALSE_ALARM) -> tuple[float, float, float]:
    """(rate, lo, hi) for a (trials × intervals-per-trial) boolean matrix of hits."""
    hits = np.asarray(hits, dtype=float)
    if hits.ndim == 1:
        hits = hits[:, None]
    trials = hits.shape[0]
    if trials < 2:
        raise ValueError("need at least two independent trials")
    z = norm.ppf(1 - false_alarm / 2)
    rate = float(hits.mean())
    deff = design_effect(hits)
    half = z * math.sqrt(nominal * (1 - nominal) / hits.size * deff)
    return rate, nominal - half, nominal + half


def design_effect(hits: np.ndarray) -> float:
    """Variance of the pooled rate between trials over its binomial value, at least 1."""
    hits = np.asarray(hits, dtype=float)
    if hits.ndim == 1:
        return 1.0
    rate = hits.mean()
    binomial = rate * (1 - rate) / hits.size
    between = float(np.var(hits.mean(axis=1), ddof=1)) / hits.shape[0]
    return max(1.0, between / binomial) if binomial > 0 else 1.0


def assert_coverage(name: str, hits: np.ndarray, nominal: float = NOMINAL) -> float:
    """Fail unless the coverage rate lies inside the two-sided band; returns the rate."""
    rate, lo, hi = coverage_band(hits, nominal)
    n = np.asarray(hits).size
    print(f"coverage {name}: {rate:.3f} of {n} intervals (band {lo:.3f}–{hi:.3f}, "
          f"design effect {design_effect(hits):.2f})")
    assert lo <= rate <= hi, (
        f"{name}: a nominal {nominal:.0%} interval covered {rate:.3f} of {n} times, "
        f"outside {lo:.3f}–{hi:.3f}")
    return rate


def assert_unbiased(checks: Mapping[str, tuple[Sequence[float], float]],
                    slack: float = BIAS_SLACK, false_alarm: float = FALSE_ALARM) -> None:
    """checks: name -> (estimates over independent trials, NaN = none; exact truth)."""
    z = norm.ppf(1 - false_alarm / (2 * max(len(checks), 1)))
    failures = []
    for name, (values, truth) in checks.items():
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        if len(v) < 2:
            failures.append(f"{name}: only {len(v)} estimates")
            continue
        bias = float(v.mean()) - truth
        tol = z * float(v.std(ddof=1)) / math.sqrt(len(v)) + slack
        print(f"bias {name}: {bias:+.4f} over {len(v)} trials (truth {truth:.4f}, "
              f"tolerance {tol:.4f})")
        if abs(bias) > tol:
            failures.append(f"{name}: mean {v.mean():.4f} vs truth {truth:.4f} "
                            f"(bias {bias:+.4f}, tolerance {tol:.4f})")
    assert not failures, "biased estimates: " + "; ".join(failures)
