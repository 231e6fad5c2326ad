"""Command line: python -m estimation estimate|plan|simulate|validate.

See docs/reference/estimation-cli.md."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

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


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit status 2 (like malformed input)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"error: {message} (see: {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m estimation", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    est = sub.add_parser(
        "estimate", help="precision, recall and F1 with intervals, as JSON"
    )
    est.add_argument("problem", help="PROBLEM.json ('-' for standard input)")
    est.add_argument(
        "--schemes",
        default="draw",
        help="comma-separated schemes to report under 'schemes', or 'all' (default: the "
        "draw scheme only; the others are reweighted from its draws and flagged "
        "'reliable': false)",
    )

    est.add_argument(
        "--estimator", choices=("importance", "distinct"), default="importance",
        help="the joint estimator: 'importance' (every draw, the default) or 'distinct' "
        "(each labelled pair once, Horvitz-Thompson)",
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
    plan.add_argument(
        "--estimator", choices=("importance", "distinct"), default="importance",
        help="plan for this joint estimator ('distinct': a draw on a labelled pair is free)",
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

    val = sub.add_parser(
        "validate", help="validation battery: named scenarios with exact truth, pass/fail"
    )
    val.add_argument(
        "--scenario",
        action="append",
        help="scenario to run (repeatable; default: all, see --list)",
    )
    val.add_argument("--trials", type=int, default=200)
    val.add_argument("--seed", type=int, default=0)
    val.add_argument("--list", action="store_true", help="list the scenarios and exit")
    val.add_argument(
        "--schemes",
        default="instance",
        help="comma-separated schemes to report, or 'all' (default: instance)",
    )
    val.add_argument("--draw-scheme", default="instance", help="scheme of the draws (checked)")
    val.add_argument(
        "--small", action="store_true", help="12-system versions of the scenarios (fast)"
    )
    return parser


def _schemes(value: str, option: str, allow_all: bool = True) -> list[str]:
    from .core.problem import ProblemError
    from .core.schemes import SCHEMES

    schemes = list(SCHEMES) if value == "all" and allow_all else value.split(",")
    accepted = ("'all' or one of " if allow_all else "one of ") + ", ".join(SCHEMES)
    for s in schemes:
        if s not in SCHEMES:
            raise ProblemError(f"{option}: unknown scheme {s!r}; expected {accepted}")
    return schemes


def _validate(args: argparse.Namespace) -> int:
    from .core.problem import ProblemError
    from .core.schemes import SCHEMES
    from .validation import (
        OPEN,
        SCENARIOS,
        UNCORRECTED,
        format_table,
        passed,
        run_scenario,
        summarise,
        verdict,
    )

    if args.list:
        for name, spec in SCENARIOS.items():
            print(f"{name:11s} {spec.description}")
        for name, spec in UNCORRECTED.items():
            print(f"{name:11s} {spec.description} [only when named]")
        for name, spec in OPEN.items():
            print(f"{name:11s} {spec.description} [only when named: open]")
        return 0
    names = args.scenario or list(SCENARIOS)
    known = {**SCENARIOS, **UNCORRECTED, **OPEN}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ProblemError(f"--scenario: unknown scenario {unknown[0]!r}; expected one of "
                           f"{', '.join(known)}")
    chosen = [known[name] for name in names]
    if args.trials < 2:
        raise ProblemError(f"--trials: expected an integer of at least 2, got {args.trials}")
    draw_scheme = _schemes(args.draw_scheme, "--draw-scheme", allow_all=False)
    if len(draw_scheme) != 1:
        raise ProblemError(
            f"--draw-scheme: expected one scheme of {', '.join(SCHEMES)}, "
            f"got {args.draw_scheme!r}"
        )
    schemes = _schemes(args.schemes, "--schemes")
    verdicts, ok = [], True
    for name, spec in zip(names, chosen, strict=True):
        spec = spec.small() if args.small else spec
        run = run_scenario(spec, args.trials, args.seed, schemes, draw_scheme[0])
        rows = summarise(run)
        print(f"== {name}: {spec.description}")
        print(format_table(rows))
        for r in rows:
            for message, good in r.checks:
                print(f"   {'ok  ' if good else 'FAIL'} {r.metric}/{r.kind}: {message}")
        verdicts.append(verdict(rows, run))
        print(verdicts[-1], flush=True)
        ok &= passed(rows)
    print("\n".join(["", "summary:", *verdicts]))
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already reported in one line
        return int(exc.code or 0)
    from .core.problem import ProblemError, load_problem, plan, solve
    from .core.schemes import SCHEMES

    try:
        if args.command == "validate":
            return _validate(args)
        if args.command == "simulate":
            from .simulate_report import run_report

            if args.systems < 3 or args.trials < 1:
                raise ProblemError(
                    "--systems must be at least 3 and --trials at least 1"
                )
            if args.draw_scheme not in SCHEMES:
                raise ProblemError(
                    f"--draw-scheme: unknown scheme {args.draw_scheme!r}; "
                    f"expected one of {', '.join(SCHEMES)}"
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
            wanted = ([problem.scheme] if args.schemes == "draw"
                      else _schemes(args.schemes, "--schemes"))
            if problem.crowd is not None:
                from .crowd_answers import solve_with_crowd

                result = solve_with_crowd(problem, wanted, args.estimator)
            else:
                result = solve(problem, wanted, args.estimator)
        else:
            option, value = (("--target-variance", args.target_variance)
                             if args.target_variance is not None
                             else ("--target-halfwidth", args.target_halfwidth))
            # argparse's float() takes "nan" and "inf": a NaN target planned the cap
            # (10^6 draws), an infinite one none.
            if not (math.isfinite(value) and value > 0):
                raise ProblemError(f"{option}: must be positive and finite, got {value}")
            result = plan(
                problem,
                args.system,
                None if args.target_variance is not None else args.target_halfwidth,
                args.target_variance,
                args.bound,
                args.estimator,
            )
    except ProblemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0
