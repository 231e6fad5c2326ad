"""Benchmark of the demo-world generator: wall time and output sizes.

Usage: python bench/bench_demo_world.py [DOCS...] [--systems K] [--seed S] [--keep DIR]
(defaults: 1000 and 10000 documents, 50 systems). Outputs go to a temporary
directory that is removed afterwards unless --keep is given.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbpo.demo.world.generate import generate


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="keep the outputs under this directory")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench_demo_world_"))
    print(f"{'docs':>7} {'systems':>7} {'seconds':>8} {'corpus MB':>10} {'gold MB':>8} "
          f"{'KBs MB':>8} {'true inst.':>10} {'KB lines':>10}")
    try:
        for docs in args.docs:
            out = root / f"world_{docs}_{args.systems}"
            start = time.perf_counter()
            summary = generate(out, docs, args.systems, args.seed)
            seconds = time.perf_counter() - start
            kb_lines = sum(sum(1 for _ in p.open("rb")) for p in (out / "systems").glob("*.kb"))
            mb = 1 / 1e6
            print(f"{docs:>7} {args.systems:>7} {seconds:>8.1f} "
                  f"{(out / 'corpus.jsonl').stat().st_size * mb:>10.1f} "
                  f"{(out / 'gold.jsonl').stat().st_size * mb:>8.1f} "
                  f"{_size(out / 'systems') * mb:>8.1f} {summary['true_instances']:>10} "
                  f"{kb_lines:>10}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
