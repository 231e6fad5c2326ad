"""Statistical checks of joint recall and F1 with the distinct-pairs HT ν̂ (seeded).

A small world of 400 pairs in 80 documents of 5; 40% of the pairs are true, a tenth of
those with two relations (a system names at most one). Five systems draw: two that
overlap, a near-duplicate of the first, one disjoint from the others, a 6-pair copy;
a sixth has no draws and 20 pairs no drawing system predicts (its recall needs ρ).
Ŷ0 is 30 documents drawn with replacement (a cluster sample, each draw its own
cluster), all their true instances. T = 1,000 trials; tolerances from T (a mean over T
trials has standard error sd/√T, a variance a relative one of about √(2/T) = 0.045);
coverage bands are tests/stat_checks.py's.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from estimation.core import intervals as ci
from estimation.core.distinct import distinct_precision
from estimation.core.distinct_recall import (
    covered_instances,
    distinct_recall,
    f1_variance,
    precision_nu_covariance,
)
from tests.stat_checks import assert_coverage, assert_unbiased

T = 1000
K, DOC, D0 = 400, 5, 30
Z = ci.z_value(0.9)


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(17)
    w = np.ones(K)  # the instance scheme, which joint recall is defined for (§3)
    P = np.zeros((6, K))
    first = np.arange(0, 220)
    P[0, first] = w[first]
    P[1, 100:300] = w[100:300]
    dup = first[rng.random(len(first)) < 0.95]
    P[2, dup] = w[dup]
    P[3, 300:380] = 1.0  # disjoint
    P[4, first[:6]] = 1.0  # tiny copy
    P[5, 200:240] = 1.0  # no draws; 380-399 are its alone
    P[5, 380:] = 1.0
    P /= P.sum(axis=1, keepdims=True)
    kappa = np.where(rng.random(K) < 0.4, 1 + (rng.random(K) < 0.1), 0).astype(float)
    right = (kappa[None, :] > 0) & (rng.random((6, K)) < 0.8) & (P > 0)
    h = right.astype(float)
    found = h  # a right system names one of the pair's relations
    n = np.array([80, 60, 15, 40, 5, 0])
    return P, h, found, kappa, n


def _truth(world):
    P, h, found, kappa, _ = world
    prec = (P * h).sum(axis=1)
    rec = found.sum(axis=1) / kappa.sum()
    return prec, rec, ci.f1_score(prec, rec)


def _exhaustive(world, rng):
    """Ŷ0: D0 documents with replacement, every true instance of each (pair, relation)."""
    _, _, found, kappa, _ = world
    docs = rng.integers(0, K // DOC, D0)
    pairs, cluster, rel = [], [], []
    for c, d in enumerate(docs):
        for u in range(d * DOC, (d + 1) * DOC):
            for r in range(int(kappa[u])):
                pairs.append(u)
                cluster.append(c)
                rel.append(r)
    pairs, cluster, rel = np.array(pairs), np.array(cluster), np.array(rel)
    gy = found[:, pairs] * (rel == 0)[None, :]  # a right system names relation 0
    _, cluster = np.unique(cluster, return_inverse=True)
    return pairs, gy, cluster


@pytest.fixture(scope="module")
def trials(world):
    P, h, found, kappa, n = world
    Ps, Rs, Fs = sp.csr_matrix(P), sp.csr_matrix(P * h), sp.csr_matrix(found)
    rng = np.random.default_rng(23)
    out = {k: [] for k in ("p", "vp", "r", "vr", "lo", "hi", "nu", "vnu", "cnu", "theta")}
    for _ in range(T):
        d = np.unique(np.concatenate(
            [rng.choice(K, n[j], p=P[j]) for j in range(len(n)) if n[j]]))
        p, vp, _ = distinct_precision(Ps, Rs, n, d)
        y_pairs, gy, docs = _exhaustive(world, rng)
        rec = distinct_recall(Ps, Fs, kappa, n, d, covered_instances(Ps, n, y_pairs), gy, docs)
        for k, v in (("p", p), ("vp", vp), ("r", rec.estimate), ("vr", rec.variance),
                     ("lo", rec.lo), ("hi", rec.hi), ("nu", rec.nu), ("vnu", rec.nu_variance),
                     ("cnu", precision_nu_covariance(Ps, Rs, Fs, kappa, n, d)),
                     ("theta", np.full(len(n), rec.theta))):
            out[k].append(v)
    return {k: np.array(v) for k, v in out.items()}


def test_recall_is_unbiased_and_covers(world, trials):
    _, rec, _ = _truth(world)
    r = trials["r"]
    assert_unbiased({f"HT joint recall, system {i}": (r[:, i], rec[i]) for i in range(6)})
    hits = ci.covers(trials["lo"], trials["hi"], rec[None, :])
    assert_coverage("HT joint recall, six systems", hits)
    for i in range(4):
        assert_coverage(f"HT joint recall, system {i}", hits[:, i])


def test_nu_variance_tracks_the_empirical_one(world, trials):
    """ν̂'s linearised HT variance, on average, against ν̂'s spread over the trials (the
    four systems with more than a handful of pairs; relative se √(2/T), 4 of them, plus
    5% for the linearisation at 15–80 draws: measured 0.93–1.05). With lognormal draw
    weights instead of the instance scheme's uniform ones it is 0.79–0.90 (§12)."""
    ratio = trials["vnu"].mean(axis=0)[:4] / trials["nu"].var(axis=0, ddof=1)[:4]
    assert np.all(np.abs(ratio - 1) <= 4 * np.sqrt(2 / T) + 0.05), ratio


