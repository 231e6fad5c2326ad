"""Named mutations of the estimators and the scoring path, and which tests catch each.

Run it through scripts/mutation_check.sh (the header there says how it works). This file
is both the driver (`python scripts/mutation_check.py ...`) and, imported by the
`sitecustomize.py` the driver writes, the code that applies one mutation inside every
Python process of a test run (pytest, its Celery worker, CLI subprocesses).

Mutations act on stable, public entry points only: the results of `estimation.core`'s
`estimate()`, `estimation.core.intervals.z_value`, `estimation.data.load_exhaustive`,
and the `estimate` that `estimation.scoring` calls. The ρ mutations recompute ρ from the
public `Population`/`Evidence` API. None edits a source line, so they survive a rewrite
of the estimators' internals; if an entry point disappears, the run says the mutation
could not be applied instead of counting it as caught.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENV_NAME = "KBPO_MUTATION"
ENV_LOG = "KBPO_MUTATION_LOG"
DEFAULT_TESTS = ["tests/estimation", "tests/annotations/exhaustive", "tests/demo"]

# --------------------------------------------------------------------------------------
# Inside the test processes: applying one mutation.
# --------------------------------------------------------------------------------------


def _log(event: str) -> None:
    """Record (once per process and event) that the mutation was exercised or broke."""
    path = os.environ.get(ENV_LOG)
    key = f"{os.getpid()}:{event}"
    if path and key not in _LOGGED:
        _LOGGED.add(key)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{key}\n")


_LOGGED: set[str] = set()


def _rebind(original: object, replacement: object) -> None:
    """Point every loaded `estimation` module's reference to `original` at the mutant."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "estimation" or name.startswith("estimation.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, replacement)


def _map_intervals(results: dict, fn: Callable, schemes: tuple[str, ...] | None = None,
                   metrics: tuple[str, ...] | None = None,
                   kinds: tuple[str, ...] | None = None) -> None:
    """Replace each selected Interval's (estimate, lo, hi) by fn(estimate, lo, hi)."""
    for scheme, by_metric in results.items():
        if schemes and scheme not in schemes:
            continue
        for metric, by_kind in by_metric.items():
            if metrics and metric not in metrics:
                continue
            for kind, iv in by_kind.items():
                if kinds and kind not in kinds:
                    continue
                iv.estimate, iv.lo, iv.hi = fn(iv.estimate, iv.lo, iv.hi)


def _rho(pop: object, ev: object):
    """ρ_i = share of Ŷ0 that system i found on pairs no drawn system predicted."""
    import numpy as np

    m, y_pairs, y_preds = len(pop), np.asarray(ev.y_pairs), np.asarray(ev.y_preds)
    n0 = len(y_pairs)
    rho = np.zeros(m)
    if n0 == 0 or m == 0:
        return rho
    reached = np.zeros(pop.n_pairs, dtype=bool)
    for j in np.flatnonzero(np.asarray(ev.n) > 0):
        reached[pop.system_instances(int(j))[0]] = True
    known = y_pairs >= 0
    covered = np.zeros(n0, dtype=bool)
    covered[known] = reached[y_pairs[known]]
    for i in range(m):
        pairs, preds, _ = pop.system_instances(i)
        mine = set(zip(pairs.tolist(), preds.tolist(), strict=True))
        found = [bool(k) and (int(p), int(c)) in mine
                 for k, p, c in zip(known, y_pairs, y_preds, strict=True)]
        rho[i] = float(np.sum(np.asarray(found) & ~covered)) / n0
    return rho


def _mutate_estimate(post: Callable[[object, tuple, dict], bool]) -> Callable[[], None]:
    """A mutation that post-processes every `estimate()` result.

    post(result, args, kwargs) changes the result in place and says whether it changed
    anything (which is logged, so a run shows the mutation was exercised).
    """

    def install() -> None:
        import estimation.core as core

        original = core.estimate

        def estimate(*args: object, **kwargs: object) -> object:
            result = original(*args, **kwargs)
            try:
                changed = post(result, args, kwargs)
            except Exception as exc:  # the mutation itself broke: say so, loudly
                _log(f"broken {type(exc).__name__}: {exc}")
                raise
            if changed:
                _log("applied")
            return result

        estimate.__wrapped__ = original  # type: ignore[attr-defined]
        _rebind(original, estimate)
        sys.modules[original.__module__].estimate = estimate  # type: ignore[attr-defined]

    return install


def _scale(factor: float) -> Callable:
    import numpy as np

    return lambda e, lo, hi: (np.asarray(e) * factor, np.asarray(lo) * factor,
                              np.asarray(hi) * factor)


def _halve(result: object, args: tuple, kwargs: dict) -> bool:
    _map_intervals(result.results, _scale(0.5))
    return bool(result.results)


def _unit_intervals(result: object, args: tuple, kwargs: dict) -> bool:
    import numpy as np

    _map_intervals(result.results, lambda e, lo, hi: (e, np.zeros_like(lo), np.ones_like(hi)))
    return bool(result.results)


