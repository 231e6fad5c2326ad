"""Isolating user-written text where markup cannot: a <title>, an <option>.

A name holding bidi controls (U+202E RIGHT-TO-LEFT OVERRIDE, ...) reorders whatever
follows it on the line. In body text we wrap names in <bdi>; inside elements that take
text only, FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE does the same.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from kbpo.core.security import FSI, PDI

register = template.Library()


@register.filter
def isolate(value: object) -> SafeString:
    """The escaped value between FSI and PDI."""
    return format_html(FSI + "{}" + PDI, value)
