"""Stored leaderboards: written once per score run, served without estimation or templates.

`write_snapshots(run)` renders, for every scheme × estimator (kind) × sort metric, one
`BoardSnapshot` holding each system's sort keys plus its HTML, JSON and CSV pieces
already formatted. A request then reads that one row and a small live query of the
corpus's active submissions (public flag, owner, state, name): those decide who may
see which row, so visibility is exactly as live as before, and ranks, the leader and
"tied with #1" are recomputed among the visible rows (a hidden row leaves no gap).

The rules are those of `estimation/leaderboard.py` (`build`), which stays the
reference: tests check that both give the same rows for every kind of viewer.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.humanize.templatetags.humanize import intcomma
from django.core.signals import setting_changed
from django.db import IntegrityError, connection, transaction
from django.dispatch import receiver
from django.template.defaultfilters import linebreaksbr
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape

from kbpo.core.models import Corpus
from kbpo.core.security import csv_safe
from submissions.models import ACTIVE_STATES, State, Submission

from . import leaderboard as lb
from .board_rows import copy_boards, copyable, insert_boards
from .core.intervals import rounded_outward
from .models import (
    BOUNDS,
    METRIC_COLUMNS,
    METRICS,
    BoardSnapshot,
    ScoreRun,
    ScoringState,
    SystemScore,
    interval_ends,
    is_exact,
)
from .stored_pages import render_version
from .templatetags.scores import ci

logger = logging.getLogger(__name__)

# The fields a snapshot bakes in: a change to one of them re-renders the corpus's
# snapshots (name, public flag, owner and state are read live instead).
DISPLAY_FIELDS = frozenset({"is_baseline", "paper_url", "method_description", "owner",
                            "owner_id"})

CSV_HEADER = ["rank", "submission", "name", "owner", "baseline", "public", "state",
              "refining", "tied_with_leader"]
for _m in METRICS:
    CSV_HEADER += [_m, f"{_m}_lo", f"{_m}_hi", f"{_m}_exact"]
# lines_dropped: empty unless the owner chose partial acceptance (as in the JSON).
CSV_HEADER += ["labels_used", "draws", "pending_draws", "cost_usd", "paper_url",
               "lines_dropped"]


def _score(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _csv_num(v: float | None) -> str:
    return "" if v is None else f"{v:.6f}"


def csv_ends(lo: float | None, hi: float | None) -> list[str]:
    """The ends at 6 decimals, rounded outward (lo down, hi up)."""
    if lo is None or hi is None or lo != lo or hi != hi:
        return [_csv_num(lo), _csv_num(hi)]
    return [f"{x:.6f}" for x in rounded_outward(lo, hi)]


def _ends(lo: float | None, hi: float | None, exact: bool) -> tuple[str, str, str]:
    """`ci(lo, hi)` of a cell, and `_score` of both ends (the bar's label)."""
    if type(lo) is float and type(hi) is float and lo == lo and hi == hi:  # not NaN
        if exact:
            return ci(lo, hi), f"{lo:.3f}", f"{hi:.3f}"
        # Rounded outward (lo down, hi up): the printed interval keeps the truth.
        lo3, hi3 = (f"{x:.3f}" for x in rounded_outward(lo, hi, 3))
        a, b = interval_ends(lo, hi)
        return f'<span class="ci">{a}–{b}</span>', lo3, hi3
    return ci(lo, hi), _score(lo), _score(hi)  # None, NaN or not a float: the filter's rules


def _cell_html(est: float | None, lo: float | None, ci_html: str) -> str:
    if lo is None:
        return '<span class="muted">—</span>'
    head = ('<span class="muted" title="Not estimable yet">n/a</span>' if est is None
            else f"{est:.3f}")
    return f'<span class="score">{head}</span>{ci_html}'


def _dropped_badge(sub: Submission) -> str:
    if not sub.drop_invalid:
        return ""
    n = sub.n_dropped
    return (f' <span class="badge{" badge-warn" if n else ""}" title="Submitted with '
            'drop-invalid: invalid lines of the file were dropped, the rest evaluated">'
            f'{intcomma(n)} line{"" if n == 1 else "s"} dropped</span>')


def _grid(ticks: list[dict[str, Any]]) -> str:
    return "".join(f'<line class="grid" x1="{t["x"]}" x2="{t["x"]}" y1="2" y2="22"/>'
                   for t in ticks)


def _meta_html(sub: Submission) -> str:
    out = escape(sub.owner.get_username())
    if sub.paper_url:
        out += (f' · <a href="{escape(sub.paper_url)}" rel="nofollow noopener noreferrer">'
                "paper</a>")
    if sub.method_description:
        out += (' · <details class="method"><summary>method</summary><p>'
                f"{linebreaksbr(sub.method_description, autoescape=True)}</p></details>")
    return out


TICKS = [{"x": lb._x(t), "label": f"{t:.2f}".rstrip("0").rstrip(".") or "0"}
         for t in (0, 0.25, 0.5, 0.75, 1.0)]


@dataclass
class _Sub:
    """What a board shows of one submission, formatted once per run."""

    url: str
    meta: str
    baseline: str
    owner: str
    csv_owner: str
    csv_paper: str


def _subs(scores: list[SystemScore]) -> dict[int, _Sub]:
    out: dict[int, _Sub] = {}
    for sc in scores:
        sub = sc.submission
        if sub.pk not in out:
            out[sub.pk] = _Sub(
                reverse("submission-evaluation", args=[sub.pk]), _meta_html(sub),
                (' <span class="badge badge-info">baseline</span>' if sub.is_baseline else "")
                + _dropped_badge(sub),
                sub.owner.get_username(), str(csv_safe(sub.owner.get_username())),
                str(csv_safe(sub.paper_url or "")))
    return out


def _head(run: ScoreRun, scheme_generation: int | None = None) -> dict[str, Any]:
    """What a board says about its run, with the label generation its scheme's rows
    reflect (`ScoreRun.stamp`; None: the run's)."""
    return {"run": {"id": run.pk, "finished_at": run.finished_at.isoformat()
                    if run.finished_at else None, "labels": run.n_labels,
                    "draws": run.n_draws, "systems": run.n_systems,
                    "exhaustive_documents": run.n_exhaustive_documents,
                    "duration_s": run.duration_s, "draw_scheme": run.draw_scheme,
                    "estimator": run.estimator, **run.stamp(scheme_generation)},
            "confidence": run.confidence}


def _oldest(run: ScoreRun, rows: list[SystemScore]) -> int | None:
    """The oldest label generation a scheme's rows reflect (a reweighted scheme carried
    from an older run is updating until its follow-up replaces it)."""
    return min((run.generation if sc.generation is None else sc.generation for sc in rows),
               default=None)


# (scheme, metric, kind, confidence %) -> the board's opening and closing HTML: fixed for
# a process's life (templates change with a deploy), forgotten when a setting changes.
_FRAMES: dict[tuple[str, str, str, int], tuple[str, str]] = {}


@receiver(setting_changed)
def _forget_frames(**kwargs: object) -> None:
    _FRAMES.clear()


def _frame(scheme: str, metric: str, kind: str, pct: int) -> tuple[str, str]:
    key = (scheme, metric, kind, pct)
    if key not in _FRAMES:
        frame = {"board": {"scheme": scheme, "metric": metric, "kind": kind, "ticks": TICKS,
                           "confidence_pct": pct},
                 "metrics": lb.METRIC_LABELS, "bar_width": lb.BAR_WIDTH,
                 "sort_label": lb.METRIC_LABELS[metric]}
        _FRAMES[key] = (render_to_string("estimation/_board_open.html", frame),
                        render_to_string("estimation/_board_close.html", frame))
    return _FRAMES[key]


# Per kind, per metric: the SystemScore attributes of (estimate, lo, hi).
_COLUMNS = {kind: [tuple(f"{METRIC_COLUMNS[m]}_{kind}{b}" for b in BOUNDS) for m in METRICS]
            for kind in lb.KINDS}
_TD, _TD_SORTED = '<td class="num metric">', '<td class="num metric sorted">'


@dataclass
class _Kind:
    """The boards of one scheme × kind: per sort metric its head, rows and HTML pieces;
    the JSON and CSV pieces, the same whatever the sort, once."""

    scheme: str
    kind: str
    boards: list[tuple[str, dict[str, Any], list[Any], list[Any]]]  # metric, head, rows, html
    api: list[dict[str, Any]]
    csv: list[list[str]]


def _render_kind(head: dict[str, Any], pct: int, scheme: str, kind: str,
                 scores: list[SystemScore], subs: dict[int, _Sub],
                 labels: dict[int, str]) -> _Kind:
    """The boards of one scheme × kind, one per sort metric, from the run's rows.

    Every (row, metric) is formatted once: its cell appears on all three boards (sorted
    on one), its bar and interval label on the board sorted by it.
    """
    grid = _grid(TICKS)
    columns = _COLUMNS[kind]
    api, csv_cells = [], []
    rows: list[list[dict[str, Any]]] = [[] for _ in METRICS]
    html: list[list[list[str]]] = [[] for _ in METRICS]
    for sc in scores:
        sub, info = sc.submission, subs[sc.submission_id]
        cells, bars, metrics, csv_nums = [], [], {}, []
        for metric, (e, lo_name, hi_name) in zip(METRICS, columns, strict=True):
            est, lo, hi = getattr(sc, e), getattr(sc, lo_name), getattr(sc, hi_name)
            exact = is_exact(lo, hi)
            ci_html, lo3, hi3 = _ends(lo, hi, exact)
            cells.append(_cell_html(est, lo, ci_html))
            aria = "exact" if exact else f"{pct}% interval {lo3} to {hi3}"
            bars.append((est, lo, hi, f"{metric} {_score(est)}, {aria}"))
            metrics[metric] = {"estimate": est, "lo": lo, "hi": hi, "exact": exact}
            csv_nums += [_csv_num(est), *csv_ends(lo, hi), str(exact)]
        cost = str(sc.cost_usd.quantize(Decimal("0.01")))
        dropped = sub.n_dropped if sub.drop_invalid else None
        api.append({"owner": info.owner, "baseline": sub.is_baseline,
                    "paper_url": sub.paper_url or None, "method": sub.method_description or None,
                    "labels_used": sc.labels_used, "draws": sc.draws,
                    "pending_draws": sc.pending, "cost_usd": cost,
                    "lines_dropped": dropped, **metrics})
        csv_cells.append(
            [info.csv_owner, str(sub.is_baseline), *csv_nums,
             str(sc.labels_used), str(sc.draws), str(sc.pending), cost,
             info.csv_paper, "" if dropped is None else str(dropped)])
        tail_end = f'</svg></td><td class="num">{labels[sc.labels_used]}</td></tr>\n'
        plain = [f"{_TD}{c}</td>" for c in cells]
        for i, (est, lo, hi, aria) in enumerate(bars):
            rows[i].append({"s": sc.submission_id, "e": est, "lo": lo, "hi": hi,
                            "p": sc.pending, "u": info.url,
                            "v": "" if est is None else str(est)})
            tds = "".join(f"{_TD_SORTED}{cells[j]}</td>" if j == i else td
                          for j, td in enumerate(plain))
            tail = ""
            if lo is not None and hi is not None:
                x0, x1 = lb._x(lo), lb._x(hi)
                tail = (f'<line class="whisker" x1="{x0}" x2="{x1}" y1="12" y2="12"/>'
                        f'<line class="cap" x1="{x0}" x2="{x0}" y1="7" y2="17"/>'
                        f'<line class="cap" x1="{x1}" x2="{x1}" y1="7" y2="17"/>')
            if est is not None:
                tail += f'<circle class="point" cx="{lb._x(est)}" cy="12" r="4.5"/>'
            mid = (f'</div><div class="system-meta muted">{info.meta}</div></td>{tds}'
                   f'<td class="chart-col"><svg class="errbar" viewBox="0 0 {lb.BAR_WIDTH} 24" '
                   f'width="{lb.BAR_WIDTH}" height="24" role="img" aria-label="{aria}">{grid}')
            html[i].append([info.baseline, mid, tail + tail_end])
    boards = []
    for i, metric in enumerate(METRICS):
        opening, closing = _frame(scheme, metric, kind, pct)
        # The code and templates that rendered it: "version".
        boards.append((metric, {**head, "open": opening, "close": closing,
                                "version": render_version()}, rows[i], html[i]))
    return _Kind(scheme, kind, boards, api, csv_cells)


def write_snapshots(run: ScoreRun, scores: list[SystemScore] | None = None,
                    carried_from: ScoreRun | None = None) -> int:
    """Store the leaderboards of `run` (every scheme it scored × kind × metric),
    replacing the corpus's previous ones.

    `scores`: the run's rows as just stored, sparing the read back; their submissions
    are read afresh either way (the displayed fields are live). `carried_from`: the run
    whose rows `run` carried for the schemes it did not estimate: its boards of them
    move to `run` with `run`'s head rather than being rendered again (the same rows, the
    same pieces), when they are all there and rendered by this code.
    """
    if scores is None:
        scores = list(SystemScore.objects.filter(run=run)
                      .select_related("submission", "submission__owner")
                      .order_by("submission_id"))
    else:
        subs_by_id = Submission.objects.select_related("owner").in_bulk(
            {sc.submission_id for sc in scores})
        scores = sorted(scores, key=lambda sc: sc.submission_id)
        for sc in scores:
            sc.submission = subs_by_id[sc.submission_id]
    subs = _subs(scores)
    by_scheme: dict[str, list[SystemScore]] = {}
    for sc in scores:
        by_scheme.setdefault(sc.scheme, []).append(sc)
    copy = copyable(run, carried_from, {s: _oldest(run, rows) for s, rows in by_scheme.items()})
    pct = round(100 * run.confidence)
    labels = {n: intcomma(n) for n in {sc.labels_used for sc in scores}}
    kinds = [_render_kind(_head(run, _oldest(run, rows)), pct, scheme, kind, rows, subs, labels)
             for scheme, rows in by_scheme.items() if scheme in lb.BOARD_SCHEMES
             and scheme not in copy for kind in lb.KINDS]
    with transaction.atomic():
        # Lock the old boards first: a stored body (estimation/stored_pages.py) inserted
        # for one of them now waits and then fails, instead of slipping in after the
        # cascade collected the bodies and breaking this commit's foreign key check.
        list(BoardSnapshot.objects.select_for_update().filter(corpus_id=run.corpus_id)
             .values_list("pk", flat=True))
        copied = copy_boards(run, carried_from, {s: _head(run, g) for s, g in copy.items()})
        # only(): the cascade fetches the old boards; their bodies need not be decoded.
        BoardSnapshot.objects.filter(corpus_id=run.corpus_id).exclude(pk__in=copied) \
            .only("pk").delete()
        if connection.vendor == "postgresql":
            if kinds:
                insert_boards(run, kinds)
        else:
            BoardSnapshot.objects.bulk_create(
                BoardSnapshot(corpus_id=run.corpus_id, run=run, scheme=k.scheme, kind=k.kind,
                              metric=metric, head=h, rows=rows, html=html, api=k.api,
                              csv=k.csv)
                for k in kinds for metric, h, rows, html in k.boards)
    return sum(len(k.boards) for k in kinds) + len(copied)


def refresh_corpus(corpus_id: int) -> None:
    """Re-render the corpus's snapshots from its latest run (displayed fields changed)."""
    run = ScoreRun.latest(corpus_id)
    if run is not None:
        write_snapshots(run)


@dataclass
class Stored:
    """A snapshot as read for one request, with the corpus's live submission rows."""

    corpus: Corpus
    up_to_date: bool
    scheme: str
    kind: str
    metric: str
    head: dict[str, Any]
    rows: list[dict[str, Any]]
    part: list[Any]  # the requested format's per-row pieces ("html", "api" or "csv")
    live: list[list[Any]]  # active submissions: [id, name, public, owner_id, state]


def _json(v: Any) -> Any:
    return json.loads(v) if isinstance(v, str | bytes) else v


def _read(tag: str, scheme: str, metric: str, kind: str, part: str) -> Stored | None:
    # One round trip, no ORM compilation: this is the whole cost of a request.
    snap, corpus = BoardSnapshot._meta.db_table, Corpus._meta.db_table
    state, sub = ScoringState._meta.db_table, Submission._meta.db_table
    # Postgres in production; SQLite (make demo) spells the JSON aggregate differently.
    agg = ("json_agg(json_build_array" if connection.vendor == "postgresql"
           else "json_group_array(json_array")
    states = ", ".join(["%s"] * len(ACTIVE_STATES))
    sql = (f"SELECT c.id, c.tag, c.description, st.generation, st.scored_generation, "
           f"b.head, b.rows, b.{part}, "
           f"(SELECT {agg}(s.id, s.name, s.public, s.owner_id, s.state)) "
           f"FROM {sub} s WHERE s.corpus_id = c.id AND s.state IN ({states})) "
           f"FROM {snap} b JOIN {corpus} c ON c.id = b.corpus_id "
           f"LEFT JOIN {state} st ON st.corpus_id = c.id "
           "WHERE c.tag = %s AND b.scheme = %s AND b.kind = %s AND b.metric = %s")
    with connection.cursor() as cur:
        cur.execute(sql, [*ACTIVE_STATES, tag, scheme, kind, metric])
        got = cur.fetchone()
    if got is None:
        return None
    cid, ctag, desc, gen, scored, head, rows, pieces, live = got
    return Stored(Corpus(pk=cid, tag=ctag, description=desc),
                  gen is None or scored >= gen, scheme, kind, metric, _json(head),
                  _json(rows), _json(pieces), _json(live) or [])


def load(tag: str, scheme: str, metric: str, kind: str, part: str) -> Stored | None:
    """The stored board with only the `part` ('html', 'api' or 'csv') pieces fetched.

    Builds the corpus's snapshots first when its latest run has none stored yet
    (scores from before snapshots existed), and again when they were rendered by another
    deploy's code or templates. None: no such corpus, no scores yet, or no board of
    that scheme in the run.
    """
    if part not in ("html", "api", "csv"):
        raise ValueError(f"part={part!r}: use html, api or csv")
    stored = _read(tag, scheme, metric, kind, part)
    if stored is not None and stored.head.get("version") == render_version():
        return stored
    run = ScoreRun.latest(Corpus.objects.filter(tag=tag).values_list("pk", flat=True).first() or 0)
    if stored is not None:
        # Rendered by code or templates a deploy has since replaced (its rows' markup
        # would stay until the next recompute): rendered again, once, from the run.
        if run is None or run.pk != stored.head.get("run", {}).get("id"):
            return stored  # not the latest run's board: a recompute is storing new ones
    elif run is None or BoardSnapshot.objects.filter(run=run).exists():
        # No scores; or the run's boards are stored and this one is not among them (a
        # scheme outside KBPO_SCORE_SCHEMES). Writing them again would not add it, and
        # would drop every stored body of the corpus on each such request.
        return None
    try:
        with transaction.atomic():
            write_snapshots(run)
    except IntegrityError:  # another request wrote them at the same moment
        logger.debug("snapshots of %s written concurrently", tag)
    return _read(tag, scheme, metric, kind, part)


@dataclass
class Seen:
    """One row as a given viewer sees it (position `i` in the snapshot's lists)."""

    i: int
    sid: int
    name: str
    public: bool
    state: str
    mine: bool
    refining: bool
    rank: int = 0
    leader: bool = False
    tied: bool = False


@dataclass
class View:
    snap: Stored
    rows: list[Seen]
    leader: Seen | None


def visible(snap: Stored, user: object) -> View:
    """Filter, rank and mark the snapshot's rows for `user` (the rules of `lb.build`)."""
    me = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
    staff = bool(getattr(user, "is_staff", False))
    live = {pk: (name, bool(public), owner, state) for pk, name, public, owner, state in snap.live
            if lb.can_see(staff, me, public, owner)}
    seen = []
    for i, r in enumerate(snap.rows):
        got = live.get(r["s"])
        if got is None:
            continue
        name, public, owner, state = got
        seen.append(Seen(i, r["s"], name, public, state, me is not None and me == owner,
                         r["p"] > 0 or state != State.SCORED))
    rows = snap.rows

    def key(s: Seen) -> tuple:
        r = rows[s.i]
        return (r["e"] is None, -(r["e"] or 0.0), -(r["hi"] or 0.0), s.name)

    seen.sort(key=key)
    previous = None
    for n, s in enumerate(seen):
        value = rows[s.i]["e"]
        current = (value,) if value is not None else None
        s.rank = seen[n - 1].rank if (current is not None and current == previous) else n + 1
        previous = current
    leader = next((s for s in seen if rows[s.i]["e"] is not None), None)
    if leader is not None:
        lm = lb.Metric(rows[leader.i]["e"], rows[leader.i]["lo"], rows[leader.i]["hi"])
        for s in seen:
            s.leader = s is leader
            r = rows[s.i]
            s.tied = s is not leader and lb.Metric(r["e"], r["lo"], r["hi"]).overlaps(lm)
    return View(snap, seen, leader)


def rows_html(view: View) -> str:
    """The table body: stored pieces joined with the viewer's rank, badges and band."""
    rows, html = view.snap.rows, view.snap.part
    band = ""
    if view.leader is not None:
        r = rows[view.leader.i]
        if r["lo"] is not None and r["hi"] is not None:
            lo, hi = lb._x(r["lo"]), lb._x(r["hi"])
            band = (f'<rect class="leader-band" x="{lo}" y="2" width="{round(hi - lo, 2)}" '
                    'height="20"/>')
    compare = (reverse("compare", args=[view.snap.corpus.tag])
               if view.leader is not None else "")
    out = []
    for s in view.rows:
        r = rows[s.i]
        baseline, mid, tail = html[s.i]
        cls = "leader" if s.leader else ("tied" if s.tied else "")
        if s.mine:
            cls += " mine"
        # Every viewer may follow a visible row to its report.
        name = f'<a href="{r["u"]}">{escape(s.name)}</a>'
        badges = baseline
        if s.tied:
            badges += (' <span class="badge badge-ok" title="Its interval overlaps the '
                       'leader\'s: the data cannot yet separate them">≈ tied with #1</span>')
        if compare and not s.leader:
            badges += (f' <a class="small compare-link" href="{compare}?a={s.sid}&amp;b='
                       f'{view.leader.sid}&amp;scheme={view.snap.scheme}">compare with #1</a>')  # type: ignore[union-attr]
        if s.refining:
            p = r["p"]
            title = (f"{p} sampled prediction{'s' if p != 1 else ''} still await crowd labels"
                     if p else "Not yet scored")
            badges += f' <span class="badge badge-warn" title="{title}">refining</span>'
        if not s.public:
            badges += (' <span class="badge" title="Private: only you and the operators see '
                       'this row">private</span>')
        out.append(f'<tr class="{cls}" data-submission="{s.sid}" data-value="{r["v"]}">'
                   f'<td class="num rank">{s.rank}</td><td class="system">'
                   f'<div class="system-name">{name}{badges}{mid}{band}{tail}')
    return "".join(out)


def api_dict(view: View) -> dict[str, Any]:
    """The leaderboard API body (same shape as `lb.board_dict`)."""
    snap = view.snap
    systems = []
    for s in view.rows:
        d = snap.part[s.i]
        systems.append({"rank": s.rank, "submission": s.sid, "name": s.name,
                        "owner": d["owner"], "baseline": d["baseline"], "public": s.public,
                        "state": s.state, "refining": s.refining, "leader": s.leader,
                        "tied_with_leader": s.tied, "paper_url": d["paper_url"],
                        "method": d["method"], "labels_used": d["labels_used"],
                        "draws": d["draws"], "pending_draws": d["pending_draws"],
                        "cost_usd": d["cost_usd"], "lines_dropped": d.get("lines_dropped"),
                        **{m: d[m] for m in METRICS}})
    # Counts over the rows this viewer sees: a private system must not show through a
    # total (labels and exhaustive documents are the corpus's own).
    run = {**snap.head["run"], "systems": len(systems),
           "draws": sum(d["draws"] + d["pending_draws"] for d in systems)}
    return {"corpus": snap.corpus.tag, "scheme": snap.scheme, "sort": snap.metric,
            "kind": snap.kind,
            **lb.reliability(snap.scheme, snap.head["run"].get("draw_scheme")),
            "confidence": snap.head["confidence"], "run": run,
            "systems": systems}


def csv_text(view: View) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_HEADER)
    for s in view.rows:
        c = view.snap.part[s.i]
        writer.writerow([s.rank, s.sid, csv_safe(s.name), c[0], c[1], s.public,
                         csv_safe(s.state), s.refining, s.tied, *c[2:]])
    return buf.getvalue()


__all__ = ["CSV_HEADER", "DISPLAY_FIELDS", "View", "api_dict", "csv_text", "load",
           "refresh_corpus", "rows_html", "visible", "write_snapshots"]
