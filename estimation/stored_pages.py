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

A body is stored per viewer class (`viewer_class`): anonymous; logged in and owning
no active submission on the corpus; the same as staff; or one owner (who sees their
private rows, marked as theirs). Only the anonymous body is complete; the others
hold markers where the navigation (user name, the CSRF-protected log-out form) and
the messages go, filled in live per request (`fill`), so no stored byte is specific
to a session. An anonymous request is one with no session, no messages cookie and
no Authorization header.

Reports (`ReportBody`) follow the same rules, with a key over everything the report
shows: see `report_lookup`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg2.extensions
import rest_framework
from django.conf import settings
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.contrib.messages import get_messages
from django.core.signals import setting_changed
from django.db import DatabaseError, connection, transaction
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.csrf import get_token
from django.template.loader import get_template
from django.templatetags.static import static
from django.urls import get_script_prefix
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.html import conditional_escape, escape
from django.utils.safestring import mark_safe

from annotations.models import (
    Assignment,
    Bonus,
    BudgetSettings,
    DrawLabelStamp,
    ExhaustiveDocument,
    GoldRelation,
    Hit,
    HitQuestion,
    PairLabel,
    Question,
    Response,
    SampleDraw,
    SubmissionBudget,
)
from kbpo.core import prepared
from kbpo.core.models import Corpus
from submissions.models import ACTIVE_STATES, RelationInstance, Submission

from .models import BoardBody, BoardSnapshot, ReportBody, ScoreRun, ScoringState, SystemScore

PARTS = {"html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8",
         "api": "application/json"}
# What renders a stored body: a change to any of these (a deploy) changes every key.
_TEMPLATES = ("base.html", "estimation/leaderboard.html", "estimation/_board.html",
              "estimation/_board_open.html", "estimation/_board_close.html",
              "estimation/report.html", "includes/viewer_nav.html", "includes/messages.html")
_SOURCES = ("estimation/snapshot.py", "estimation/views.py", "estimation/stored_pages.py",
            "estimation/leaderboard.py", "estimation/urls.py", "kbpo/urls.py",
            "estimation/report.py", "estimation/api_reports.py", "estimation/data.py",
            "estimation/templatetags/scores.py", "annotations/quality/accuracy.py",
            "submissions/models.py", "estimation/report_progress.py")
_SETTINGS = ("KBPO_CROWD_BACKEND", "KBPO_ENV", "KBPO_SAMPLING_SCHEME", "KBPO_CONFIDENCE",
             "KBPO_LABEL_AGGREGATION", "KBPO_BUDGET_PER_SUBMISSION_USD", "LANGUAGE_CODE",
             "TIME_ZONE", "USE_TZ", "USE_THOUSAND_SEPARATOR")
# Every static file the stored pages link (tests check the templates name no other): in
# production their URLs carry a content hash, and a body linking an old hash would load
# a file the deploy no longer serves.
_STATIC = ("css/kbpo.css", "css/scores.css", "img/logo.svg", "js/leaderboard_report.js")


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
    for name in _SETTINGS:
        h.update(f"{name}={getattr(settings, name, None)!r}|".encode())
    h.update(rest_framework.VERSION.encode())
    return h.hexdigest()


def anonymous_request(request: HttpRequest) -> bool:
    """No session (so certainly nobody logged in) and no pending messages."""
    cookies = request.COOKIES
    return (settings.SESSION_COOKIE_NAME not in cookies
            and getattr(settings, "MESSAGE_COOKIE_NAME", "messages") not in cookies
            and "HTTP_AUTHORIZATION" not in request.META)


