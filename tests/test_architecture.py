"""The shape of the code: file sizes, and every task queued by name exists.

The layering and the absence of import cycles are checked by `lint-imports`
(`.importlinter`), which the test script runs before pytest.
"""

from __future__ import annotations

import re

import pytest

from tests import ROOT

APPS = ("kbpo", "submissions", "annotations", "estimation")
MAX_LINES = 600
# `jobs.enqueue("name", ...)`, `jobs.send("name", ...)` and `..._TASK = "name"` constants.
QUEUED = re.compile(r"""(?:enqueue|send)\(\s*["']([\w.]+)["']|_TASK\s*=\s*["']([\w.]+)["']""")


def _sources() -> list:
    return sorted(p for app in APPS for p in (ROOT / app).rglob("*.py")
                  if "migrations" not in p.parts)


def test_no_source_file_is_over_600_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these modules by concern: {long}"


def test_every_task_queued_by_name_is_registered() -> None:
    from celery import current_app

    names = {a or b for p in _sources()
             for a, b in QUEUED.findall(p.read_text(encoding="utf-8"))}
    assert len(names) >= 8, names  # the scan found the service constants
    registered = set(current_app.tasks)
    assert names <= registered, f"queued but not registered: {sorted(names - registered)}"


@pytest.mark.parametrize("app", APPS)
def test_task_modules_are_thin_entry_points(app: str) -> None:
    """A task module holds tasks that call a service, not the work itself."""
    for path in (ROOT / app).rglob("tasks.py"):
        body = path.read_text(encoding="utf-8")
        for name, code in re.findall(r"\ndef (\w+)\(.*?\).*?:\n(.*?)(?=\n\S|\Z)", body, re.S):
            statements = [line for line in code.splitlines()
                          if line.strip() and not line.strip().startswith(("#", '"""'))]
            assert len(statements) <= 12, f"{path.relative_to(ROOT)}:{name} does work"


def test_bench_scripts_import_no_cycle() -> None:
    """The benches share code through bench_common, never through each other both ways:
    a circle breaks as soon as one of them imports the other at the top."""
    import ast

    bench = ROOT / "bench"
    names = {p.stem for p in bench.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for p in bench.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in names:
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in names}
        graph[p.stem] = deps
    assert graph["bench_leaderboard"] or graph["bench_recompute"]  # the scan sees imports

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and reaches(d, goal, seen | {d}))
                   for d in graph[start])

    cycles = sorted(m for m in graph if reaches(m, m, {m}))
    assert not cycles, f"bench scripts in an import circle: {cycles}"
