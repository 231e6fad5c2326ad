"""A score run's stored rows: built from the estimates, written by COPY, compared with the
latest run's, and — for a live run — the reweighted schemes' rows carried from the previous
run until the follow-up replaces them (estimation/scoring.py).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from decimal import Decimal

import numpy as np
from django.db import connection

from kbpo.core.models import Corpus
from submissions.staging import copy_text

from .core import Estimates
from .models import METRIC_COLUMNS, METRICS, BoardSnapshot, ScoreRun, SystemScore

# SystemScore's fields in its constructor's order: built from positional values, a model
# instance skips the keyword handling (400 rows per run at 100 systems).
FIELDS = [f.attname for f in SystemScore._meta.concrete_fields]
# What a run stores per system besides its keys and its generation stamp; a run whose
# rows and counts all equal the latest run's is not stored (see `unchanged`).
SCORE_FIELDS = [f for f in FIELDS if f not in {"id", "run_id", "generation"}]
RUN_COUNTS = ("draw_scheme", "estimator", "confidence", "n_systems", "n_labels", "n_draws",
              "n_exhaustive_documents", "n_exhaustive_instances")


def _column(values: np.ndarray) -> list[float | None]:
    """Each value as a float, NaN as None."""
    return [None if math.isnan(v) else v for v in np.asarray(values, np.float64).tolist()]


def score_rows(run: ScoreRun, ids: list[int], schemes: list[str], draw_scheme: str,
               res: Estimates, hard: dict[tuple[str, str, str], np.ndarray] | None,
               costs: dict[int, Decimal], found: dict[int, dict[str, list[int]]] | None,
               generation: int) -> list[SystemScore]:
    """The run's rows, scheme by scheme (each: `ids`' order), built column by column,
    stamped with the label ``generation`` they reflect. ``found``: the exhaustive
    counts, stored on the draw scheme's rows (None: that scheme is not among these)."""
    n = len(ids)
    if not n:
        return []  # (no system: the schemes may have no results at all)
    common = {"id": [None] * n, "run_id": [run.pk] * n, "submission_id": ids,
              "labels_used": [int(x) for x in np.asarray(res.labels_used).tolist()],
              "draws": [int(x) for x in np.asarray(res.n).tolist()],
              "pending": [int(x) for x in np.asarray(res.pending).tolist()],
              "cost_usd": [costs.get(sid, Decimal("0")) for sid in ids],
              "generation": [generation] * n}
    rows = []
    for scheme in schemes:
        block = res.results.get(scheme, {})
        cols = dict(common, scheme=[scheme] * n, exhaustive_found=(
            [found[sid] for sid in ids] if scheme == draw_scheme and found is not None
            else [None] * n))
        for metric in METRICS:
            stem = METRIC_COLUMNS[metric]
            for kind in ("joint", "simple"):
                iv = block[metric][kind]
                cols[f"{stem}_{kind}"] = _column(iv.estimate)
                cols[f"{stem}_{kind}_lo"] = _column(iv.lo)
                cols[f"{stem}_{kind}_hi"] = _column(iv.hi)
            cols[f"{stem}_joint_hard"] = ([None] * n if hard is None
                                          else _column(hard[(scheme, metric, "joint")]))
        rows += [SystemScore(*values) for values in zip(*(cols[f] for f in FIELDS),
                                                        strict=True)]
    return rows


def carried_rows(prev: ScoreRun | None, run: ScoreRun, ids: list[int],
                 schemes: Iterable[str]) -> list[SystemScore] | None:
    """The rows of ``schemes`` for the systems ``ids`` as ``prev`` stored them (every
    field, so that their boards can be copied), moved to ``run`` and keeping the
    generation they reflect (the follow-up recomputes them). None when ``prev`` lacks
    one of them (no run yet, a new system, another set of schemes): the run then
    computes them."""
    schemes = list(schemes)
    if not schemes:
        return []
    if prev is None:
        return None
    old = {(r.submission_id, r.scheme): r for r in
           SystemScore.objects.filter(run=prev, scheme__in=schemes, submission_id__in=ids)}
    if len(old) != len(ids) * len(schemes):
        return None
    out = []
    for scheme in schemes:
        for sid in ids:
            row = old[(sid, scheme)]
            row.generation = prev.generation if row.generation is None else row.generation
            row.id, row.pk, row.run_id = None, None, run.pk
            out.append(row)
    return out


def insert_scores(rows: list[SystemScore]) -> None:
    """`bulk_create` (the rows get no ids); on Postgres by COPY, which parses 400 rows of
    30 columns in a fraction of the time their INSERT takes."""
    if connection.vendor != "postgresql":
        SystemScore.objects.bulk_create(rows, batch_size=1000)
        return
    fields = [f for f in FIELDS if f != "id"]
    found = fields.index("exhaustive_found")
    values = [[getattr(row, f) for f in fields] for row in rows]
    for v in values:  # the JSON field's text, as the ORM would send it
        if v[found] is not None:
            v[found] = json.dumps(v[found])
    columns = ", ".join(SystemScore._meta.get_field(f).column for f in fields)
    with connection.cursor() as cur:
        cur.copy_expert(f"COPY {SystemScore._meta.db_table} ({columns}) FROM STDIN",
                        io.StringIO(copy_text(values, len(fields))))


def unchanged(corpus: Corpus, run: ScoreRun, rows: list[SystemScore]) -> ScoreRun | None:
    """The latest complete run, if it stored exactly these rows and counts (a recompute
    that found nothing new, e.g. a re-aggregation that left every label as it was).

    Pages show that run as before, and the generation protocol still counts the run as
    done; only the new run's timestamp and duration would have differed. The crowd
    section is not compared: `recompute` updates it on the kept run when it moved.
    """
    prev = ScoreRun.latest(corpus)
    if prev is None or any(getattr(prev, f) != getattr(run, f) for f in RUN_COUNTS):
        return None
    stored = {(r["submission_id"], r["scheme"]): r
              for r in SystemScore.objects.filter(run=prev).values(*SCORE_FIELDS)}
    if len(stored) != len(rows):
        return None
    for row in rows:
        old = stored.get((row.submission_id, row.scheme))
        if old is None or any(old[f] != getattr(row, f) for f in SCORE_FIELDS):
            return None
    if not BoardSnapshot.objects.filter(corpus=corpus, run=prev).exists():
        return None  # its boards are missing (or another run's): write a new run
    return prev


__all__ = ["FIELDS", "RUN_COUNTS", "SCORE_FIELDS", "carried_rows", "insert_scores",
           "score_rows", "unchanged"]
