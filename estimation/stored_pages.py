"""Whole stored response bodies for anonymous visitors: the leaderboard page, CSV, JSON.

A board (`estimation/snapshot.py`) still needs per-request work: the viewer's rows
filtered, ranked and joined, then Django's templates around them. Most traffic is
anonymous, and every anonymous visitor sees the same bytes, so the first anonymous
request after a board is written stores what it rendered (`BoardBody`) and later ones
send those bytes back after one SQL query.

What the body shows beyond the board itself is read live and folded into a key: the
corpus's active submissions (id, name, public flag, owner, state), its description,
whether a recompute is pending, and the version of the code and templates that render
it. The key is computed in the same query that fetches the body; a body stored under
another key is not served (the request renders afresh and stores the new body). So a
submission turned private, renamed or withdrawn, a new score run (which replaces the
board and, by cascade, its bodies) or a deploy never serves stale bytes.

Only requests that carry no session and no messages cookie qualify: anyone else may
be logged in or have a notice to see, and goes through the per-viewer path.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import rest_framework
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.http import HttpRequest, HttpResponse
from django.template.loader import get_template
from django.templatetags.static import static
from django.utils.cache import patch_vary_headers

from kbpo.core.models import Corpus
from submissions.models import ACTIVE_STATES, Submission

from .models import BoardBody, BoardSnapshot, ScoringState

PARTS = {"html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8",
         "api": "application/json"}
# What renders a stored body: a change to any of these (a deploy) changes every key.
_TEMPLATES = ("base.html", "estimation/leaderboard.html", "estimation/_board.html")
_SOURCES = ("estimation/snapshot.py", "estimation/views.py", "estimation/stored_pages.py",
            "estimation/leaderboard.py", "estimation/urls.py", "kbpo/urls.py")
_STATIC = ("css/kbpo.css", "css/scores.css", "img/logo.svg")


@functools.cache
def render_version() -> str:
    """A digest of the templates, code, static URLs and settings the bodies depend on
    (fixed for the life of a process: they change only with a deploy)."""
    h = hashlib.md5(usedforsecurity=False)
    for name in _TEMPLATES:
        origin = get_template(name).origin.name
        h.update(Path(origin).read_bytes())
    root = Path(__file__).resolve().parent.parent
    for name in _SOURCES:
        h.update((root / name).read_bytes())
    for name in _STATIC:
        h.update(static(name).encode())
    h.update(f"{settings.KBPO_CROWD_BACKEND}|{settings.KBPO_ENV}|{rest_framework.VERSION}"
             .encode())
    return h.hexdigest()


def anonymous_request(request: HttpRequest) -> bool:
    """No session (so certainly nobody logged in) and no pending messages."""
    cookies = request.COOKIES
    return (settings.SESSION_COOKIE_NAME not in cookies
            and getattr(settings, "MESSAGE_COOKIE_NAME", "messages") not in cookies
            and "HTTP_AUTHORIZATION" not in request.META)


@dataclass
class Lookup:
    board_id: int
    key: str
    body: str | None  # None: nothing stored under the current key


def lookup(tag: str, scheme: str, metric: str, kind: str, part: str) -> Lookup | None:
    """The stored `part` body of a board if its key is still current, in one query.

    None when the corpus has no such board (the caller renders, which writes one), or
    off Postgres (the query is Postgres SQL; SQLite development renders every time).
    """
    if connection.vendor != "postgresql":
        return None
    board, corpus = BoardSnapshot._meta.db_table, Corpus._meta.db_table
    state, sub = ScoringState._meta.db_table, Submission._meta.db_table
    bodies = BoardBody._meta.db_table
    sql = (
        "SELECT b.id, k.key, CASE WHEN p.key = k.key THEN p.body END "
        f"FROM {board} b JOIN {corpus} c ON c.id = b.corpus_id "
        f"LEFT JOIN {state} st ON st.corpus_id = c.id "
        "CROSS JOIN LATERAL (SELECT md5(concat_ws('|', %s, c.description, "
        "coalesce(st.scored_generation >= st.generation, true), "
        "(SELECT json_agg(json_build_array(s.id, s.name, s.public, s.owner_id, s.state) "
        f"ORDER BY s.id) FROM {sub} s WHERE s.corpus_id = c.id AND s.state = ANY(%s)))) "
        "AS key OFFSET 0) k "  # OFFSET 0: computed once, not once per use of k.key
        f"LEFT JOIN {bodies} p ON p.board_id = b.id AND p.part = %s "
        "WHERE c.tag = %s AND b.scheme = %s AND b.kind = %s AND b.metric = %s")
    with connection.cursor() as cur:
        cur.execute(sql, [render_version(), list(ACTIVE_STATES), part, tag, scheme, kind,
                          metric])
        got = cur.fetchone()
    return None if got is None else Lookup(*got)


def store(found: Lookup, part: str, body: str) -> None:
    """Keep `body` under the key read before it was rendered: if the live rows changed
    in between, the next request sees another key and renders again, never the reverse."""
    sql = (f"INSERT INTO {BoardBody._meta.db_table} (board_id, part, key, body) "
           "VALUES (%s, %s, %s, %s) ON CONFLICT (board_id, part) "
           "DO UPDATE SET key = EXCLUDED.key, body = EXCLUDED.body")
    try:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(sql, [found.board_id, part, found.key, body])
    except DatabaseError:  # the board was replaced meanwhile: nothing to keep
        pass


def response(body: str, part: str) -> HttpResponse:
    resp = HttpResponse(body, content_type=PARTS[part])
    # The same URL answers differently to a logged-in visitor.
    patch_vary_headers(resp, ["Cookie"])
    return resp


__all__ = ["PARTS", "Lookup", "anonymous_request", "lookup", "render_version", "response",
           "store"]
