"""The full validation battery (docs/internals/estimation.md §10): every scenario at full size.

    python bench/bench_validate.py [--trials 1000] [--seed 0] [--scenario NAME ...]
        [--schemes instance|all|...] [--draw-scheme instance]

Same as ``python -m estimation validate`` with the bench's defaults (1,000 trials
per scenario, ~10 minutes on the 2-core development container). Prints the table
(scenario × scheme × metric × estimator: bias, coverage, median width), the checks
and one PASS/FAIL line per scenario; exits 1 if a scenario fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimation.cli import main


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", action="append")
    parser.add_argument("--schemes", default="instance")
    parser.add_argument("--draw-scheme", default="instance")
    args, _ = parser.parse_known_args(argv)  # bench.sh passes every bench the same args
    forward = ["validate", "--trials", str(args.trials), "--seed", str(args.seed)]
    for name in args.scenario or []:
        forward += ["--scenario", name]
    forward += ["--schemes", args.schemes, "--draw-scheme", args.draw_scheme]
    return main(forward)


if __name__ == "__main__":
    raise SystemExit(run())
