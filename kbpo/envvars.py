"""Environment variables read as typed settings, naming the variable when one is malformed.

Shared by the settings modules (kbpo/settings.py and the groups it imports).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_bool(name: str, default: bool) -> bool:
    """Parse a boolean environment variable ("1", "true", "yes", "on")."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    """Parse a comma-separated environment variable."""
    return [x.strip() for x in os.environ.get(name, default).split(",") if x.strip()]


def env_int(name: str, default: int) -> int:
    """Parse an integer environment variable, naming it when it is malformed."""
    value = os.environ.get(name)
    try:
        return int(value) if value else default
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


def env_float(name: str, default: float) -> float:
    """Parse a numeric environment variable, naming it when it is malformed."""
    value = os.environ.get(name)
    try:
        return float(value) if value else default
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc
