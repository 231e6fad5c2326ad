"""Write the yes-biased crowd's --confusion file of docs/internals/crowd-bias.md §8:
each honest worker of the demo's 20-worker pool (sim-000 .. sim-017; the last two are
spammers) names each attractive relation on pairs holding none at its own rate, drawn
from U(lo, hi).

Usage: python bench/biased_confusion.py OUT.json [--seed 38] [--lo 0.2] [--hi 0.6]
       [--relations per:employee_or_member_of per:title] [--honest 18]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def confusion(relations: list[str], honest: int, lo: float, hi: float, seed: int) -> dict:
    rng = random.Random(seed)
    return {"workers": {f"sim-{i:03d}": {"yes": {r: round(rng.uniform(lo, hi), 4)
                                                  for r in relations}}
                        for i in range(honest)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--lo", type=float, default=0.2)
    parser.add_argument("--hi", type=float, default=0.6)
    parser.add_argument("--honest", type=int, default=18)
    parser.add_argument("--relations", nargs="+",
                        default=["per:employee_or_member_of", "per:title"])
    args = parser.parse_args(argv)
    args.out.write_text(json.dumps(confusion(args.relations, args.honest, args.lo, args.hi,
                                             args.seed), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
