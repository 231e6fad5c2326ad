"""The stored boards are exactly what the straightforward rendering gave before it was
made fast: every cell, bar, label, JSON and CSV piece, byte for byte as Postgres stores
them, over the values that take the unusual paths (nothing estimable, an exact score,
ends equal to three decimals, an estimate without an interval, HTML, JSON and CSV
specials in the displayed fields)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.db import connection
from django.utils import timezone

from estimation import leaderboard as lb
from estimation import scoring, snapshot
from estimation.core.intervals import rounded_outward
from estimation.models import METRICS, BoardSnapshot, ScoreRun, SystemScore
from estimation.stored_pages import render_version
from estimation.templatetags.scores import ci
from kbpo.core.security import csv_safe
from submissions.models import State, Submission
from tests.factories import make_corpus, make_user

# (estimate, lo, hi) cases, cycled over systems, metrics and kinds.
CASES = [(0.61234, 0.5, 0.7), (None, 0.1, 0.9), (None, None, None), (0.25, 0.25, 0.25),
         (0.3331, 0.3331, 0.33312), (0.1 + 0.2, 1e-7, 0.999999), (1.0, 0.98, 1.0),
         (0.0, 0.0, 0.0), (0.5, 0.49999, 0.50001), (0.4, None, 0.6), (0.4, 0.3, None),
         (0.123456789, 0.0, 1.0)]


# --- the rendering as it was (estimation/snapshot.py before it was optimised) -----------
def _cell_html(m: lb.Metric) -> str:
    if m.lo is None:
        return '<span class="muted">—</span>'
    head = ('<span class="muted" title="Not estimable yet">n/a</span>' if m.estimate is None
            else snapshot._score(m.estimate))
    return f'<span class="score">{head}</span>{ci(m.lo, m.hi)}'


def _aria_interval(m: lb.Metric, pct: int) -> str:
    if m.exact:
        return "exact"
    if not _both(m.lo, m.hi):
        return f"{pct}% interval {snapshot._score(m.lo)} to {snapshot._score(m.hi)}"
    lo, hi = rounded_outward(m.lo, m.hi, 3)  # printed ends keep the truth
    return f"{pct}% interval {lo:.3f} to {hi:.3f}"


def _both(lo: float | None, hi: float | None) -> bool:
    return lo is not None and hi is not None and lo == lo and hi == hi


def _csv_ends(lo: float | None, hi: float | None) -> list[str]:
    """Both ends known: rounded outward (lo down, hi up); else each as it is."""
    if not _both(lo, hi):
        return [snapshot._csv_num(lo), snapshot._csv_num(hi)]
    return [f"{x:.6f}" for x in rounded_outward(lo, hi)]


def _reference(run: ScoreRun, kind: str, scores: list[SystemScore], subs: dict) -> dict:
    pct = round(100 * run.confidence)
    grid = snapshot._grid(snapshot.TICKS)
    api, csv_cells, metrics_of, cells_of, tails = [], [], [], [], {}
    for sc in scores:
        sub, info = sc.submission, subs[sc.submission_id]
        metrics = {m: lb.Metric(*sc.interval(m, kind)) for m in METRICS}
        metrics_of.append(metrics)
        cells_of.append({m: _cell_html(metrics[m]) for m in METRICS})
        cost = str(sc.cost_usd.quantize(Decimal("0.01")))
        dropped = sub.n_dropped if sub.drop_invalid else None
        api.append({"owner": info.owner, "baseline": sub.is_baseline,
                    "paper_url": sub.paper_url or None, "method": sub.method_description or None,
                    "labels_used": sc.labels_used, "draws": sc.draws,
                    "pending_draws": sc.pending, "cost_usd": cost, "lines_dropped": dropped,
                    **{m: metrics[m].as_dict() for m in METRICS}})
        csv_cells.append(
            [str(csv_safe(info.owner)), str(sub.is_baseline)]
            + [v for m in METRICS for v in (
                snapshot._csv_num(metrics[m].estimate),
                *_csv_ends(metrics[m].lo, metrics[m].hi),
                str(metrics[m].exact))]
            + [str(sc.labels_used), str(sc.draws), str(sc.pending), cost,
               str(csv_safe(sub.paper_url or "")), "" if dropped is None else str(dropped)])
        tails[sc.pk] = f'</svg></td><td class="num">{intcomma(sc.labels_used)}</td></tr>\n'
    boards = {}
    for metric in METRICS:
        rows, html = [], []
        for sc, metrics, cells in zip(scores, metrics_of, cells_of, strict=True):
            info, s = subs[sc.submission_id], metrics[metric]
            rows.append({"s": sc.submission_id, "e": s.estimate, "lo": s.lo, "hi": s.hi,
                         "p": sc.pending, "u": info.url,
                         "v": "" if s.estimate is None else str(s.estimate)})
            tds = "".join(f'<td class="num metric{" sorted" if m == metric else ""}">'
                          f"{cells[m]}</td>" for m in METRICS)
            bar = lb._bar(s, None)
            tail = ""
            if "lo" in bar:
                tail += (f'<line class="whisker" x1="{bar["lo"]}" x2="{bar["hi"]}" y1="12" '
                         'y2="12"/>'
                         f'<line class="cap" x1="{bar["lo"]}" x2="{bar["lo"]}" y1="7" y2="17"/>'
                         f'<line class="cap" x1="{bar["hi"]}" x2="{bar["hi"]}" y1="7" y2="17"/>')
            if "est" in bar:
                tail += f'<circle class="point" cx="{bar["est"]}" cy="12" r="4.5"/>'
            mid = (f'</div><div class="system-meta muted">{info.meta}</div></td>{tds}'
                   f'<td class="chart-col"><svg class="errbar" viewBox="0 0 {lb.BAR_WIDTH} 24" '
                   f'width="{lb.BAR_WIDTH}" height="24" role="img" aria-label="{metric} '
                   f'{snapshot._score(s.estimate)}, {_aria_interval(s, pct)}">'
                   f"{grid}")
            html.append([info.baseline, mid, tail + tails[sc.pk]])
        head = snapshot._head(run)
        head["open"], head["close"] = snapshot._frame(scores[0].scheme, metric, kind, pct)
        head["version"] = render_version()
        boards[metric] = {"head": head, "rows": rows, "html": html, "api": api,
                          "csv": csv_cells}
    return boards


# -----------------------------------------------------------------------------------------
def _world() -> tuple[ScoreRun, list[SystemScore]]:
    corpus = make_corpus()
    owners = [make_user("=cmd|' /C calc'!A0"), make_user("ada"), make_user('quo"te\\back')]
    subs = [Submission.objects.create(
        owner=owners[i % 3], corpus=corpus, name=f"S{i}", file="submissions/x.kb",
        state=State.SCORED, is_baseline=i == 1, drop_invalid=i % 3 == 0, n_dropped=i % 2,
        paper_url=["", "https://example.org/p?a=1&b=\"2\"", "=HYPERLINK(1)"][i % 3],
        method_description=["", "Line one\nline <two> & \"three\"", "tab\there \\ back"][i % 3])
        for i in range(7)]
    run = ScoreRun.objects.create(corpus=corpus, generation=1, draw_scheme="instance",
                                  confidence=0.9, started_at=timezone.now(),
                                  status=ScoreRun.Status.COMPLETE, finished_at=timezone.now(),
                                  duration_s=1.25, n_systems=7, n_labels=1234, n_draws=99)
    rows, k = [], 0
    for scheme in lb.BOARD_SCHEMES:
        for i, sub in enumerate(subs):
            values: dict[str, Any] = {}
            for kind in lb.KINDS:
                for stem in ("p", "r", "f1"):
                    est, lo, hi = CASES[k % len(CASES)]
                    k += 1
                    values.update({f"{stem}_{kind}": est, f"{stem}_{kind}_lo": lo,
                                   f"{stem}_{kind}_hi": hi})
            rows.append(SystemScore(run=run, submission=sub, scheme=scheme, **values,
                                    labels_used=[0, 7, 1234, 1234567][i % 4], draws=i,
                                    pending=i % 2 * 3, cost_usd=Decimal(i) / 4))
    scoring._insert_scores(rows)
    return run, rows


def _text(value: object) -> str:
    """The JSON as the database keeps it (jsonb's own text on Postgres)."""
    if connection.vendor != "postgresql":
        return json.dumps(value)
    with connection.cursor() as cur:
        cur.execute("SELECT %s::jsonb::text", [json.dumps(value)])
        return cur.fetchone()[0]


def _stored(run: ScoreRun) -> dict:
    parts = ("head", "rows", "html", "api", "csv")
    out = {}
    for b in BoardSnapshot.objects.filter(run=run):
        out[(b.scheme, b.kind, b.metric)] = {p: _text(getattr(b, p)) for p in parts}
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("in_hand", [True, False], ids=["rows in hand", "rows read back"])
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_stored_boards_equal_the_reference_rendering(in_hand: bool) -> None:
    run, rows = _world()
    assert snapshot.write_snapshots(run, rows if in_hand else None) == 24
    scores = list(SystemScore.objects.filter(run=run)
                  .select_related("submission", "submission__owner").order_by("pk"))
    subs = snapshot._subs(scores)
    stored = _stored(run)
    for scheme in lb.BOARD_SCHEMES:
        for kind in lb.KINDS:
            ref = _reference(run, kind, [sc for sc in scores if sc.scheme == scheme], subs)
            for metric in METRICS:
                got = stored[(scheme, kind, metric)]
                for part, value in ref[metric].items():
                    assert got[part] == _text(value), (scheme, kind, metric, part)
    html = "".join(b["html"] for b in stored.values())
    assert "0.33310–0.33312" in html and "n/a" in html and "exact" in html  # cases reached


@pytest.mark.django_db
def test_scores_copied_equal_scores_bulk_created() -> None:
    """On Postgres the run's rows go in by COPY: the same values as the ORM's INSERT."""
    run, rows = _world()
    again = ScoreRun.objects.create(corpus=run.corpus, generation=2, draw_scheme="instance",
                                    confidence=0.9, started_at=timezone.now())
    for row in rows:
        row.pk, row.run = None, again
    rows[0].exhaustive_found = {"per:title": [3, 1], "org:ä\\\"x\t": [2, 0]}
    rows[1].cost_usd, rows[2].p_joint = Decimal("12.345"), 1e-300
    SystemScore.objects.bulk_create(rows[:3])
    copied = ScoreRun.objects.create(corpus=run.corpus, generation=3, draw_scheme="instance",
                                     confidence=0.9, started_at=timezone.now())
    for row in rows:
        row.pk, row.run = None, copied
    scoring._insert_scores(rows[:3])

    def stored(r: ScoreRun) -> list[tuple]:
        fields = [f for f in scoring._FIELDS if f not in ("id", "run_id")]
        with connection.cursor() as cur:
            cur.execute(f"SELECT {', '.join(fields)} FROM estimation_systemscore "
                        "WHERE run_id = %s ORDER BY id", [r.pk])
            return cur.fetchall()

    assert stored(copied) == stored(again) and len(stored(copied)) == 3
