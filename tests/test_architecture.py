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
