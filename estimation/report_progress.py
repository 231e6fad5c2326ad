"""The body of a report's progress.json, which every open report polls, in one query.

It says the same as `report.progress`, `report.latest_scores` and `scoring.latest_run`
put together (tests compare them), but the database does all of it in one round trip
with no ORM compilation: the submission's visibility fields, the draw and label
counts, the crowd questions' answers, the newest run that scored it (its draw scheme's
joint intervals) and the corpus's newest run.

`progress_json` serves that body stored (`ReportBody`, view `stored_pages.PROGRESS`)
under the report's key, which moves with everything the body shows: a poll is then one
indexed read, like a stored report page; a poll after a change computes it again.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection

from annotations.models import (
    PairLabel,
    Question,
    QuestionState,
    Response,
    SampleDraw,
    TaskKind,
)
from kbpo.core import prepared
from submissions.models import RelationInstance, Submission

from . import report, stored_pages
from .models import BOUNDS, METRIC_COLUMNS, METRICS, ScoreRun, SystemScore, is_exact
from .report import Progress
from .scoring import latest_run

_COLUMNS = [f"{METRIC_COLUMNS[m]}_joint{b}" for m in METRICS for b in BOUNDS]


@functools.cache
def _sql() -> str:
    sub, draw, inst = (Submission._meta.db_table, SampleDraw._meta.db_table,
                       RelationInstance._meta.db_table)
    label, question, response = (PairLabel._meta.db_table, Question._meta.db_table,
                                 Response._meta.db_table)
    run, score = ScoreRun._meta.db_table, SystemScore._meta.db_table
    scores = ", ".join(f"ss.{c}" for c in _COLUMNS)
    return (
        "WITH s AS (SELECT id, owner_id, public, state, corpus_id "
        f"FROM {sub} WHERE id = %(pk)s), "
        "d AS (SELECT count(sd.id) AS draws, count(DISTINCT ri.pair_id) AS pairs, "
        "count(DISTINCT ri.pair_id) FILTER (WHERE pl.id IS NOT NULL) AS labelled "
        f"FROM {draw} sd JOIN {inst} ri ON ri.id = sd.instance_id "
        f"LEFT JOIN {label} pl ON pl.pair_id = ri.pair_id WHERE sd.submission_id = %(pk)s), "
        "q AS (SELECT coalesce(sum(q.answers_needed), 0) AS needed, "
        "coalesce(sum(least(q.answers_needed, r.got)), 0) AS received, "
        "count(*) FILTER (WHERE q.state = %(open)s) AS open "
        f"FROM {question} q CROSS JOIN LATERAL (SELECT count(*) AS got FROM {response} "
        "WHERE question_id = q.id AND counted) r "
        "WHERE q.requested_by_id = %(pk)s AND q.kind = %(relation)s "
        "AND q.state <> %(cancelled)s), "
        f"lr AS (SELECT r.id, r.draw_scheme FROM {score} ss JOIN {run} r ON r.id = ss.run_id "
        "WHERE ss.submission_id = %(pk)s AND r.status = %(complete)s "
        "ORDER BY r.finished_at DESC, r.id DESC LIMIT 1) "
        "SELECT s.owner_id, s.public, s.state, d.draws, d.pairs, d.labelled, q.needed, "
        "q.received, q.open, lr.id, "
        f"(SELECT id FROM {run} cr WHERE cr.corpus_id = s.corpus_id "
        "AND cr.status = %(complete)s ORDER BY cr.finished_at DESC, cr.id DESC LIMIT 1), "
        f"ss.id, {scores} "
        "FROM s CROSS JOIN d CROSS JOIN q LEFT JOIN lr ON true "
        f"LEFT JOIN {score} ss ON ss.run_id = lr.id AND ss.submission_id = s.id "
        "AND ss.scheme = lr.draw_scheme")


def may_see(user: object, owner: int | None, public: bool) -> bool:
    """The rule of `api_reports.report_visible`. A public report is decided before the
    user is touched: `request.user` is lazy, so its session and user queries are then
    never made (a poll of a public report stays one query)."""
    if public:
        return True
    me = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
    return bool(getattr(user, "is_staff", False) or (me is not None and me == owner))


def _portable_body(pk: int, user: object) -> dict[str, Any] | None:
    # SQLite (make demo) has no LATERAL: the same body through the report's functions.
    sub = Submission.objects.filter(pk=pk).first()
    if sub is None or not may_see(user, sub.owner_id, sub.public):
        return None
    run, scores = report.latest_scores(sub)
    main = scores.get(run.draw_scheme) if run else None
    corpus_run = latest_run(sub.corpus_id)
    body: dict[str, Any] = {
        "submission": sub.pk, "state": sub.state, **report.progress(sub).as_dict(),
        "run": run.pk if run else None, "corpus_run": corpus_run.pk if corpus_run else None}
    if main is not None:
        for m in METRICS:
            est, lo, hi = main.interval(m)
            body[m] = {"estimate": est, "lo": lo, "hi": hi, "exact": is_exact(lo, hi)}
    return body


def progress_body(pk: int, user: object) -> dict[str, Any] | None:
    """progress.json for `user`; None when there is no such submission or they may not
    see its report (the rule of `api_reports.report_visible`)."""
    if connection.vendor != "postgresql":
        return _portable_body(pk, user)
    if not stored_pages.possible_id(pk):
        return None
    with connection.cursor() as cur:
        # Prepared once per connection: Postgres then skips planning it on every poll.
        prepared.execute(cur, "kbpo_report_progress", _sql(),
                         {"pk": pk, "open": QuestionState.OPEN, "relation": TaskKind.RELATION,
                          "cancelled": QuestionState.CANCELLED,
                          "complete": ScoreRun.Status.COMPLETE},
                         {"pk": "bigint", **dict.fromkeys(
                             ("open", "relation", "cancelled", "complete"), "text")})
        got = cur.fetchone()
    if got is None:
        return None
    owner, public, state, draws, pairs, labelled, needed, received, open_q, run, corpus_run = \
        got[:11]
    if not may_see(user, owner, public):
        return None
    body: dict[str, Any] = {
        "submission": pk, "state": state,
        **Progress(pairs, labelled, draws, int(needed), int(received), open_q).as_dict(),
        "run": run, "corpus_run": corpus_run}
    main, values = got[11], got[12:]
    if main is not None:  # the run scored it under its draw scheme
        for i, m in enumerate(METRICS):
            est, lo, hi = values[3 * i:3 * i + 3]
            body[m] = {"estimate": est, "lo": lo, "hi": hi, "exact": is_exact(lo, hi)}
    return body


def progress_json(pk: int, user: object) -> str | bytes | None:
    """progress.json's text for `user` (None as for `progress_body`): the stored body
    (UTF-8 bytes, as read) if its key is current, else computed and stored. The body is
    the same for everyone who may see the report; who may is decided from the live row
    read with the key."""
    found = stored_pages.report_lookup(pk, stored_pages.PROGRESS)
    if found is None and connection.vendor == "postgresql":
        return None  # no such submission
    if found is not None:
        if not may_see(user, found.owner_id, found.public):
            return None
        if found.body is not None:
            return found.body
    body = progress_body(pk, user)
    if body is None:
        return None
    text = json.dumps(body, cls=DjangoJSONEncoder)  # what JsonResponse would send
    if found is not None:
        stored_pages.store_report(pk, stored_pages.PROGRESS, found.key, text)
    return text


__all__ = ["may_see", "progress_body", "progress_json"]
