"""Template filters for scores: fixed three decimals, percentages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def score(value: float | None) -> str:
    """0.61234 → '0.612'; None → '—'."""
    return "—" if value is None else f"{value:.3f}"


@register.filter
def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


@register.filter
def lookup(mapping: dict, key: str) -> object:
    """mapping[key] in a template (None when absent)."""
    return mapping.get(key)


@register.filter
def signed(value: float | None) -> str:
    """A shift with its sign: 0.0213 → '+0.021'; None → '—'."""
    return "—" if value is None else f"{value:+.3f}"
