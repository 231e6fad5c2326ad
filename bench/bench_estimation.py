"""Benchmark of the estimation core at service scale (not a timed test).

100 systems × 50,000 predictions (~1M distinct instances), 50,000 labelled pairs:
  1. recompute every joint score with intervals (goal < 1 s);
  2. with --schemes: recompute under each listed scheme separately, as the scoring
     app does (draws from the instance scheme, the others importance-reweighted);
  3. add a 101st system: overlap update + adaptive n (goal < 5 s).
Prints wall times and peak memory.

    python bench/bench_estimation.py [--systems 100] [--size 50000] [--labels 50000]
        [--schemes instance,predicate,entity,entity_relation] [--profile SCHEME]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimation.core import (
    SCHEMES,
    Population,
    estimate,
    plan_sample_size,
    prepare_evidence,
    sample_draws,
)


def make_system(rng, n_pairs: int, size: int, usual: np.ndarray):
    # Shared-task-like overlap: half the predictions from a popular core of pairs,
    # half from the long tail; most systems agree on a pair's predicate.
    core = rng.choice(n_pairs // 10, size // 2, replace=False)
    tail = rng.choice(n_pairs, size - size // 2, replace=False)
    pairs = np.unique(np.concatenate([core, tail]))
    preds = np.where(
        rng.random(len(pairs)) < 0.85, usual[pairs], rng.integers(0, 25, len(pairs))
    )
    return pairs, preds, pairs // 4


def timed(label: str, fn, results: dict, memory=None):
    """Wall time of fn() untraced (tracemalloc slows allocation), then peak memory
    of ``memory()`` (a repeat of the same work) under tracemalloc."""
    start = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - start
    peak = 0
    if memory is not None:
        tracemalloc.start()
        memory()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    results[label] = (wall, peak)
    mem = f"   peak traced {peak / 2**20:7.1f} MiB" if memory is not None else ""
    print(f"{label:52s} {wall:7.3f} s{mem}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--labels", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--schemes",
        default="",
        help="comma-separated schemes to time one by one ('all' for every scheme)",
    )
    parser.add_argument(
        "--profile",
        default="",
        metavar="SCHEME",
        help="print the top of a cProfile of estimating this scheme",
    )
    parser.add_argument(
        "--sort", default="cumulative", help="cProfile sort key (e.g. tottime)"
    )
    args = parser.parse_args()
    schemes = (
        list(SCHEMES)
        if args.schemes == "all"
        else [s for s in args.schemes.split(",") if s]
    )
    for s in [*schemes, *([args.profile] if args.profile else [])]:
        if s not in SCHEMES:
            parser.error(f"--schemes/--profile: unknown scheme {s!r}; use {SCHEMES}")

    rng = np.random.default_rng(args.seed)
    n_pairs, n_preds = 600_000, 25
    usual = rng.integers(0, n_preds, n_pairs)
    label = np.where(rng.random(n_pairs) < 0.5, usual, -1)
    results: dict[str, tuple[float, int]] = {}

    def build() -> Population:
        pop = Population()
        for k in range(args.systems):
            pop.add_system(f"s{k}", *make_system(rng, n_pairs, args.size, usual))
        pop.overlap()
        return pop

    pop = timed(f"build population ({args.systems} systems) + overlaps", build, results)
    inst = pop.instances()
    print(
        f"  {len(inst['pairs']):,} predictions, "
        f"{len(np.unique(inst['pairs'] * n_preds + inst['predicates'])):,} distinct instances, "
        f"{pop.n_pairs:,} pairs"
    )

    # Draws: enough per system that about args.labels distinct pairs get labelled.
    per_system = int(args.labels * 1.05 / args.systems)
    draws = {}
    for k, name in enumerate(pop.names):
        pairs, _, _ = pop.system_instances(k)
        ids = pop.pair_ids[pairs]
        draws[name] = ids[
            sample_draws(np.full(len(ids), 1 / len(ids)), per_system, rng)
        ]
    drawn = np.unique(np.concatenate(list(draws.values())))
    y = np.flatnonzero(label >= 0)
    y0 = y[rng.integers(0, len(y), 200)]
    print(
        f"  {sum(len(d) for d in draws.values()):,} draws, {len(drawn):,} labelled pairs"
    )

    def recompute():
        ev = prepare_evidence(pop, draws, drawn, label[drawn], y0, label[y0])
        return estimate(pop, ev)

    timed("recompute all joint scores with intervals (cold)", recompute, results)
    res = timed(
        "recompute all joint scores with intervals", recompute, results, recompute
    )
    p = res.results["instance"]["precision"]
    print(
        f"  median 90% width: precision simple {np.median(p['simple'].hi - p['simple'].lo):.3f}"
        f", joint {np.median(p['joint'].hi - p['joint'].lo):.3f}"
    )

    if schemes or args.profile:
        ev = prepare_evidence(pop, draws, drawn, label[drawn], y0, label[y0])
    for scheme in schemes:
        # One scheme per call, like estimation.scoring.recompute.
        def one(scheme=scheme):
            return estimate(pop, ev, schemes=[scheme])

        timed(f"estimate, scheme {scheme} (first call)", one, results, one)
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        estimate(pop, ev, schemes=[args.profile])
        prof.disable()
        pstats.Stats(prof).sort_stats(args.sort).print_stats(30)

    new_system = make_system(rng, n_pairs, args.size, usual)

    def add_and_plan():
        pop.add_system("new", *new_system)
        pop.overlap()  # incremental: one new row and column
        ev = prepare_evidence(pop, draws, drawn, label[drawn])
        return plan_sample_size(pop, ev, "new", target_halfwidth=0.05)

    def again():
        pop.remove_system("new")
        add_and_plan()

    n = timed(
        f"add system {args.systems + 1}: overlap update + adaptive n",
        add_and_plan,
        results,
        again,
    )
    print(f"  adaptive n for the new system: {n}")
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident set size of the process: {peak_rss:.0f} MiB")


if __name__ == "__main__":
    main()
