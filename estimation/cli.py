"""Command line: python -m estimation estimate|plan|simulate (see docs/estimation.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

USAGE_ERROR = 2


def _read_problem(path: str) -> Any:
    from .core.problem import ProblemError

    try:
        text = (
            sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        )
    except OSError as exc:
        raise ProblemError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ProblemError(f"{path}: not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProblemError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m estimation", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    est = sub.add_parser(
        "estimate", help="precision, recall and F1 with intervals, as JSON"
    )
    est.add_argument("problem", help="PROBLEM.json ('-' for standard input)")
    est.add_argument(
        "--schemes",
        default="all",
        help="comma-separated schemes to report under 'schemes' (default: all)",
    )

    plan = sub.add_parser("plan", help="adaptive sample size for one system, as JSON")
    plan.add_argument("problem", help="PROBLEM.json ('-' for standard input)")
    plan.add_argument("--system", required=True, help="name of the system to plan for")
    target = plan.add_mutually_exclusive_group()
    target.add_argument("--target-halfwidth", type=float, default=0.05)
    target.add_argument("--target-variance", type=float)
    plan.add_argument(
        "--bound", choices=("worst_case", "second_moment"), default="worst_case"
    )

    sim = sub.add_parser(
        "simulate", help="synthetic shared task: bias, widths, coverage"
    )
    sim.add_argument("--systems", type=int, default=40)
    sim.add_argument("--trials", type=int, default=500)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--out", type=Path, required=True, help="directory for TSV and PNG files"
    )
    sim.add_argument(
        "--adaptive-trials",
        type=int,
        help="arrival orders for adaptive sampling (default: --trials)",
    )
    sim.add_argument("--draws-per-system", type=int, default=125)
    sim.add_argument("--exhaustive", type=int, default=200, help="size of Ŷ0")
    sim.add_argument("--draw-scheme", default="instance")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .core.problem import ProblemError, load_problem, plan, solve
    from .core.schemes import SCHEMES

    try:
        if args.command == "simulate":
            from .simulate import run_report

            if args.systems < 3 or args.trials < 1:
                raise ProblemError(
                    "--systems must be at least 3 and --trials at least 1"
                )
            if args.draw_scheme not in SCHEMES:
                raise ProblemError(
                    f"--draw-scheme: expected one of {', '.join(SCHEMES)}"
                )
            print(
                run_report(
                    args.systems,
                    args.trials,
                    args.seed,
                    args.out,
                    min(args.trials, 100)
                    if args.adaptive_trials is None
                    else args.adaptive_trials,
                    args.draws_per_system,
                    args.exhaustive,
                    args.draw_scheme,
                )
            )
            return 0
        problem = load_problem(_read_problem(args.problem))
        if args.command == "estimate":
            schemes = SCHEMES if args.schemes == "all" else args.schemes.split(",")
            bad = [s for s in schemes if s not in SCHEMES]
            if bad:
                raise ProblemError(f"--schemes: unknown scheme {bad[0]!r}")
            result = solve(problem, schemes)
        else:
            if args.target_variance is not None and args.target_variance <= 0:
                raise ProblemError("--target-variance: must be positive")
            if args.target_variance is None and args.target_halfwidth <= 0:
                raise ProblemError("--target-halfwidth: must be positive")
            result = plan(
                problem,
                args.system,
                None if args.target_variance is not None else args.target_halfwidth,
                args.target_variance,
                args.bound,
            )
    except ProblemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0
