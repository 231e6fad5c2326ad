"""Systems arriving one by one, each sized for the distinct-pairs HT estimator
(docs/internals/estimation.md §12): the planner sketch ``plan_distinct``, which counts
only new labels (a draw on a labelled pair is free) through the inclusion probabilities.

    python bench/bench_distinct_arrival.py [--scenario paper|simulate ...] [--orders 50] [--seed 0]
        [--max-jump 0]

Target: the variance of 500 simple draws, 0.25/500 (half-width 0.037 at 90%), as §8.
Prints the labels after 1, 5, 10, 20, 40 arrivals, the own draws, and the final HT
precision intervals' coverage and half-widths (truth from the world); then joint recall
θ̂ν̂ + ρ̂ with the HT ν̂ (`distinct_recall`) and F1 (delta method with Cov(P̂, r̂)) over
an exhaustive sample drawn after the arrivals: the scenario's documents (40 for
`paper`, without replacement, as the battery) or, for `simulate`, 200 true instances
i.i.d. (as §8).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distinct import Z, ht_interval, pair_matrices

from estimation import simulate
from estimation.core import intervals as ci
from estimation.core.distinct import (
    Design,
    distinct_precision,
    ht_ratio,
    plan_distinct,
)
from estimation.core.distinct_recall import (
    covered_instances,
    distinct_recall,
    precision_nu_covariance,
)
from estimation.validation.battery import SCENARIOS
from estimation.validation.worlds import make_world

TARGET = 0.25 / 500


def _halfwidth(P, R, n, labelled, alld, k) -> float:
    """System k's HT interval half-width with the draws so far."""
    lab = np.flatnonzero(labelled)
    rows = slice(k, k + 1)
    est, var, _ = distinct_precision(P, R, n, lab)
    on = np.asarray((P[rows][:, alld] > 0).sum(axis=1)).ravel().astype(float)
    _, lo, hi = ht_interval(est[rows], var[rows], P[rows], R[rows], lab, n, on)
    return float((hi[0] - lo[0]) / 2)


def arrival(world, P, R, rng, max_jump: float, topup: bool):
    m, K = len(world.systems), len(world.label)
    halfwidth = Z * np.sqrt(TARGET)
    n = np.zeros(m, dtype=np.int64)
    labelled = np.zeros(K, dtype=bool)
    logq = np.zeros(K)  # Σ_j n_j log(1 − P_j(u)) over the draws made so far
    draws, after = [], []
    for k in rng.permutation(m):
        _, pairs, preds = world.systems[k]
        p = np.full(len(pairs), 1.0 / len(pairs))
        lab = labelled[pairs]
        h = (preds == world.label[pairs]).astype(float)
        nk = plan_distinct(p, np.exp(logq[pairs]), h, lab, TARGET, halfwidth)
        if max_jump > 0 and nk > 0:
            # No single unlabelled pair may move the estimate by more than max_jump·h:
            # p_u / π_u(n) ≤ max_jump · halfwidth on the free pairs.
            free = ~lab
            qo = np.exp(logq[pairs][free])
            while nk < 100_000 and np.max(
                    p[free] / (1 - qo * (1 - p[free]) ** nk)) > max_jump * halfwidth:
                nk = int(nk * 1.1) + 1
        extra, rounds = nk, 0
        while extra > 0:
            d = pairs[rng.integers(0, len(pairs), extra)]
            n[k] += extra
            draws.append(d)
            labelled[d] = True
            logq[pairs] += extra * np.log1p(-np.minimum(p, 1 - 1e-15))
            extra = 0
            if topup and rounds < 4 and n[k] > 0:
                # Ask for more where the interval is not as narrow as planned.
                rounds += 1
                hw = _halfwidth(P, R, n, labelled, np.concatenate(draws), k)
                if hw > halfwidth:
                    extra = int(np.ceil(n[k] * ((hw / halfwidth) ** 2 - 1))) + 1
        after.append(int(labelled.sum()))
    return n, np.flatnonzero(labelled), np.concatenate(draws), np.array(after)