def _shift_rho(sign: float) -> Callable:
    def post(result: object, args: tuple, kwargs: dict) -> bool:
        import numpy as np

        if "instance" not in result.results:
            return False
        pop = args[0] if args else kwargs["pop"]
        ev = args[1] if len(args) > 1 else kwargs["ev"]
        rho = _rho(pop, ev)
        if not np.any(rho > 0):
            return False

        def shift(e, lo, hi):
            d = sign * rho
            return (np.clip(e + d, 0, 1), np.clip(lo + d, 0, 1), np.clip(hi + d, 0, 1))

        _map_intervals(result.results, shift, ("instance",), ("recall",), ("joint",))
        return True

    return post


def _joint_recall_up(result: object, args: tuple, kwargs: dict) -> bool:
    import numpy as np

    _map_intervals(result.results, lambda e, lo, hi: tuple(
        np.clip(np.asarray(x) * 1.03, 0, 1) for x in (e, lo, hi)),
        ("instance",), ("recall",), ("joint",))
    return "instance" in result.results


def _scale_z(factor: float) -> Callable[[], None]:
    def install() -> None:
        from estimation.core import intervals

        original = intervals.z_value

        def z_value(confidence: float) -> float:
            _log("applied")
            return factor * original(confidence)

        _rebind(original, z_value)
        intervals.z_value = z_value

    return install


def _scoring_stores_scheme(wrong: str) -> Callable[[], None]:
    """The scoring path stores another scheme's numbers under the draw scheme."""

    def install() -> None:
        import estimation.scoring as scoring

        original = scoring.estimate

        def estimate(pop: object, ev: object, *args: object, **kwargs: object) -> object:
            schemes = kwargs.get("schemes")
            if schemes == ["instance"]:
                result = original(pop, ev, *args, **{**kwargs, "schemes": [wrong]})
                if wrong in result.results:  # absent when there is no system at all
                    result.results = {"instance": result.results[wrong]}
                    _log("applied")
                    return result
            return original(pop, ev, *args, **kwargs)

        scoring.estimate = estimate

    return install


def _scoring_drops_exhaustive() -> None:
    """The scoring path loads no exhaustive sample (recall is never estimated)."""
    import numpy as np

    from estimation import data

    original = data.load_exhaustive

    def load_exhaustive(*args: object, **kwargs: object) -> tuple:
        pairs, _, _, _ = original(*args, **kwargs)
        if len(pairs):
            _log("applied")
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, 0

    _rebind(original, load_exhaustive)
    data.load_exhaustive = load_exhaustive


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    after: str  # the module whose import completes before the mutation is installed
    install: Callable[[], None]


MUTATIONS = {m.name: m for m in [
    Mutation("halve_estimates", "every estimate and interval end × 0.5",
             "estimation.core", _mutate_estimate(_halve)),
    Mutation("unit_intervals", "every interval forced to [0, 1]",
             "estimation.core", _mutate_estimate(_unit_intervals)),
    Mutation("drop_rho", "joint recall without its ρ term (systems with no draws)",
             "estimation.core", _mutate_estimate(_shift_rho(-1.0))),
    Mutation("double_rho", "joint recall with ρ counted twice",
             "estimation.core", _mutate_estimate(_shift_rho(+1.0))),
    Mutation("z_times_0.9", "every interval's z scaled by 0.9 (too narrow)",
             "estimation.core", _scale_z(0.9)),
    Mutation("z_times_1.1", "every interval's z scaled by 1.1 (too wide)",
             "estimation.core", _scale_z(1.1)),
    Mutation("joint_recall_plus_3pct", "joint recall (instance) × 1.03",
             "estimation.core", _mutate_estimate(_joint_recall_up)),
    Mutation("scoring_stores_entity_as_instance",
             "recompute stores the entity scheme's scores as the instance scheme's",
             "estimation.scoring", _scoring_stores_scheme("entity")),
    Mutation("scoring_drops_exhaustive", "recompute loads no exhaustive sample Ŷ0",
             "estimation.data", _scoring_drops_exhaustive),
]}


class _InstallAfterImport(importlib.abc.MetaPathFinder):
    """Runs the mutation right after its module has been executed (imported)."""

    def __init__(self, mutation: Mutation) -> None:
        self.mutation = mutation

    def find_spec(self, fullname: str, path: object, target: object = None) -> object:
        if fullname != self.mutation.after:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module
        mutation = self.mutation

        def exec_module(module: object) -> None:
            run(module)
            try:
                mutation.install()
            except Exception as exc:
                _log(f"broken {type(exc).__name__}: {exc}")
                raise

        spec.loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def activate(name: str) -> None:
    """Called by the generated sitecustomize.py in every process of a mutation run."""
    sys.meta_path.insert(0, _InstallAfterImport(MUTATIONS[name]))


# --------------------------------------------------------------------------------------
# The driver.
# --------------------------------------------------------------------------------------

