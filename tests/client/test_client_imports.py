"""The client depends on the server only through its HTTP API: its modules import the
standard library, its three declared libraries and each other, nothing of the server."""

from __future__ import annotations

import ast
import sys
import tomllib

from tests import ROOT

CLIENT = ROOT / "client"


def test_client_imports_only_the_stdlib_its_dependencies_and_itself() -> None:
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    declared = {d.split("==")[0].replace("-", "_") for d in project["dependencies"]}
    allowed = set(sys.stdlib_module_names) | declared | {"kbpo_client", "__future__"}
    found: dict[str, set[str]] = {}
    modules = sorted((CLIENT / "src" / "kbpo_client").glob("*.py"))
    assert len(modules) >= 4
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found.setdefault(path.name, set()).update(n.split(".")[0] for n in names)
    stray = {name: sorted(mods - allowed) for name, mods in found.items() if mods - allowed}
    assert stray == {}
    assert {"httpx", "platformdirs", "rich"} <= set().union(*found.values())


def test_requirements_dev_pins_the_clients_dependencies_alike() -> None:
    """The suite runs the client from its source with requirements-dev.txt's packages:
    the same versions as the client declares."""
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    pins = {line.strip() for line in (ROOT / "requirements-dev.txt").read_text().splitlines()}
    assert set(project["dependencies"]) <= pins