def exhaustive_sample(world, rng, n_docs: int | None, n0: int = 200):
    """Ŷ0's pairs and the cluster (0..D−1) of each: all true pairs of ``n_docs`` documents
    drawn without replacement, or ``n0`` true pairs i.i.d. (each its own cluster)."""
    true = np.flatnonzero(world.label >= 0)
    if n_docs is None:
        return true[rng.integers(0, len(true), n0)], np.arange(n0)
    docs = rng.choice(world.n_docs, size=n_docs, replace=False)
    y = true[np.isin(world.doc[true], docs)]
    return y, np.unique(world.doc[y], return_inverse=True)[1].ravel()


def joint_recall_f1(world, P, R, n, lab, p_iv, y, docs):
    """HT joint recall (estimate, lo, hi) and F1 (estimate, lo, hi) with and without the
    precision–recall covariance, one relation per true pair (κ = 1)."""
    kappa = (world.label >= 0).astype(float)
    found = (R > 0).astype(float)
    gy = found[:, y].toarray()
    rec = distinct_recall(P, found, kappa, n, lab, covered_instances(P, n, y), gy, docs)
    cov = rec.theta * precision_nu_covariance(P, R, found, kappa, n, lab)
    e, lo, hi = p_iv
    f1 = ci.f1_delta(e, lo, hi, rec.estimate, rec.lo, rec.hi, Z, cov)
    f1_nocov = ci.f1_delta(e, lo, hi, rec.estimate, rec.lo, rec.hi, Z, 0.0)
    return (rec.estimate, rec.lo, rec.hi), f1, f1_nocov[1:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append")
    ap.add_argument("--orders", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-jump", type=float, default=0.0)
    ap.add_argument("--exhaustive-reps", type=int, default=10,
                    help="exhaustive samples drawn per arrival order (cheap: recall's "
                         "coverage is dominated by Ŷ0, which all systems share)")
    ap.add_argument("--topup", action="store_true",
                    help="after a system's draws, draw more while its interval is wider "
                         "than the target (up to 4 rounds)")
    args = ap.parse_args(argv)
    for name in args.scenario or ["paper"]:
        if name == "simulate":  # the §8 world (`simulate --systems 40 --seed 1`)
            world = simulate.make_world(np.random.default_rng(1), n_systems=40)
            n_docs = None
        else:
            sc = SCENARIOS[name]
            world = make_world(sc.world, np.random.default_rng(sc.world_seed))
            n_docs = sc.exhaustive_docs
        P, R, truth = pair_matrices(world)
        r_truth = np.asarray((R > 0).sum(axis=1)).ravel() / (world.label >= 0).sum()
        f1_truth = ci.f1_score(truth, r_truth)
        pool = np.flatnonzero(np.asarray((P > 0).sum(axis=0)).ravel() > 0)
        pool_true = pool[world.label[pool] >= 0]
        nu_truth = np.asarray((P[:, pool_true] > 0).sum(axis=1)).ravel() / len(pool_true)
        start = time.perf_counter()
        res = []
        for t in range(args.orders):
            rng = np.random.default_rng([args.seed, t])
            n, lab, alld, after = arrival(world, P, R, rng, args.max_jump, args.topup)
            est, var, _ = distinct_precision(P, R, n, lab)
            draws_on = np.asarray((P[:, alld] > 0).sum(axis=1)).ravel().astype(float)
            e, lo, hi = ht_interval(est, var, P, R, lab, n, draws_on)
            nlo, nhi = ci.normal(est, var, Z)
            # ν_i, system i's share of the pool's true pairs: HT ratio over the drawn
            # true pairs (one relation per true pair in these worlds, so κ = 1).
            yt = lab[world.label[lab] >= 0]
            G = (P[:, yt] > 0).astype(float)
            nu, nu_var, _ = ht_ratio(G, np.ones((1, len(yt))), Design.of(P[:, yt], n))
            nu_lo, nu_hi = ci.normal(nu, nu_var, Z)
            reps = []
            for k in range(args.exhaustive_reps):
                y, docs = exhaustive_sample(
                    world, np.random.default_rng([args.seed, t, 1, k]), n_docs)
                rec, f1, f1_nocov = joint_recall_f1(world, P, R, n, lab, (e, lo, hi), y, docs)
                reps.append((*rec, *f1, *f1_nocov, len(y)))
            res.append((after, n, e, lo, hi, nlo, nhi, nu, nu_lo, nu_hi,
                        *(np.array(x) for x in zip(*reps, strict=True))))
        (after, n, e, lo, hi, nlo, nhi, nu, nu_lo, nu_hi, r, rlo, rhi, f, flo, fhi, f0lo,
         f0hi, n0) = (np.array(x) for x in zip(*res, strict=True))
        T = args.orders
        cov = (lo <= truth + 1e-9) & (truth - 1e-9 <= hi)
        ncov = (nlo <= truth + 1e-9) & (truth - 1e-9 <= nhi)
        half = (hi - lo) / 2
        a = after.mean(axis=0)
        ks = [k for k in (1, 5, 10, 20, 40) if k <= len(a)]
        print(f"\n== {name}: {T} arrival orders, max jump {args.max_jump}, top-up {args.topup} "
              f"({time.perf_counter() - start:.0f} s)")
        print("labels after k arrivals: " + ", ".join(f"{k}: {a[k - 1]:.0f}" for k in ks)
              + f" (sd at {len(a)}: {after[:, -1].std():.0f}); draws {n.sum(axis=1).mean():.0f}")
        print(f"own draws: min {n.min()}, median {np.median(n):.0f}, "
              f"share of (order, system) with n < 60: {(n < 60).mean():.3f}")
        se = cov.mean(axis=1).std(ddof=1) / np.sqrt(T)
        print(f"HT precision coverage {cov.mean():.3f} ±{se:.3f} (normal interval "
              f"{ncov.mean():.3f}); min system {cov.mean(axis=0).min():.3f}; bias "
              f"{np.nanmean(e.mean(axis=0) - truth):+.4f}, worst system "
              f"{np.nanmax(np.abs(e.mean(axis=0) - truth)):.4f}")
        nu_cov = (nu_lo <= nu_truth + 1e-9) & (nu_truth - 1e-9 <= nu_hi)
        print(f"HT ν (share of the pool's true pairs): coverage {nu_cov.mean():.3f} ±"
              f"{nu_cov.mean(axis=1).std(ddof=1) / np.sqrt(T):.3f}, min system "
              f"{nu_cov.mean(axis=0).min():.3f}; bias {np.mean(nu.mean(axis=0) - nu_truth):+.4f}"
              f", worst {np.max(np.abs(nu.mean(axis=0) - nu_truth)):.4f}")
        print(f"half-width: median {np.median(half):.3f}, 99th pct {np.percentile(half, 99):.3f}"
              f", max {half.max():.3f}; share over target+10% ({1.1 * Z * np.sqrt(TARGET):.3f})"
              f": {(half > 1.1 * Z * np.sqrt(TARGET)).mean():.3f}")
        report_recall_f1(r, rlo, rhi, r_truth, f, flo, fhi, f0lo, f0hi, f1_truth, n0)
    return 0


def report_recall_f1(r, rlo, rhi, r_truth, f, flo, fhi, f0lo, f0hi, f1_truth, n0) -> None:
    """Coverage pooled over (order, Ŷ0, system) ± se from per-order coverages (orders are
    the independent unit); min system; bias over all (order, Ŷ0) (arrays T × reps × m)."""
    T = len(r)
    print(f"recall and F1: {T} orders × {r.shape[1]} exhaustive samples")
    for label, est, lo, hi, tr in (("joint recall (HT ν)", r, rlo, rhi, r_truth),
                                   ("F1 (delta, with Cov)", f, flo, fhi, f1_truth),
                                   ("F1 without Cov", f, f0lo, f0hi, f1_truth)):
        c = ci.covers(lo, hi, tr[None, None, :])
        per_order = c.reshape(T, -1).mean(axis=1)
        est = est.reshape(-1, est.shape[-1])
        bias = np.nanmean(est, axis=0) - tr
        se = np.nanstd(est, axis=0, ddof=1) / np.sqrt(len(est))  # Ŷ0s of an order share draws
        print(f"HT {label}: coverage {c.mean():.3f} ±{per_order.std(ddof=1) / np.sqrt(T):.3f}"
              f" (min system {c.mean(axis=(0, 1)).min():.3f}); bias {np.nanmean(bias):+.4f}, worst "
              f"|bias| − 3 se {np.nanmax(np.abs(bias) - 3 * se):+.4f}; median half-width "
              f"{np.nanmedian((hi - lo) / 2):.3f}")
    print(f"Ŷ0: {n0.mean():.0f} true instances on average (min {n0.min()})")


if __name__ == "__main__":
    raise SystemExit(main())
