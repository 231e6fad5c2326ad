"""Leaderboard rows from the latest score run, shared by the page, the API, CSV and CLI.

Choices (documented in docs/internals/leaderboard.md):
- Private submissions are *hidden* from everyone but their owner and staff; ranks are
  computed among the rows the viewer sees, so a hidden row leaves no gap.
- "Statistically tied": a system whose interval (of the sorted metric) overlaps the
  leader's. Overlap of two 90% intervals is a conservative screen: non-overlap means
  a clear difference, overlap means the data cannot yet separate the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db.models import Q

from kbpo.core.models import Corpus
from submissions.models import ACTIVE_STATES, State, Submission

from .models import METRIC_COLUMNS, METRICS, ScoreRun, SystemScore, is_exact

# The schemes offered for sorting; entity_relation is stored too and served by the API.
BOARD_SCHEMES: dict[str, str] = {
    "instance": "instance (micro)",
    "predicate": "predicate-macro",
    "entity": "entity-macro",
    "entity_relation": "entity-relation",
}
KINDS = ("joint", "simple")
METRIC_LABELS = {"precision": "Precision", "recall": "Recall", "f1": "F1"}

# Geometry of the inline SVG error bars (viewBox units).
BAR_WIDTH = 320
BAR_PAD = 8


def shown(value: str, limit: int = 40) -> str:
    """A query value quoted for an error message, cut short: the message echoes it to
    the client, and a 10,000-character value need not come back whole."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


class BadParameter(ValueError):
    """A query parameter with a value we do not offer; the message names the fix."""

    def __init__(self, name: str, value: str, allowed: tuple[str, ...] | list[str]) -> None:
        self.name = name
        super().__init__(f"{name}={shown(value)} is not offered; use one of: "
                         f"{', '.join(allowed)}")


@dataclass
class Metric:
    estimate: float | None
    lo: float | None
    hi: float | None

    def overlaps(self, other: Metric) -> bool:
        if None in (self.lo, self.hi, other.lo, other.hi):
            return False
        return self.lo <= other.hi and other.lo <= self.hi  # type: ignore[operator]

    @property
    def exact(self) -> bool:
        """The labels decide the value: lo == hi (not an interval of width 0 by chance)."""
        return is_exact(self.lo, self.hi)

    def as_dict(self) -> dict[str, float | bool | None]:
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi, "exact": self.exact}


@dataclass
class Row:
    score: SystemScore
    metrics: dict[str, Metric]
    rank: int = 0
    tied_with_leader: bool = False
    is_leader: bool = False
    mine: bool = False
    bar: dict[str, float] = field(default_factory=dict)

    @property
    def submission(self) -> Submission:
        return self.score.submission

    @property
    def refining(self) -> bool:
        """Scores still move by more than other systems' labels: draws pending or not scored."""
        return self.score.pending > 0 or self.submission.state != State.SCORED

    @property
    def private(self) -> bool:
        return not self.submission.public

    @property
    def sort_metric(self) -> Metric:
        return self.metrics["_sort"]


@dataclass
class Board:
    corpus: Corpus
    run: ScoreRun | None
    scheme: str
    metric: str
    kind: str
    rows: list[Row]
    leader: Row | None = None
    ticks: list[dict[str, float | str]] = field(default_factory=list)
    # The oldest label generation the scheme's rows reflect (None: no rows, the run's).
    scheme_generation: int | None = None

    @property
    def confidence_pct(self) -> int:
        return round(100 * (self.run.confidence if self.run else 0.9))


def offered_schemes() -> dict[str, str]:
    """The board schemes this service computes: the draw scheme and those in
    KBPO_SCORE_SCHEMES (default all). A scheme outside them has no board, so it is
    neither offered nor accepted (a board saying "no scores yet" would never fill)."""
    wanted = set(getattr(settings, "KBPO_SCORE_SCHEMES", None) or BOARD_SCHEMES)
    wanted.add(settings.KBPO_SAMPLING_SCHEME)
    return {k: v for k, v in BOARD_SCHEMES.items() if k in wanted}


# Shown beside a reweighted scheme's figures (leaderboard, report, API): they are
# estimated from the draw scheme's draws, reweighted, and have not been made sound under
# a biased crowd (docs/internals/crowd-bias.md §3: instance recall from entity draws
# covered 0.80–0.83 for a nominal 0.90; reweighted precision intervals were 0.35 wide).
REWEIGHTED_NOTE = ("Reweighted from the draws of the {draw} scheme: not a headline figure. "
                   "Its intervals can miss more often than they say (measured coverage "
                   "0.80–0.83 for a nominal 0.90) and are not corrected for a biased crowd.")


def reweighted(scheme: str, draw_scheme: str | None = None) -> bool:
    """Whether ``scheme``'s figures are reweighted from another scheme's draws (the
    run's draw scheme; default: the service's)."""
    return scheme != (draw_scheme or settings.KBPO_SAMPLING_SCHEME)


def reliability(scheme: str, draw_scheme: str | None = None) -> dict[str, bool]:
    """The API's flags of a scheme's figures: reweighted ones are not reliable."""
    flag = reweighted(scheme, draw_scheme)
    return {"reweighted": flag, "reliable": not flag}


def default_scheme() -> str:
    """The scheme a board shows when none (or a bad one) is asked for."""
    offered = offered_schemes()
    return "instance" if "instance" in offered else next(iter(offered), "instance")


def validate(scheme: str, metric: str, kind: str) -> None:
    offered = offered_schemes()
    if scheme not in offered:
        raise BadParameter("scheme", scheme, list(offered))
    if metric not in METRICS:
        raise BadParameter("sort", metric, METRICS)
    if kind not in KINDS:
        raise BadParameter("kind", kind, KINDS)