def test_precision_nu_covariance_matches_the_empirical_one(world, trials):
    """Mean Ĉov(P̂, ν̂) against the covariance over the trials; se of an empirical
    covariance ≈ √((Var P̂ Var ν̂ + Cov²)/T); 4 se plus 10% of it."""
    p, nu, c = trials["p"][:, :4], trials["nu"][:, :4], trials["cnu"][:, :4]
    emp = np.array([np.cov(p[:, i], nu[:, i])[0, 1] for i in range(4)])
    se = np.sqrt((p.var(axis=0) * nu.var(axis=0) + emp**2) / T)
    assert np.all(np.abs(c.mean(axis=0) - emp) <= 4 * se + 0.1 * np.abs(emp)), (c.mean(0), emp)
    # The covariance is there to find: positive and well away from 0 for system 0.
    assert emp[0] > 6 * se[0]
    # And it carries over to recall as θ Cov(P̂, ν̂) (Ŷ0 is independent of the draws).
    r = trials["r"][:, :4]
    emp_r = np.array([np.cov(p[:, i], r[:, i])[0, 1] for i in range(4)])
    se_r = np.sqrt((p.var(axis=0) * r.var(axis=0) + emp_r**2) / T)
    est_r = (trials["theta"][:, :4] * c).mean(axis=0)
    assert np.all(np.abs(est_r - emp_r) <= 4 * se_r + 0.1 * np.abs(emp_r)), (est_r, emp_r)


def test_f1_covers_with_the_covariance(world, trials):
    _, _, f1 = _truth(world)
    cov = trials["theta"] * trials["cnu"]
    f, v = f1_variance(trials["p"], trials["vp"], trials["r"], trials["vr"], cov)
    assert_unbiased({f"HT F1, system {i}": (f[:, i], f1[i]) for i in range(4)})
    hits = np.abs(f - f1[None, :]) <= Z * np.sqrt(np.maximum(v, 0)) + 1e-12
    assert_coverage("HT F1 (delta, with Cov), systems 0-3", hits[:, :4])
    # The delta variance tracks F1's spread (relative se √(2/T), 4 of them, plus 10%).
    ratio = v[:, :4].mean(axis=0) / f[:, :4].var(axis=0, ddof=1)
    assert np.all(np.abs(ratio - 1) <= 4 * np.sqrt(2 / T) + 0.10), ratio