def keep_private(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """`Cache-Control: private` on a response to anyone but an anonymous visitor.

    What a signed-in (or token) viewer gets may hold private submissions (their own,
    every one for staff) and holds their name and CSRF token in the navigation. Vary:
    Cookie keeps it apart only in a cache that honours Vary; `private` keeps it out of
    every shared cache. Anonymous responses, alike for every such visitor, stay
    cacheable. Decided from the cookies and headers: the session is not read."""
    if not anonymous_request(request):
        patch_cache_control(response, private=True)
    return response


def private_for_viewers(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A view whose responses get `keep_private`."""
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return keep_private(request, view(request, *args, **kwargs))
    return wrapped


# --- What differs per viewer: left out of stored bodies, filled in per request -----------

# Markers our templates print in place of the per-viewer parts when rendering a body
# to store (context `live_slots`). Escaped text never contains "<", so no content
# can forge one; `store` refuses a body where one is not exactly once.
SLOTS = {"nav": "<!--live:nav-->", "messages": "<!--live:messages-->",
         "since": "<!--live:since-->"}
_SLOT_BYTES = {name: marker.encode() for name, marker in SLOTS.items()}


def slotted(names: tuple[str, ...]) -> dict[str, str]:
    """The template context that renders markers for `names` (a storable body)."""
    return {"live_slots": {n: mark_safe(SLOTS[n]) for n in names}}  # our own markers


@dataclass(frozen=True)
class _Viewer:
    """What includes/viewer_nav.html reads of `user` (tests compare with the template
    rendered for real users)."""

    is_authenticated: bool
    is_staff: bool
    username: str


# In the navigation rendered once per viewer class: where this request's user name and
# CSRF token go. ":" is in neither a CSRF token's alphabet nor escaped text's "<…>".
_NAV_USER, _NAV_CSRF = "<kbpo:user>", "<kbpo:csrf>"
_NAV: dict[tuple[bool, bool, str], str] = {}


def nav(request: HttpRequest) -> str:
    """includes/viewer_nav.html for this request's viewer.

    Rendering it took ≈0.5 ms per signed-in request (seven URL reversals, the context
    processors); it depends on the viewer only through signed in / staff, the user name
    and the CSRF token, so it is rendered once per class (and script prefix) and the
    two filled in: the name escaped, the token as {% csrf_token %} gives it.
    """
    user = request.user
    signed_in, staff = bool(user.is_authenticated), bool(getattr(user, "is_staff", False))
    key = (signed_in, staff, get_script_prefix())
    text = None if settings.DEBUG else _NAV.get(key)  # DEBUG: edited templates show
    if text is None:
        text = _NAV[key] = get_template("includes/viewer_nav.html").render(
            {"user": _Viewer(signed_in, staff, _NAV_USER), "csrf_token": _NAV_CSRF})
    if not signed_in:
        return text
    return (text.replace(escape(_NAV_CSRF), get_token(request))  # [A-Za-z0-9] only
            .replace(escape(_NAV_USER), escape(user.username)))


@receiver(setting_changed)
def _forget_nav(**kwargs: object) -> None:
    _NAV.clear()  # URLs or templates may differ under the new settings


def fill(body: bytes, request: HttpRequest, since: datetime | None = None) -> bytes:
    """`body` (UTF-8) with its markers replaced by what this request's viewer gets.

    Bytes, as read from the database and sent: a page with any non-ASCII character is a
    two-byte-per-character str in Python, and decoding a ~110 KB body and encoding it
    back cost ≈0.4 ms per request, more than filling in the markers."""
    if _SLOT_BYTES["nav"] in body:
        body = body.replace(_SLOT_BYTES["nav"], nav(request).encode())
    if _SLOT_BYTES["messages"] in body:
        # No message waiting (the usual case): the include renders nothing, and asking
        # reads only the messages cookie, like the template's own `{% if messages %}`.
        body = body.replace(_SLOT_BYTES["messages"], get_template("includes/messages.html")
                            .render(None, request).encode() if get_messages(request) else b"")
    if _SLOT_BYTES["since"] in body:
        body = body.replace(_SLOT_BYTES["since"], b"" if since is None
                            else str(conditional_escape(naturaltime(since))).encode())
    return body


def _raw_text(cur: Any) -> Any:
    """`cur` set to return text columns as the UTF-8 bytes the server sent (not decoded:
    the stored body goes out as it came in). Before the query: psycopg2 picks a result's
    converters when it arrives."""
    psycopg2.extensions.register_type(psycopg2.extensions.BYTES, cur.cursor)
    return cur


def storable(body: str) -> bool:
    """Each marker at most once: anything else is not a body our templates made."""
    return all(body.count(marker) <= 1 for marker in SLOTS.values())


# --- Leaderboard bodies -------------------------------------------------------------------


def viewer_class(request: HttpRequest) -> str | None:
    """Which stored body a request may get, before knowing whether the viewer owns a
    submission on the corpus ("" anonymous; "user"/"staff", turned into "u<id>"/
    "s<id>" by the lookup for an owner). None: no stored body (e.g. a session cookie
    that is not a login: it may carry messages, and is rare)."""
    if anonymous_request(request):
        return ""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or "HTTP_AUTHORIZATION" in request.META:
        return None
    return "staff" if user.is_staff else "user"


@dataclass
class Lookup:
    board_id: int
    key: str
    body: bytes | None  # UTF-8; None: nothing stored under the current key
    viewer: str = ""


_BOARD_TYPES = {"version": "text", "states": "text[]", "user": "bigint", "own": "text",
                "viewer": "text", "part": "text", "tag": "text", "scheme": "text",
                "kind": "text", "metric": "text"}


def lookup(tag: str, scheme: str, metric: str, kind: str, part: str, viewer: str = "",
           user_id: int | None = None) -> Lookup | None:
    """The stored `part` body of a board for `viewer` if its key is still current, in
    one query. A logged-in viewer who owns an active submission on the corpus gets
    their own body ("u<id>", staff "s<id>"): they see their rows marked, and private
    ones; everyone else of their class shares one.

    None when the corpus has no such board (the caller renders, which writes one), or
    off Postgres (the query is Postgres SQL; SQLite development renders every time).
    """
    if connection.vendor != "postgresql":
        return None
    board, corpus = BoardSnapshot._meta.db_table, Corpus._meta.db_table
    state, sub = ScoringState._meta.db_table, Submission._meta.db_table
    bodies = BoardBody._meta.db_table
    own = "s" if viewer == "staff" else "u"
    sql = (
        "SELECT b.id, k.key, CASE WHEN p.key = k.key THEN p.body END, w.viewer "
        f"FROM {board} b JOIN {corpus} c ON c.id = b.corpus_id "
        f"LEFT JOIN {state} st ON st.corpus_id = c.id "
        "CROSS JOIN LATERAL (SELECT md5(concat_ws('|', %(version)s, c.description, "
        "coalesce(st.scored_generation >= st.generation, true), "
        "(SELECT json_agg(json_build_array(s.id, s.name, s.public, s.owner_id, s.state) "
        f"ORDER BY s.id) FROM {sub} s WHERE s.corpus_id = c.id "
        "AND s.state = ANY(%(states)s)))) "
        "AS key OFFSET 0) k "  # OFFSET 0: computed once, not once per use of k.key
        "CROSS JOIN LATERAL (SELECT CASE WHEN %(user)s::int IS NOT NULL AND EXISTS (SELECT 1 "
        f"FROM {sub} s WHERE s.corpus_id = c.id AND s.owner_id = %(user)s "
        "AND s.state = ANY(%(states)s)) THEN %(own)s ELSE %(viewer)s END AS viewer) w "
        f"LEFT JOIN {bodies} p ON p.board_id = b.id AND p.part = %(part)s "
        "AND p.viewer = w.viewer "
        "WHERE c.tag = %(tag)s AND b.scheme = %(scheme)s AND b.kind = %(kind)s "
        "AND b.metric = %(metric)s")
    params = {"version": render_version(), "states": list(ACTIVE_STATES), "user": user_id,
              "own": f"{own}{user_id}", "viewer": viewer, "part": part, "tag": tag,
              "scheme": scheme, "kind": kind, "metric": metric}
    with connection.cursor() as cur:
        prepared.execute(_raw_text(cur), "kbpo_board_body", sql, params, _BOARD_TYPES)
        got: Sequence[Any] | None = cur.fetchone()
    return None if got is None else Lookup(got[0], got[1].decode(), got[2], got[3].decode())


# A body already stored under the same key is left as it is: the requests that find the
# body missing after a change (every open report's poll, say) render it alike, and only
# the first writes a row version; the others lock the row and write nothing.
_CHANGED = " WHERE {0}.key IS DISTINCT FROM EXCLUDED.key"


def _upsert(sql: str, params: list[Any]) -> None:
    try:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(sql, params)
    except DatabaseError:  # the board (or submission) went meanwhile: nothing to keep
        pass


def store(found: Lookup, part: str, body: str) -> None:
    """Keep `body` under the key read before it was rendered: if the live rows changed
    in between, the next request sees another key and renders again, never the reverse."""
    table, boards = BoardBody._meta.db_table, BoardSnapshot._meta.db_table
    # Only while the board is there: rendering may have replaced it (boards of another
    # deploy are rendered again on first read, snapshot.load), and a body kept for the
    # old one would fail the foreign key at commit.
    sql = (f"INSERT INTO {table} (board_id, part, viewer, key, body) "
           f"SELECT %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM {boards} WHERE id = %s) "
           "ON CONFLICT (board_id, part, viewer) "
           "DO UPDATE SET key = EXCLUDED.key, body = EXCLUDED.body" + _CHANGED.format(table))
    _upsert(sql, [found.board_id, part, found.viewer, found.key, body, found.board_id])


def response(body: bytes, part: str) -> HttpResponse:
    resp = HttpResponse(body, content_type=PARTS[part])
    # The same URL answers differently to a logged-in visitor.
    patch_vary_headers(resp, ["Cookie"])
    return resp


# --- Report bodies ------------------------------------------------------------------------


def _fp(table: str, alias: str, where: str, *joined: str) -> str:
    """A fingerprint of a set of rows: their count, and sums of their row versions.

    Every insert or update writes a new tuple, at a new place (ctid), stamped with the
    writing transaction (xmin), so a committed change alters the count or the sums:
    the sum of a hash of (ctid, xmin) moves by a pseudo-random amount per changed
    row, which even an update inside the transaction that wrote the row shows; the
    plain sum of xmin rises with any change from a newer transaction. (Vacuum moving
    tuples only changes the key: a needless re-render, never a stale page.)"""
    sums = " || ':' || ".join(
        f"coalesce(sum({a}.xmin::text::bigint), 0) || ':' || "
        f"coalesce(sum(hashtext({a}.ctid::text || {a}.xmin::text)), 0)"
        for a in (alias, *joined))
    return f"(SELECT count(*) || ':' || {sums} FROM {table} {alias} {where})"


@functools.cache
def _report_sql() -> str:
    t = {m.__name__: m._meta.db_table for m in (
        Submission, Corpus, SystemScore, ScoreRun, SampleDraw, RelationInstance, PairLabel,
        Question, Response, Hit, HitQuestion, Assignment, Bonus, SubmissionBudget,
        BudgetSettings, ExhaustiveDocument, GoldRelation, ReportBody, DrawLabelStamp)}
    parts = [
        "%(version)s", "s.x",
        f"(SELECT ctid::text || xmin::text FROM {t['Corpus']} WHERE id = s.corpus_id)",
        # Scores, the latest run and the history plot.
        _fp(t["SystemScore"], "ss", f"JOIN {t['ScoreRun']} r ON r.id = ss.run_id "
            "WHERE ss.submission_id = s.id", "r"),
        # Progress, per-predicate counts, verdicts, samples: draws and their labels,
        # through the corpus's stamp (annotations.DrawLabelStamp), which every committed
        # write of a draw or label on the corpus moves. The stamp moves at commit: a
        # transaction that has written (a test; never a request) reads the rows'
        # versions instead (one pass; a draw without a label adds nothing to the label
        # sums).
        "CASE WHEN txid_current_if_assigned() IS NULL THEN 'v' || coalesce((SELECT version "
        f"FROM {t['DrawLabelStamp']} WHERE corpus_id = s.corpus_id), 0) ELSE "
        + _fp(t["SampleDraw"], "sd", f"JOIN {t['RelationInstance']} ri ON ri.id = sd.instance_id "
              f"LEFT JOIN {t['PairLabel']} pl ON pl.pair_id = ri.pair_id "
              "WHERE sd.submission_id = s.id", "pl") + " END",
        # progress.json's newest run on the corpus (one that did not score this
        # submission too).
        f"(SELECT id FROM {t['ScoreRun']} cr WHERE cr.corpus_id = s.corpus_id "
        "AND cr.status = %(complete)s ORDER BY cr.finished_at DESC, cr.id DESC LIMIT 1)",
        # The questions it asked and their answers.
        _fp(t["Question"], "q", "WHERE q.requested_by_id = s.id"),
        _fp(t["Response"], "a", f"JOIN {t['Question']} q ON q.id = a.question_id "
            "WHERE q.requested_by_id = s.id"),
        # Spend: its HITs, their questions (controls), assignments, bonuses, the caps.
        _fp(t["Hit"], "h", "WHERE h.submission_id = s.id"),
        _fp(t["HitQuestion"], "hq", f"JOIN {t['Hit']} h ON h.id = hq.hit_id "
            f"JOIN {t['Question']} q ON q.id = hq.question_id WHERE h.submission_id = s.id",
            "q"),
        _fp(t["Assignment"], "asg", f"JOIN {t['Hit']} h ON h.id = asg.hit_id "
            "WHERE h.submission_id = s.id"),
        _fp(t["Bonus"], "bo", f"JOIN {t['Assignment']} asg ON asg.id = bo.assignment_id "
            f"JOIN {t['Hit']} h ON h.id = asg.hit_id WHERE h.submission_id = s.id"),
        _fp(t["SubmissionBudget"], "sb", "WHERE sb.submission_id = s.id"),
        _fp(t["BudgetSettings"], "bs", ""),
        # Crowd accuracy: stored on the run the report shows (its row is in the score
        # fingerprint above), so no label or answer elsewhere on the corpus is read.
        # Only without a run, or for a run that predates the stored section
        # (report.crowd measures it live), every label and answer on the corpus.
        f"CASE WHEN EXISTS (SELECT 1 FROM {t['ScoreRun']} r WHERE r.id = {{newest_run}} "
        "AND r.crowd IS NOT NULL) THEN 'stored' ELSE "
        + _fp(t["PairLabel"], "pl", f"JOIN {t['Question']} q ON q.id = pl.question_id "
              "WHERE q.corpus_id = s.corpus_id") + " || "
        + _fp(t["Response"], "a", f"JOIN {t['Question']} q ON q.id = a.question_id "
              "WHERE q.corpus_id = s.corpus_id") + " END",
        # Per-predicate recall reads the gold only when the newest run that scored the
        # submission did not store its counts (report.per_predicate); then the gold.
        f"CASE WHEN EXISTS (SELECT 1 FROM {t['SystemScore']} ss WHERE ss.run_id = {{newest_run}} "
        "AND ss.submission_id = s.id AND ss.exhaustive_found IS NOT NULL) THEN 'stored' "
        "ELSE " + _fp(t["ExhaustiveDocument"], "ed", "WHERE ed.corpus_id = s.corpus_id")
        + " || " + _fp(t["GoldRelation"], "gr", f"JOIN {t['ExhaustiveDocument']} ed "
                      "ON ed.document_id = gr.document_id WHERE ed.corpus_id = s.corpus_id")
        + " END",
    ]
    newest = (f"(SELECT r.finished_at FROM {t['SystemScore']} ss JOIN {t['ScoreRun']} r "
              "ON r.id = ss.run_id WHERE ss.submission_id = s.id AND r.status = %(complete)s "
              "ORDER BY r.finished_at DESC, r.id DESC LIMIT 1)")
    # The run report.latest_scores picks.
    newest_run = newest.replace("SELECT r.finished_at", "SELECT r.id")
    parts = [p.replace("{newest_run}", newest_run) for p in parts]
    return (
        "WITH s AS (SELECT id, owner_id, public, corpus_id, ctid::text || xmin::text AS x "
        f"FROM {t['Submission']} WHERE id = %(pk)s) "
        f"SELECT s.owner_id, s.public, {newest}, k.key, "
        "CASE WHEN p.key = k.key THEN p.body END FROM s "
        f"CROSS JOIN LATERAL (SELECT md5(concat_ws('|', {', '.join(parts)})) AS key "
        "OFFSET 0) k "
        f"LEFT JOIN {t['ReportBody']} p ON p.submission_id = s.id AND p.view = %(view)s")


# The `view` under which a report's progress.json body is stored.
PROGRESS = "progress.json"

# Submission ids are Postgres bigints. The URL accepts any digits, and a larger number
# passed to a raw query fails with "bigint out of range" (a 500, not the 404 it is).
MAX_ID = 2**63 - 1


def possible_id(pk: int) -> bool:
    """Whether `pk` can be a submission's id at all (the ORM answers "none" itself)."""
    return 0 < pk <= MAX_ID


@dataclass
class ReportLookup:
    owner_id: int
    public: bool
    since: datetime | None  # when the run the report shows finished
    key: str
    body: bytes | None  # UTF-8; None: nothing stored under the current key


_REPORT_TYPES = {"pk": "bigint", "view": "text", "version": "text", "complete": "text"}


def report_lookup(pk: int, view: str) -> ReportLookup | None:
    """The stored report of submission `pk` for query `view` (or its progress.json,
    view `PROGRESS`), if its key is current, with what decides who may see it: one
    query. The key covers the submission's row and corpus, its score rows and runs, the
    corpus's newest run, its draws and their labels (the corpus's `DrawLabelStamp`),
    questions and answers, HITs, assignments, bonuses and budget caps, and the code and
    settings (`render_version`). The crowd section and per-predicate recall come from
    the run (covered by its row); only for a run that predates them are the corpus's
    labels and answers, or its gold, in the key. So no set of rows in the key is the
    whole corpus's (the stamp is one row). Relation instances are written once, by the
    ingest that then moves the submission's state.

    None: no such submission, or not on Postgres (xmin and the stamp's triggers are
    Postgres's).
    """
    if connection.vendor != "postgresql" or not possible_id(pk):
        return None
    with connection.cursor() as cur:
        prepared.execute(_raw_text(cur), "kbpo_report_body", _report_sql(),
                         {"pk": pk, "view": view, "version": render_version(),
                          "complete": ScoreRun.Status.COMPLETE}, _REPORT_TYPES)
        got: Sequence[Any] | None = cur.fetchone()
    return None if got is None else ReportLookup(*got[:3], got[3].decode(), got[4])


def store_report(pk: int, view: str, key: str, body: str) -> None:
    table = ReportBody._meta.db_table
    sql = (f"INSERT INTO {table} (submission_id, view, key, body) "
           "VALUES (%s, %s, %s, %s) ON CONFLICT (submission_id, view) "
           "DO UPDATE SET key = EXCLUDED.key, body = EXCLUDED.body" + _CHANGED.format(table))
    _upsert(sql, [pk, view, key, body])


__all__ = ["MAX_ID", "PARTS", "PROGRESS", "SLOTS", "Lookup", "ReportLookup", "anonymous_request",
           "fill", "keep_private", "lookup", "nav", "possible_id", "private_for_viewers",
           "render_version", "report_lookup", "response", "slotted", "storable", "store",
           "store_report", "viewer_class"]
