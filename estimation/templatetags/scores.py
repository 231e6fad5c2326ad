"""Template filters for scores: fixed three decimals, percentages, intervals."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from ..models import EXACT_NOTE, interval_ends, is_exact

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


_EXACT_HTML = format_html('<span class="ci exact" title="{}">exact</span>', EXACT_NOTE)


@register.simple_tag
def ci(lo: float | None, hi: float | None) -> str:
    """The interval under a score: 'lo–hi', or 'exact' when the labels decide the value
    (a zero-width interval, which would otherwise look like a bug)."""
    if lo is None or hi is None:
        return ""
    if is_exact(lo, hi):
        return _EXACT_HTML
    a, b = interval_ends(lo, hi)
    # Formatted floats, nothing to escape: mark_safe, not format_html's escaping per
    # argument (2,400 cells per stored leaderboard run).
    return mark_safe(f'<span class="ci">{a}–{b}</span>')


@register.simple_tag
def ci_text(lo: float | None, hi: float | None) -> str:
    """`ci` as plain text for running prose: 'lo–hi', or 'exact'."""
    if lo is None or hi is None:
        return ""
    if is_exact(lo, hi):
        return "exact"
    return "–".join(interval_ends(lo, hi))
