"""Two `bench_noisy_demo.py --json` results on the same kept worlds, paired (a run and
its `--rescore` with other code; docs/internals/crowd-bias.md §15): per metric, the
joint estimate's bias and 90% coverage per system over the seeds, and pooled with the
paired difference's mean and se (over seeds: a world's systems share its labels).

Usage: python bench/demo_paired.py BEFORE.json AFTER.json [--labels soft+boot] [--kind joint]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def _records(path: Path, labels: str, kind: str) -> dict[tuple[str, str, str], dict]:
    """{(seed, metric, system): record} of one result file."""
    out = {}
    for seed, res in json.loads(path.read_text()).items():
        for rec in res[labels][kind][5]:
            out[(seed, rec["metric"], rec["system"])] = rec
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--labels", default="soft+boot")
    parser.add_argument("--kind", default="joint")
    args = parser.parse_args(argv)
    a = _records(args.before, args.labels, args.kind)
    b = _records(args.after, args.labels, args.kind)
    keys = sorted(set(a) & set(b))
    seeds = sorted({k[0] for k in keys}, key=int)
    print(f"{args.labels} {args.kind}, seeds {' '.join(seeds)}: before → after")
    for metric in ("P", "R"):
        systems = sorted({k[2] for k in keys if k[1] == metric})
        print(f"\n{metric} {'system':20s} {'bias before':>11s} {'after':>8s} "
              f"{'covered before':>14s} {'after':>6s} {'halfw before':>12s} {'after':>6s}")
        for s in systems:
            ks = [k for k in keys if k[1] == metric and k[2] == s]
            eb = [a[k]["estimate"] - a[k]["truth"] for k in ks]
            ea = [b[k]["estimate"] - b[k]["truth"] for k in ks]
            cb = sum(not a[k]["miss"] for k in ks)
            ca = sum(not b[k]["miss"] for k in ks)
            hb = np.mean([(a[k]["hi"] - a[k]["lo"]) / 2 for k in ks])
            ha = np.mean([(b[k]["hi"] - b[k]["lo"]) / 2 for k in ks])
            print(f"  {s:20s} {np.mean(eb):+11.4f} {np.mean(ea):+8.4f} {cb:>8}/{len(ks):<5} "
                  f"{ca:>3}/{len(ks):<2} {hb:12.4f} {ha:6.4f}")
        # Per seed: the mean error over systems and the intervals covering, both runs.
        per = []
        for seed in seeds:
            ks = [k for k in keys if k[0] == seed and k[1] == metric]
            per.append([np.mean([a[k]["estimate"] - a[k]["truth"] for k in ks]),
                        np.mean([b[k]["estimate"] - b[k]["truth"] for k in ks]),
                        sum(not a[k]["miss"] for k in ks), sum(not b[k]["miss"] for k in ks),
                        len(ks)])
        p = np.asarray(per, float)
        d = p[:, 1] - p[:, 0]
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
        n = int(p[:, 4].sum())
        print(f"  {'all':20s} {p[:, 0].mean():+11.4f} {p[:, 1].mean():+8.4f} "
              f"{int(p[:, 2].sum()):>8}/{n:<5} {int(p[:, 3].sum()):>3}/{n:<2}   "
              f"paired Δbias {d.mean():+.4f} (se over seeds {se:.4f}), "
              f"Δcovered {int(p[:, 3].sum() - p[:, 2].sum()):+d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
