"""Request-level defences shared by every app: the client address behind trusted
proxies, fixed-window rate limits in the shared cache, throttled API token logins,
and spreadsheet-safe CSV cells (docs/reference/settings.md, "Security")."""

from __future__ import annotations

import ipaddress
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or the entry KBPO_TRUSTED_PROXY_COUNT proxies
    back in X-Forwarded-For (entries a client wrote itself are never trusted); None
    when there is none (a request made inside a test)."""
    proxies = settings.KBPO_TRUSTED_PROXY_COUNT
    if proxies > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
                if h.strip()]
        if len(hops) >= proxies and _is_ip(hops[-proxies]):
            return hops[-proxies]
    remote = request.META.get("REMOTE_ADDR") or ""
    return remote if _is_ip(remote) else None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int  # seconds until the window ends (when refused)


def take(key: str, limit: int, window: int) -> Verdict:
    """Count one event against `limit` per `window` seconds under `key`.

    A fixed window in the shared cache: `add` starts it, `incr` is atomic (Redis INCR
    in production), so every web process sees one count.
    """
    if limit <= 0:
        return Verdict(True, 0)
    now = int(time.time())
    start = now - now % window
    bucket = f"rl:{key}:{start}"
    cache.add(bucket, 0, timeout=window + 1)
    try:
        count = cache.incr(bucket)
    except ValueError:  # evicted between add and incr: start again
        cache.set(bucket, 1, timeout=window + 1)
        count = 1
    return Verdict(count <= limit, start + window - now)


def peek(key: str, limit: int, window: int) -> Verdict:
    """Whether `key` is over its limit, without counting anything."""
    if limit <= 0:
        return Verdict(True, 0)
    now = int(time.time())
    start = now - now % window
    count = cache.get(f"rl:{key}:{start}", 0)
    return Verdict(count < limit, start + window - now)


class ThrottledTokenAuthentication(TokenAuthentication):
    """DRF token authentication that refuses (429) a client address after
    KBPO_TOKEN_FAILURE_LIMIT invalid tokens within KBPO_TOKEN_FAILURE_WINDOW seconds,
    so tokens cannot be guessed. Valid tokens are never counted."""

    def authenticate(self, request):  # type: ignore[no-untyped-def]
        if not request.META.get("HTTP_AUTHORIZATION", "").lower().startswith(
                self.keyword.lower() + " "):
            return None
        key = f"token-fail:{client_ip(request) or 'unknown'}"
        limit, window = settings.KBPO_TOKEN_FAILURE_LIMIT, settings.KBPO_TOKEN_FAILURE_WINDOW
        state = peek(key, limit, window)
        if not state.allowed:
            raise exceptions.Throttled(
                wait=state.retry_after,
                detail=f"Too many invalid API tokens from your address; try again in "
                       f"{state.retry_after} seconds.")
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            take(key, limit, window)
            raise


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: object) -> object:
    """A CSV/TSV cell a spreadsheet will not run as a formula.

    Text starting with = + - @ (or a tab or carriage return) gets a leading apostrophe,
    which spreadsheets show as text; numbers, and text that is a plain number such as
    "-0.5", are left alone.
    """
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


# FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE: user-written text between them cannot
# reorder what follows it (a name holding U+202E), where no <bdi> element can go.
FSI, PDI = "\u2068", "\u2069"


# Bidi classes that can reorder neighbouring text: right-to-left letters, Arabic digits,
# and the embedding, override and isolate controls.
_REORDERING = frozenset({"R", "AL", "AN", "RLE", "RLO", "LRE", "LRO", "PDF", "RLI", "LRI",
                         "FSI", "PDI"})


def isolated(text: object) -> str:
    """`text` between FSI and PDI when it holds a character that can reorder what follows
    (plain-text contexts: messages, <title>, <option>, JSON, logs, e-mail). Left-to-right
    text is returned as it is: there the isolates would only be invisible characters in
    the way (copied from a JSON error, a log line or a mail subject)."""
    text = str(text)
    if any(unicodedata.bidirectional(c) in _REORDERING for c in text):
        return f"{FSI}{text}{PDI}"
    return text
