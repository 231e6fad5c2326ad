"""Distinct-pairs Horvitz–Thompson precision against today's joint estimator, same draws
(docs/internals/estimation.md §12).

    python bench/bench_distinct.py [--scenario paper --scenario tiny ...] [--trials 200]
        [--orders 20] [--seed 0]

For each battery world (validation/worlds.py) and two designs:

- ``fixed``: every evaluated system 125 draws, the late systems (tiny / novel / subset)
  sized by the production planner, as in the battery;
- ``adaptive``: every system arrives in a random order and gets the production
  planner's n for the variance of 500 simple draws (0.25/500), as in §8: sample sizes
  that depend on the labels seen so far.

Both estimators see the same draws, hence the same labels, so the ratio of their
variances over the trials is their ratio of labels per unit variance. Truth is the
share of a system's predictions that are right (instance scheme), computed here
from the world. Intervals: the joint one as ``estimate`` reports it; HT normal, and
HT "Wilson at the design size capped at the landed draws, inside the sure bounds"
(the joint estimator's rule, §4.2).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimation.core import Population, estimate, plan_sample_size, prepare_evidence
from estimation.core import intervals as ci
from estimation.core.distinct import distinct_precision
from estimation.validation.battery import SCENARIOS
from estimation.validation.worlds import World, make_world

Z = ci.z_value(0.9)


def pair_matrices(world: World) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """P_i(u) and P_i(u) h_i(u) (instance scheme) over all pairs, and the true precision."""
    rows, cols, p, r = [], [], [], []
    for k, (_, pairs, preds) in enumerate(world.systems):
        rows.append(np.full(len(pairs), k))
        cols.append(pairs)
        p.append(np.full(len(pairs), 1.0 / max(len(pairs), 1)))
        r.append(p[-1] * (preds == world.label[pairs]))
    shape = (len(world.systems), len(world.label))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    P = sp.csr_matrix((np.concatenate(p), (rows, cols)), shape=shape)
    R = sp.csr_matrix((np.concatenate(r), (rows, cols)), shape=shape)
    truth = np.array([float(np.mean(pr == world.label[pa])) if len(pa) else np.nan
                      for _, pa, pr in world.systems])
    return P, R, truth


def ht_interval(est, var, P, R, drawn, n, draws_on):
    """Wilson at n* = π̂(1−π̂)/V̂ inside [L, 1 − W], n* capped at the draws that landed
    divided by the unlabelled mass U (the finite-population gain of counting each pair
    once: only the unlabelled part is uncertain; a cap at the plain draw count made a
    disjoint system planned to half-width 0.037 report 0.045)."""
    lab = np.zeros(P.shape[1])
    lab[drawn] = 1.0
    known = R @ lab
    judged = P @ lab
    exact = judged >= 1 - 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        nstar = np.where(var > 0, est * (1 - est) / var, draws_on)
        size = np.minimum(nstar, draws_on / np.maximum(1 - judged, 1e-9))
    lo, hi = ci.wilson(np.nan_to_num(est), size, Z)
    # A handful of unlabelled pairs (Kish count < 10): the sure bounds alone, as §4.1
    # (a novel 82-pair system with 271 draws covered 0.854 without this rule).
    free = P.multiply(1 - lab[None, :]).tocsr()
    with np.errstate(divide="ignore", invalid="ignore"):
        kish = (1 - judged) ** 2 / np.asarray(free.multiply(free).sum(axis=1)).ravel()
    few = kish < 10
    lo, hi = np.where(few, 0.0, lo), np.where(few, 1.0, hi)
    lo, hi = np.maximum(lo, known), np.minimum(hi, 1 - (judged - known))
    empty = lo > hi
    lo, hi = np.where(empty, known, lo), np.where(empty, 1 - (judged - known), hi)
    est = np.clip(est, known, 1 - (judged - known))
    return (np.where(exact, known, est), np.where(exact, known, lo),
            np.where(exact, known, hi))


def trial(world, pop, P, R, rng, design, late_n=None):
    """One trial: draws by ``design``; returns (n, labels, joint (m × 3), ht (m × 3),
    ht normal (m × 2), labels after each arrival)."""
    m = len(world.systems)
    names = world.names
    draws = {nm: np.zeros(0, np.int64) for nm in names}
    labelled = np.zeros(len(world.label), dtype=bool)
    order = rng.permutation(m) if design == "adaptive" else (
        [k for k in range(m) if k not in world.late] + list(world.late))
    after = []
    for k in order:
        _, pairs, _ = world.systems[k]
        if design == "fixed" and k not in world.late:
            n = 125
        else:
            lab = np.flatnonzero(labelled)
            ev = prepare_evidence(pop, draws, lab, world.label[lab])
            kw = ({"target_variance": 0.25 / 500} if design == "adaptive"
                  else {"target_halfwidth": 0.05})
            n = plan_sample_size(pop, ev, names[k], **kw)
        draws[names[k]] = pairs[rng.integers(0, len(pairs), n)]
        labelled[draws[names[k]]] = True
        after.append(int(labelled.sum()))
    n = np.array([len(draws[nm]) for nm in names])
    lab = np.flatnonzero(labelled)
    ev = prepare_evidence(pop, draws, lab, world.label[lab])
    iv = estimate(pop, ev, "instance", ["instance"]).results["instance"]["precision"]["joint"]
    joint = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
    est, var, _ = distinct_precision(P, R, n, lab)
    all_draws = np.concatenate([draws[nm] for nm in names])
    draws_on = np.asarray((P[:, all_draws] > 0).sum(axis=1)).ravel().astype(float)
    ht = np.stack(ht_interval(est, var, P, R, lab, n, draws_on), axis=1)
    normal = np.stack(ci.normal(est, var, Z), axis=1)
    return n, len(lab), joint, ht, normal, np.array(after)


def summarise(name, design, truth, joint, ht, normal, labels, focus):
    def cov(x, lo_hi):
        return (lo_hi[..., 0] <= truth + 1e-9) & (truth - 1e-9 <= lo_hi[..., 1])

    T = len(joint)
    rows = []
    for label, vals, iv in (("joint", joint, joint[..., 1:]), ("HT", ht, ht[..., 1:]),
                            ("HT normal", ht, normal)):
        est = vals[..., 0]
        bias = np.nanmean(est, axis=0) - truth
        se = np.nanstd(est, axis=0, ddof=1) / np.sqrt(T)
        c = cov(est, iv)
        per_trial = c.mean(axis=1)
        width = np.median(iv[..., 1] - iv[..., 0])
        rows.append((label, np.nanmean(bias), np.nanmax(np.abs(bias) - 3 * se), c.mean(),
                     per_trial.std(ddof=1) / np.sqrt(T), c.mean(axis=0).min(), width,
                     {f: (bias[i], c[:, i].mean()) for f, i in focus.items()}))
    vj = np.nanvar(joint[..., 0], axis=0, ddof=1)
    vh = np.nanvar(ht[..., 0], axis=0, ddof=1)
    ratio = vj / vh
    print(f"\n== {name} / {design}: {T} trials, labels {labels.mean():.0f} "
          f"(sd {labels.std():.0f})")
    print(f"variance joint/HT, same draws: median over systems {np.nanmedian(ratio):.3f} "
          f"(5-95%: {np.nanpercentile(ratio, 5):.3f}-{np.nanpercentile(ratio, 95):.3f}), "
          f"pooled {np.nansum(vj) / np.nansum(vh):.3f}")
    for label, b, worst, c, cse, cmin, w, foc in rows:
        extra = " ".join(f"{f}: bias {fb:+.4f} cov {fc:.3f}" for f, (fb, fc) in foc.items())
        print(f"{label:10s} bias {b:+.4f} (worst |bias|-3se {worst:+.4f}) coverage {c:.3f}"
              f" ±{cse:.3f} (min system {cmin:.3f}) median width {w:.3f}  {extra}")
    for f, i in focus.items():
        print(f"  {f}: variance joint/HT {ratio[i]:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append")
    ap.add_argument("--design", action="append", choices=["fixed", "adaptive"])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--orders", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for name in args.scenario or ["paper", "tiny", "heavy_tail"]:
        sc = SCENARIOS[name]
        world = make_world(sc.world, np.random.default_rng(sc.world_seed))
        pop = Population()
        for nm, pairs, preds in world.systems:
            pop.add_system(nm, pairs, preds, world.subject[pairs])
        P, R, truth = pair_matrices(world)
        focus = {k: v[0] for k, v in world.roles.items() if k != "fixed" and v}
        dups = [i for i, nm in enumerate(world.names) if "-run" in nm]
        if dups:
            focus["dup"] = dups[0]
        for design in args.design or ["fixed", "adaptive"]:
            T = args.trials if design == "fixed" else args.orders
            out = [[], [], [], [], []]
            after = []
            start = time.perf_counter()
            for t in range(T):
                rng = np.random.default_rng([args.seed, t])
                n, labels, joint, ht, normal, aft = trial(world, pop, P, R, rng, design)
                for lst, v in zip(out, (joint, ht, normal, labels, n), strict=True):
                    lst.append(v)
                after.append(aft)
            joint, ht, normal, labels, n = (np.array(x) for x in out)
            summarise(name, design, truth, joint, ht, normal, labels, focus)
            if design == "adaptive":
                a = np.array(after).mean(axis=0)
                ks = [k for k in (1, 5, 10, 20, 40) if k <= len(a)]
                print("labels after k arrivals: " + ", ".join(f"{k}: {a[k - 1]:.0f}" for k in ks))
                print(f"own draws: min {n.min()} median {np.median(n):.0f}; "
                      f"{(n < 60).mean():.2f} of systems under 60")
            print(f"({time.perf_counter() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