SITECUSTOMIZE = f'''"""Written by scripts/mutation_check.py: applies ${ENV_NAME} in this process."""
import os
if os.environ.get("{ENV_NAME}"):
    import mutation_check
    mutation_check.activate(os.environ["{ENV_NAME}"])
'''


def _copy_repo(src: Path, dst: Path) -> None:
    """Tracked and untracked (not ignored) files: the tree as it is, without .venv."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=src,
                           check=True, capture_output=True).stdout.split(b"\0")
    for rel in filter(None, files):
        path = src / rel.decode()
        if path.is_file():
            target = dst / rel.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def _failures(junit: Path) -> tuple[set[str], int]:
    """(ids of the failed or erroring tests, number of tests) from a JUnit XML report."""
    if not junit.exists():
        return set(), 0
    failed, total = set(), 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            module = case.get("classname", "").rsplit(".", 1)[-1]
            failed.add(f"{module}::{case.get('name', '')}")
    return failed, total


def _run(copy: Path, hook: Path, python: str, tests: list[str], name: str | None,
         out: Path, extra: list[str]) -> tuple[set[str], int, list[str], float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(hook), str(copy / "scripts"), str(copy)])
    env.pop(ENV_NAME, None)
    log = out / f"{name or 'baseline'}.log"
    log.write_text("")
    if name:
        env[ENV_NAME] = name
        env[ENV_LOG] = str(log)
    junit = out / f"{name or 'baseline'}.xml"
    started = time.monotonic()
    with open(out / f"{name or 'baseline'}.out", "w") as stdout:
        subprocess.run([python, "-m", "pytest", *tests, "-q", "-p", "no:randomly",
                        "-p", "no:cacheprovider", f"--junitxml={junit}", *extra],
                       cwd=copy, env=env, stdout=stdout, stderr=subprocess.STDOUT,
                       check=False)
    failed, total = _failures(junit)
    return failed, total, log.read_text().splitlines(), time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/mutation_check.sh",
        description="Apply named mutations to a copy of the repository and report which "
                    "tests catch each.")
    parser.add_argument("--only", action="append", choices=sorted(MUTATIONS),
                        help="run this mutation (repeatable; default: all)")
    parser.add_argument("--tests", nargs="+", default=DEFAULT_TESTS,
                        help=f"pytest paths to run (default: {' '.join(DEFAULT_TESTS)})")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep reports here (default: a temporary directory)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTATIONS.values():
            print(f"{m.name:36} {m.what}")
        return 0
    repo = Path(__file__).resolve().parent.parent
    python = str(repo / ".venv" / "bin" / "python")
    work = Path(tempfile.mkdtemp(prefix="kbpo-mutation-"))
    out = args.out or work / "reports"
    out.mkdir(parents=True, exist_ok=True)
    copy, hook = work / "repo", work / "hook"
    _copy_repo(repo, copy)
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    # A database of its own, so a run never meets the developer's test database.
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        os.environ["DATABASE_URL"] = os.environ["DATABASE_URL"].rstrip("/") + "_mut"
    print(f"copy of the repository: {copy}; reports: {out}", flush=True)
    try:
        return _check(copy, hook, python, args, out)
    finally:
        # the copy and the hook go; the reports stay (in `work` unless --out elsewhere)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(hook, ignore_errors=True)
        if args.out:
            shutil.rmtree(work, ignore_errors=True)


def _check(copy: Path, hook: Path, python: str, args: argparse.Namespace, out: Path) -> int:
    baseline, total, _, secs = _run(copy, hook, python, args.tests, None, out,
                                    args.pytest_args)
    print(f"baseline: {total} tests, {len(baseline)} failing without a mutation "
          f"({secs:.0f} s){': ' + ', '.join(sorted(baseline)) if baseline else ''}",
          flush=True)
    if total == 0:
        print("the baseline ran no test: see baseline.out", file=sys.stderr)
        return 2
    rows, status = [], 0
    for name in args.only or list(MUTATIONS):
        failed, n, events, secs = _run(copy, hook, python, args.tests, name, out,
                                       args.pytest_args)
        broken = sorted({e.split(":", 1)[1] for e in events if ":broken" in e})
        applied = any(e.endswith(":applied") for e in events)
        caught = sorted(failed - baseline)
        if broken or not applied:
            verdict = "NOT APPLIED: " + ("; ".join(broken) or "entry point never called")
            status = 1
        elif caught:
            verdict = f"caught by {len(caught)}"
        else:
            verdict = "NOT CAUGHT"
            status = 1
        rows.append((name, verdict, caught))
        print(f"{name}: {verdict} ({n} tests, {secs:.0f} s)", flush=True)
    print("\n| mutation | what | verdict | tests that fail |\n|---|---|---|---|")
    for name, verdict, caught in rows:
        shown = ", ".join(caught[:6])
        more = f" (+{len(caught) - 6} more)" if len(caught) > 6 else ""
        print(f"| {name} | {MUTATIONS[name].what} | {verdict} | {shown}{more} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
