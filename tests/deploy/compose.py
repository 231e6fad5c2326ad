"""Reading docker-compose.yml the way Docker Compose does, for tests that run its commands.

No Docker engine runs here, so the tests take the services' commands and environment
out of the compose file itself (a YAML parse plus Compose's `${...}` interpolation)
and run them on the host; a change to the compose file changes what the tests run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests import ROOT

COMPOSE_FILE = ROOT / "docker-compose.yml"
CADDYFILE = ROOT / "deploy" / "Caddyfile"

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, and $$.
_VAR = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                  r"(?:(?P<op>:-|-|:\?|\?)(?P<arg>[^}]*))?\}")


class ComposeError(Exception):
    """What Docker Compose would refuse (a required variable unset, a bad file)."""


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """Substitute `${...}` as Compose does for the given .env `variables`."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name", "op", "arg")
        present = name in variables
        val = variables.get(name, "")
        if op == ":-":
            return val if val else arg
        if op == "-":
            return val if present else arg
        if (op == ":?" and not val) or (op == "?" and not present):
            raise ComposeError(f"required variable {name} is missing a value: {arg}")
        return val

    return _VAR.sub(one, value)


def _resolve(node: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, variables)
    if isinstance(node, list):
        return [_resolve(x, variables) for x in node]
    if isinstance(node, dict):
        return {k: _resolve(v, variables) for k, v in node.items()}
    return node


def load(variables: Mapping[str, str], path: Path = COMPOSE_FILE) -> dict[str, Any]:
    """The compose file with YAML anchors and merge keys expanded, interpolated."""
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    if not isinstance(raw, dict) or not isinstance(raw.get("services"), dict):
        raise ComposeError(f"{path}: no services mapping")
    return _resolve(raw, variables)


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's `environment`, in either of Compose's two spellings."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def command(service: dict[str, Any]) -> list[str]:
    """A service's command as an argument list (the exec form this project uses)."""
    cmd = service.get("command")
    if not isinstance(cmd, list) or not all(isinstance(x, str) for x in cmd):
        raise ComposeError(f"expected an exec-form command list, got {cmd!r}")
    return list(cmd)


def option(cmd: list[str], flag: str) -> str:
    """The value following `flag` in a command line."""
    if flag not in cmd or cmd.index(flag) + 1 >= len(cmd):
        raise ComposeError(f"{flag} is not set in {cmd}")
    return cmd[cmd.index(flag) + 1]


def replace_option(cmd: list[str], flag: str, value: str) -> list[str]:
    """The command with the value of `flag` replaced (which must be present)."""
    option(cmd, flag)
    out = list(cmd)
    out[out.index(flag) + 1] = value
    return out


def bind_mount_source(service: dict[str, Any], target: str) -> Path:
    """The host path a service mounts at `target` (short volume syntax)."""
    for volume in service.get("volumes") or []:
        parts = str(volume).split(":")
        if len(parts) >= 2 and parts[1] == target:
            return (ROOT / parts[0]).resolve()
    raise ComposeError(f"nothing is mounted at {target}")