def _x(v: float) -> float:
    return round(BAR_PAD + max(0.0, min(1.0, v)) * (BAR_WIDTH - 2 * BAR_PAD), 2)


def _bar(m: Metric, leader: Metric | None) -> dict[str, float]:
    bar: dict[str, float] = {}
    if m.lo is not None and m.hi is not None:
        bar["lo"], bar["hi"] = _x(m.lo), _x(m.hi)
    if m.estimate is not None:
        bar["est"] = _x(m.estimate)
    if leader is not None and leader.lo is not None and leader.hi is not None:
        bar["band_lo"] = _x(leader.lo)
        bar["band_w"] = round(_x(leader.hi) - _x(leader.lo), 2)
    return bar


def visible_filter(user: object, prefix: str = "submission__") -> Q:
    """Which submissions' rows a viewer sees: public ones, their own, all for staff.

    `prefix` is the path from the queried model to Submission ("" on Submission itself).
    """
    if getattr(user, "is_staff", False):
        return Q()
    q = Q(**{f"{prefix}public": True})
    if getattr(user, "is_authenticated", False):
        q |= Q(**{f"{prefix}owner_id": user.pk})  # type: ignore[attr-defined]
    return q


def can_see(staff: bool, viewer_id: int | None, public: bool, owner_id: int) -> bool:
    """`visible_filter` for one row already in memory (viewer_id None: anonymous)."""
    return staff or public or (viewer_id is not None and viewer_id == owner_id)


def build(corpus: Corpus, user: object, scheme: str = "instance", metric: str = "f1",
          kind: str = "joint", run: ScoreRun | None = None) -> Board:
    """The ranked leaderboard of `corpus` as `user` may see it."""
    validate(scheme, metric, kind)
    run = run or ScoreRun.latest(corpus)
    board = Board(corpus, run, scheme, metric, kind, [])
    board.ticks = [{"x": _x(t), "label": f"{t:.2f}".rstrip("0").rstrip(".") or "0"}
                   for t in (0, 0.25, 0.5, 0.75, 1.0)]
    if run is None:
        return board
    board.scheme_generation = run.scheme_generations().get(scheme)
    qs = (SystemScore.objects.filter(run=run, scheme=scheme,
                                     submission__state__in=ACTIVE_STATES)
          .filter(visible_filter(user))
          .select_related("submission", "submission__owner"))
    stem = METRIC_COLUMNS
    rows = []
    for score in qs:
        metrics = {m: Metric(*(getattr(score, f"{stem[m]}_{kind}{b}") for b in ("", "_lo", "_hi")))
                   for m in METRICS}
        metrics["_sort"] = metrics[metric]
        rows.append(Row(score, metrics,
                        mine=getattr(user, "pk", None) == score.submission.owner_id))

    def key(r: Row) -> tuple:
        m = r.sort_metric
        # Estimable rows first by estimate; the rest by their interval's upper end.
        return (m.estimate is None, -(m.estimate or 0.0), -(m.hi or 0.0), r.submission.name)

    rows.sort(key=key)
    previous: tuple | None = None
    for i, row in enumerate(rows):
        value = row.sort_metric.estimate
        current = (value,) if value is not None else None
        row.rank = rows[i - 1].rank if (current is not None and current == previous) else i + 1
        previous = current
    leader = next((r for r in rows if r.sort_metric.estimate is not None), None)
    board.leader = leader
    for row in rows:
        if leader is not None:
            row.is_leader = row is leader
            row.tied_with_leader = (row is not leader
                                    and row.sort_metric.overlaps(leader.sort_metric))
        row.bar = _bar(row.sort_metric, leader.sort_metric if leader else None)
    board.rows = rows
    return board


def row_dict(row: Row, with_owner: bool = True) -> dict:
    """One leaderboard row as JSON-ready data (API and `scores --format json`)."""
    sub = row.submission
    out = {
        "rank": row.rank,
        "submission": sub.pk,
        "name": sub.name,
        "owner": sub.owner.get_username() if with_owner else None,
        "baseline": sub.is_baseline,
        "public": sub.public,
        "state": sub.state,
        "lines_dropped": sub.n_dropped if sub.drop_invalid else None,
        "refining": row.refining,
        "leader": row.is_leader,
        "tied_with_leader": row.tied_with_leader,
        "paper_url": sub.paper_url or None,
        "method": sub.method_description or None,
        "labels_used": row.score.labels_used,
        "draws": row.score.draws,
        "pending_draws": row.score.pending,
        "cost_usd": str(row.score.cost_usd.quantize(Decimal("0.01"))),
    }
    for m in METRICS:
        out[m] = row.metrics[m].as_dict()
    return out


def board_dict(board: Board) -> dict:
    run = board.run
    return {
        "corpus": board.corpus.tag,
        "scheme": board.scheme,
        "sort": board.metric,
        "kind": board.kind,
        **reliability(board.scheme, run.draw_scheme if run else None),
        "confidence": run.confidence if run else None,
        "run": None if run is None else {
            # Counts over the rows this viewer sees: a private system must not show
            # through a total (labels and exhaustive documents are the corpus's own).
            "id": run.pk, "finished_at": run.finished_at, "labels": run.n_labels,
            "draws": sum(r.score.draws + r.score.pending for r in board.rows),
            "systems": len(board.rows),
            "exhaustive_documents": run.n_exhaustive_documents,
            "duration_s": run.duration_s, "draw_scheme": run.draw_scheme,
            "estimator": run.estimator, **run.stamp(board.scheme_generation)},
        "systems": [row_dict(r) for r in board.rows],
    }
