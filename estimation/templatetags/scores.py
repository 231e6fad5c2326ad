"""Template filters for scores: fixed three decimals, percentages, intervals."""

from __future__ import annotations

import numbers

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from kbpo.core.schemas import get_schema

from ..models import EXACT_NOTE, interval_ends, is_exact

register = template.Library()


@register.filter
def relation_label(predicate: str, schema_name: str) -> str:
    """The schema's readable name of a relation when its id does not say it already
    (DocRED's `P22` → 'father'; TAC KBP's `per:spouse` → '')."""
    try:
        label = get_schema(schema_name).label(predicate)
    except KeyError:
        return ""
    return "" if label.replace(" ", "_") in predicate else label


def _number(value: object) -> bool:
    """Whether `value` is a number to format. None, NaN and the "" a template passes
    for a missing variable are not (formatting "" raised a ValueError: a 500)."""
    return isinstance(value, numbers.Number) and value == value


@register.filter
def score(value: float | None) -> str:
    """0.61234 → '0.612'; None (or nothing to format) → '—'."""
    return f"{value:.3f}" if _number(value) else "—"


@register.filter
def pct(value: float | None) -> str:
    return f"{100 * value:.0f}%" if _number(value) else "—"


@register.filter
def lookup(mapping: dict, key: str) -> object:
    """mapping[key] in a template (None when absent)."""
    return mapping.get(key)


@register.filter
def signed(value: float | None) -> str:
    """A shift with its sign: 0.0213 → '+0.021'; None → '—'."""
    return f"{value:+.3f}" if _number(value) else "—"


_EXACT_HTML = format_html('<span class="ci exact" title="{}">exact</span>', EXACT_NOTE)


@register.simple_tag
def ci(lo: float | None, hi: float | None) -> str:
    """The interval under a score: 'lo–hi', or 'exact' when the labels decide the value
    (a zero-width interval, which would otherwise look like a bug)."""
    if not (_number(lo) and _number(hi)):
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
    if not (_number(lo) and _number(hi)):
        return ""
    if is_exact(lo, hi):
        return "exact"
    return "–".join(interval_ends(lo, hi))
