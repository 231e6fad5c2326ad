"""A score run's stored boards written to Postgres: every scheme × kind × metric in one
statement, or — for the schemes a live run carried from an older run — that run's boards
moved to the new run with its head (estimation/snapshot.py renders the rest)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.utils import timezone

from . import leaderboard as lb
from .models import METRICS, BoardBody, BoardSnapshot, ScoreRun
from .stored_pages import render_version


def copyable(run: ScoreRun, prev: ScoreRun | None, oldest: dict[str, int | None]
             ) -> dict[str, int]:
    """{scheme: generation} of the schemes whose boards can be copied from ``prev``: every
    row carried (``oldest``, the oldest generation of a scheme's rows, below ``run``'s),
    each of prev's boards of it there and rendered by this code."""
    if prev is None or connection.vendor != "postgresql":
        return {}
    out = {s: g for s, g in oldest.items() if s in lb.BOARD_SCHEMES
           and g is not None and g < run.generation}
    have: dict[str, int] = {}
    for scheme, version in BoardSnapshot.objects.filter(run=prev, scheme__in=out) \
            .values_list("scheme", "head__version"):
        have[scheme] = have.get(scheme, 0) + (version == render_version())
    return {s: g for s, g in out.items() if have.get(s) == len(lb.KINDS) * len(METRICS)}


def copy_boards(run: ScoreRun, prev: ScoreRun | None, heads: dict[str, dict[str, Any]]
                ) -> list[int]:
    """Move ``prev``'s boards of the schemes in ``heads`` to ``run``, each with the head
    given for its scheme (the rest of a board's head, its frame, stays), their stored
    bodies dropped (they show the old head); their ids. Inside the caller's
    transaction, with the corpus's boards locked."""
    if prev is None or not heads:
        return []
    boards = BoardSnapshot.objects.filter(run=prev, scheme__in=heads)
    ids = list(boards.values_list("pk", flat=True))
    BoardBody.objects.filter(board_id__in=ids).delete()
    table = BoardSnapshot._meta.db_table
    now = timezone.now()
    with connection.cursor() as cur:
        for scheme, head in heads.items():
            cur.execute(f"UPDATE {table} SET run_id = %s, built_at = %s, head = head || "
                        "%s::jsonb WHERE run_id = %s AND scheme = %s",
                        [run.pk, now, json.dumps(head), prev.pk, scheme])
    return ids


def insert_boards(run: ScoreRun, kinds: Sequence[Any]) -> None:
    """`bulk_create` of the boards in one statement, each kind's JSON and CSV pieces
    (the same on its three boards) encoded, sent and parsed once.

    The boards are inserted in the order given (their ids ascend as with bulk_create).
    """
    f = {name: BoardSnapshot._meta.get_field(name).column
         for name in ("corpus", "run", "scheme", "kind", "metric", "built_at", "head", "rows",
                      "html", "api", "csv")}
    shared, boards, params = [], [], []
    for n, k in enumerate(kinds):
        shared.append("(%s, %s::jsonb, %s::jsonb)")
        params += [n, json.dumps(k.api), json.dumps(k.csv)]
    params += [run.corpus_id, run.pk, timezone.now()]
    for n, k in enumerate(kinds):
        for metric, head, rows, html in k.boards:
            boards.append("(%s, %s, %s, %s, %s, %s, %s)")
            params += [n, k.scheme, k.kind, metric, json.dumps(head), json.dumps(rows),
                       json.dumps(html)]
    # MATERIALIZED: each shared piece is parsed once, not once per board that uses it.
    sql = (f"WITH k (n, api, csv) AS MATERIALIZED (VALUES {', '.join(shared)}) "
           f"INSERT INTO {BoardSnapshot._meta.db_table} ("
           + ", ".join(f[name] for name in f) + ") "
           "SELECT %s, %s, b.scheme, b.kind, b.metric, %s, b.head::jsonb, b.rows::jsonb, "
           "b.html::jsonb, (SELECT api FROM k WHERE k.n = b.n), "
           "(SELECT csv FROM k WHERE k.n = b.n) "
           f"FROM (VALUES {', '.join(boards)}) b (n, scheme, kind, metric, head, rows, html)")
    with connection.cursor() as cur:
        cur.execute(sql, params)

