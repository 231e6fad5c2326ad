"""Data behind a submission's evaluation report: progress, spend, scores, history, samples."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, Least

from annotations.models import (
    Assignment,
    Bonus,
    BudgetSettings,
    Hit,
    PairLabel,
    Question,
    QuestionState,
    Response,
    SampleDraw,
    SubmissionBudget,
    TaskKind,
)
from annotations.quality import accuracy
from kbpo.core.schema import NO_RELATION
from kbpo.core.schemas import get_schema
from submissions.models import RelationInstance, Submission

from .core.intervals import wilson, z_value
from .data import PREDICATES, load_exhaustive
from .models import METRICS, ScoreRun, SystemScore
from .scoring import CHARGED_HIT_STATES, attributed_costs

VERDICTS = ("all", "correct", "wrong", "pending")


@dataclass
class Progress:
    drawn_pairs: int
    labelled_pairs: int
    draws: int
    answers_needed: int
    answers_received: int
    open_questions: int

    @property
    def percent(self) -> int:
        if self.drawn_pairs == 0:
            return 100 if self.draws == 0 else 0
        return int(100 * self.labelled_pairs / self.drawn_pairs)

    def as_dict(self) -> dict[str, int]:
        return {"drawn_pairs": self.drawn_pairs, "labelled_pairs": self.labelled_pairs,
                "draws": self.draws, "answers_needed": self.answers_needed,
                "answers_received": self.answers_received,
                "open_questions": self.open_questions, "percent": self.percent}


def progress(sub: Submission) -> Progress:
    """Labelled / drawn pairs (what decides `scored`) and the crowd answers behind them."""
    # One aggregate in the database: no list of drawn pair ids travels either way.
    agg = SampleDraw.objects.filter(submission=sub).aggregate(
        draws=Count("id"), pairs=Count("instance__pair_id", distinct=True),
        labelled=Count("instance__pair_id", distinct=True,
                       filter=Q(instance__pair__label__isnull=False)))
    got = (Response.objects.filter(question=OuterRef("pk"), counted=True).order_by()
           .values("question")
           .annotate(c=Count("id")).values("c"))
    q = (Question.objects.filter(requested_by=sub, kind=TaskKind.RELATION)
         .exclude(state=QuestionState.CANCELLED)
         .annotate(got=Coalesce(Subquery(got), 0))
         .aggregate(needed=Sum("answers_needed"), received=Sum(Least("answers_needed", "got")),
                    open=Count("id", filter=Q(state=QuestionState.OPEN))))
    needed, received, open_q = q["needed"] or 0, q["received"] or 0, q["open"]
    return Progress(agg["pairs"], agg["labelled"], agg["draws"], needed, received, open_q)


@dataclass
class Spend:
    committed: Decimal
    paid: Decimal
    cap: Decimal
    controls: Decimal = Decimal("0")  # the control questions' share of `committed`

    @property
    def percent_of_cap(self) -> int:
        return int(100 * self.committed / self.cap) if self.cap > 0 else 0


def spend(sub: Submission) -> Spend:
    committed = attributed_costs([sub.pk]).get(sub.pk, Decimal("0"))
    hits = Hit.objects.filter(submission=sub)
    paid = (Assignment.objects.filter(hit__in=hits).aggregate(s=Sum("paid"))["s"]
            or Decimal("0"))
    paid += (Bonus.objects.filter(assignment__hit__in=hits, paid_at__isnull=False)
             .aggregate(s=Sum("amount"))["s"] or Decimal("0"))
    own = SubmissionBudget.objects.filter(submission=sub).values_list("cap_usd", flat=True)
    cap = own.first()
    if cap is None:
        glob = BudgetSettings.objects.filter(pk=1).values_list(
            "per_submission_default_usd", flat=True).first()
        cap = glob if glob is not None else Decimal(str(settings.KBPO_BUDGET_PER_SUBMISSION_USD))
    return Spend(committed, paid, cap, control_cost(sub))


def control_cost(sub: Submission) -> Decimal:
    """The control questions' part of the committed cost: each charged HIT's cost
    estimate times the share of its questions that are controls."""
    rows = (Hit.objects.filter(submission=sub, state__in=CHARGED_HIT_STATES)
            .annotate(n=Count("items"), c=Count("items", filter=Q(
                items__question__control_answer__isnull=False)))
            .filter(c__gt=0).values_list("cost_estimate", "n", "c"))
    total = sum((cost * c / n for cost, n, c in rows), Decimal("0"))
    return total.quantize(Decimal("0.01"))


def latest_scores(sub: Submission) -> tuple[ScoreRun | None, dict[str, SystemScore]]:
    """The newest complete run that scored this submission, with its rows per scheme."""
    newest = (SystemScore.objects.filter(submission=sub, run__status=ScoreRun.Status.COMPLETE)
              .order_by("-run__finished_at", "-run_id").values("run_id")[:1])
    # One query: the newest run is a subquery (no run: NULL, so no rows).
    rows = list(SystemScore.objects.filter(submission=sub, run_id=Subquery(newest))
                .select_related("run"))
    if not rows:
        return None, {}
    return rows[0].run, {r.scheme: r for r in rows}


def crowd(sub: Submission, confidence: float, scores: dict[str, SystemScore],
          run: ScoreRun | None = None) -> dict[str, Any]:
    """The crowd's agreement, model accuracy and accuracy on control questions on the
    submission's corpus, and whether the latest scores used soft labels (they then
    carry hard-label twins).

    From `run` (the one `latest_scores` picked) as the recompute stored it; measured
    here over every label and answer of the corpus only without a run, or for a run
    that predates the stored section (the report's key then covers those rows)."""
    acc = run.crowd if run is not None else None
    if acc is None:
        acc = accuracy.crowd_accuracy(sub.corpus_id, confidence).as_dict()
    soft = any(s.p_joint_hard is not None or s.r_joint_hard is not None
               for s in scores.values())
    # A run stored before the control figures has no "controls": shown as not
    # available (null), not measured live, so the page stays the run's.
    # One stored before the re-weighted control figure has controls without it: null.
    acc = {"controls": None, **acc, "soft_labels": soft}
    if acc["controls"] is not None and "reweighted" not in acc["controls"]:
        acc["controls"] = {**acc["controls"], "reweighted": None}
    return acc


# --- History plot (server-rendered SVG) -----------------------------------------------

PLOT_W, PLOT_H = 320, 180
PAD_L, PAD_R, PAD_T, PAD_B = 34, 10, 10, 30
MAX_POINTS = 200


@dataclass
class Panel:
    metric: str
    band: str = ""
    line: str = ""
    points: list[dict[str, float]] = field(default_factory=list)
    last: dict[str, float | None] = field(default_factory=dict)


@dataclass
class History:
    panels: list[Panel]
    n_runs: int
    x_ticks: list[dict[str, float | str]]
    y_ticks: list[dict[str, float | str]]
    width: int = PLOT_W
    height: int = PLOT_H


def history(sub: Submission, scheme: str) -> History:
    """How P, R and F1 (joint) and their intervals narrowed over the score runs."""
    qs = (SystemScore.objects.filter(submission=sub, scheme=scheme,
                                     run__status=ScoreRun.Status.COMPLETE)
          .order_by("run__finished_at", "run_id")
          .values_list("run__n_labels", "p_joint", "p_joint_lo", "p_joint_hi", "r_joint",
                       "r_joint_lo", "r_joint_hi", "f1_joint", "f1_joint_lo", "f1_joint_hi"))
    rows = list(qs)
    if len(rows) > MAX_POINTS:  # keep the first and last, thin the middle evenly
        idx = np.unique(np.linspace(0, len(rows) - 1, MAX_POINTS).round().astype(int))
        rows = [rows[i] for i in idx]
    inner_w = PLOT_W - PAD_L - PAD_R
    inner_h = PLOT_H - PAD_T - PAD_B
    labels = [r[0] for r in rows]
    x0, x1 = (min(labels), max(labels)) if labels else (0, 1)
    span = x1 - x0

    def xs(i: int, v: int) -> float:
        if span > 0:
            return round(PAD_L + inner_w * (v - x0) / span, 2)
        # All runs saw the same labels (e.g. recomputed after a withdrawal): spread them.
        n = len(rows)
        return round(PAD_L + (inner_w * i / (n - 1) if n > 1 else inner_w / 2), 2)

    def ys(v: float) -> float:
        return round(PAD_T + inner_h * (1 - v), 2)

    panels = []
    for k, metric in enumerate(METRICS):
        panel = Panel(metric)
        upper, lower, line = [], [], []
        for i, row in enumerate(rows):
            est, lo, hi = row[1 + 3 * k: 4 + 3 * k]
            x = xs(i, row[0])
            if lo is not None and hi is not None:
                upper.append(f"{x},{ys(hi)}")
                lower.append(f"{x},{ys(lo)}")
            if est is not None:
                line.append(f"{x},{ys(est)}")
                panel.points.append({"x": x, "y": ys(est)})
        if len(upper) == 1:  # one run: a visible vertical whisker instead of a band
            panel.band = ""
        else:
            panel.band = " ".join(upper + lower[::-1])
        panel.line = " ".join(line)
        if rows:
            est, lo, hi = rows[-1][1 + 3 * k: 4 + 3 * k]
            panel.last = {"estimate": est, "lo": lo, "hi": hi,
                          "x": xs(len(rows) - 1, rows[-1][0]),
                          "y_lo": ys(lo) if lo is not None else None,
                          "y_hi": ys(hi) if hi is not None else None}
        panels.append(panel)
    x_ticks = []
    if rows:
        ends = sorted({x0, x1})
        for v in ends:
            # The end labels hang inwards from their tick, so the plot never clips them.
            if len(ends) == 2:
                anchor = "start" if v == x0 else "end"
            else:  # one label count: centred for one run, at the left end for several
                anchor = "middle" if len(rows) == 1 else "start"
            x_ticks.append({"x": xs(0 if v == x0 else len(rows) - 1, v), "label": f"{v:,}",
                            "anchor": anchor})
    y_ticks = [{"y": ys(t), "label": f"{t:g}"} for t in (0, 0.25, 0.5, 0.75, 1.0)]
    return History(panels, len(rows), x_ticks, y_ticks)


# --- Per-predicate breakdown and judged samples -----------------------------------------


def _correct(predicate: str, label: list[str] | None) -> bool | None:
    if label is None:
        return None
    return predicate in label and NO_RELATION not in label


@dataclass
class PredicateRow:
    predicate: str
    instances: int
    draws: int
    labelled: int
    correct: int
    precision: float | None = None
    lo: float | None = None
    hi: float | None = None
    exhaustive: int = 0  # true instances of the predicate in the exhaustive sample
    found: int = 0  # of which this submission predicted
    recall: float | None = None
    r_lo: float | None = None
    r_hi: float | None = None
    # Its instances labelled through any submission's sample (others' included), and of
    # those the ones the label confirms: what a system without draws of its own has.
    labelled_instances: int = 0
    correct_instances: int = 0
    label: str = ""  # the schema's readable name (DocRED's "father" for P22)


def _exhaustive_found(sub: Submission) -> tuple[Counter, Counter]:
    """Per predicate: exhaustive true instances, and how many the submission predicted."""
    y_pairs, y_preds, _, _ = load_exhaustive(sub.corpus)
    total: Counter = Counter()
    found: Counter = Counter()
    if not len(y_pairs):
        return total, found
    mine = set(RelationInstance.objects.filter(submission=sub, pair_id__in=[
        int(p) for p in set(y_pairs.tolist()) if p >= 0]).values_list("pair_id", "predicate"))
    for pair, code in zip(y_pairs.tolist(), y_preds.tolist(), strict=True):
        predicate = PREDICATES[code]
        total[predicate] += 1
        found[predicate] += (pair, predicate) in mine
    return total, found


def stored_exhaustive_found(scores: dict[str, SystemScore]) -> tuple[Counter, Counter] | None:
    """The counts of `_exhaustive_found` as the score run stored them (on its draw-scheme
    row); None for a run that predates them."""
    stored = next((s.exhaustive_found for s in scores.values()
                   if s.exhaustive_found is not None), None)
    if stored is None:
        return None
    return (Counter({p: t for p, (t, _) in stored.items()}),
            Counter({p: f for p, (_, f) in stored.items()}))


def per_predicate(sub: Submission, confidence: float = 0.9,
                  scores: dict[str, SystemScore] | None = None) -> list[PredicateRow]:
    """Per predicate: instances, simple precision from this submission's labelled draws,
    and simple recall from the exhaustive sample (share of its true instances found).

    Each draw counts (draws are with replacement), matching the simple estimator. Both
    intervals are Wilson's on the counts behind them. The recall counts are those the
    latest run stored (`scores`, from `latest_scores`), else computed here.
    """
    instances = dict(RelationInstance.objects.filter(submission=sub).values_list("predicate")
                     .annotate(n=Count("id")).order_by())
    draws: Counter[str] = Counter()
    labelled: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    # Grouped in the database by (predicate, label): a few dozen groups, not every draw.
    groups = (SampleDraw.objects.filter(submission=sub)
              .values_list("instance__predicate", "instance__pair__label__predicates")
              .annotate(n=Count("id")).order_by())
    for predicate, label, n in groups:
        draws[predicate] += n
        verdict = _correct(predicate, label)
        if verdict is not None:
            labelled[predicate] += n
            correct[predicate] += n * int(verdict)
    labelled_instances: Counter[str] = Counter()
    correct_instances: Counter[str] = Counter()
    for predicate, label, n in (RelationInstance.objects.filter(
            submission=sub, pair__label__isnull=False)
            .values_list("predicate", "pair__label__predicates").annotate(n=Count("id"))
            .order_by()):
        labelled_instances[predicate] += n
        correct_instances[predicate] += n * int(bool(_correct(predicate, label)))
    z = z_value(confidence)
    counts = stored_exhaustive_found(scores) if scores else None
    total, found = counts if counts is not None else _exhaustive_found(sub)
    out = []
    schema = get_schema(sub.corpus.schema)
    # Predicates the submission never predicted still have a recall (0 of their truth).
    for predicate in sorted(set(instances) | set(total),
                            key=lambda p: (-instances.get(p, 0), -total[p], p)):
        row = PredicateRow(predicate, instances.get(predicate, 0), draws[predicate],
                           labelled[predicate], correct[predicate],
                           exhaustive=total[predicate], found=found[predicate],
                           labelled_instances=labelled_instances[predicate],
                           correct_instances=correct_instances[predicate],
                           label=schema.label(predicate))
        if row.labelled:
            row.precision = row.correct / row.labelled
            lo, hi = wilson(np.array([row.precision]), np.array([row.labelled]), z)
            row.lo, row.hi = float(lo[0]), float(hi[0])
        if row.exhaustive:
            row.recall = row.found / row.exhaustive
            lo, hi = wilson(np.array([row.recall]), np.array([row.exhaustive]), z)
            row.r_lo, row.r_hi = float(lo[0]), float(hi[0])
        out.append(row)
    return out


@dataclass
class Sample:
    instance: RelationInstance
    times_drawn: int
    label: PairLabel | None
    segments: list[tuple[str, str]]

    @property
    def verdict(self) -> bool | None:
        return _correct(self.instance.predicate, self.label.predicates if self.label else None)


def _segments(text: str, s_begin: int, s_end: int, subj: tuple[int, int],
              obj: tuple[int, int]) -> list[tuple[str, str]]:
    """The sentence cut into (text, role) pieces; roles: '', 'subject', 'object'.

    The template escapes every piece, so document text can never inject markup.
    """
    spans = sorted([(subj[0], subj[1], "subject"), (obj[0], obj[1], "object")])
    pieces: list[tuple[str, str]] = []
    pos = s_begin
    for b, e, role in spans:
        b, e = max(b, pos), min(e, s_end)
        if b >= e:
            continue
        pieces.append((text[pos:b], ""))
        pieces.append((text[b:e], role))
        pos = e
    pieces.append((text[pos:s_end], ""))
    return [p for p in pieces if p[0]]


def sample_queryset(sub: Submission, verdict: str) -> QuerySet:
    """Distinct drawn instances of the submission with how often each was drawn."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict={verdict!r} is not offered; use one of: {', '.join(VERDICTS)}")
    qs = (SampleDraw.objects.filter(submission=sub).values("instance_id")
          .annotate(times=Count("id")).order_by("instance_id"))
    if verdict == "pending":
        qs = qs.filter(instance__pair__label__isnull=True)
    elif verdict in ("correct", "wrong"):
        # Correctness needs the label's predicate list: decided in Python (portable
        # across Postgres and SQLite JSON), over this submission's drawn instances only.
        want = verdict == "correct"
        good = [pk for pk, predicate, label in
                RelationInstance.objects.filter(draws__submission=sub,
                                                pair__label__isnull=False)
                .distinct().values_list("pk", "predicate", "pair__label__predicates")
                if _correct(predicate, label) == want]
        qs = qs.filter(instance_id__in=good)
    return qs


def samples(page_rows: list[dict]) -> list[Sample]:
    """Materialise one page of the explorer (sentence, highlighted mentions, verdict)."""
    ids = [r["instance_id"] for r in page_rows]
    times = {r["instance_id"]: r["times"] for r in page_rows}
    insts = {i.pk: i for i in RelationInstance.objects.filter(pk__in=ids).select_related(
        "pair", "pair__sentence", "pair__document")}
    labels = {lab.pair_id: lab for lab in PairLabel.objects.filter(
        pair_id__in=[i.pair_id for i in insts.values()])}
    out = []
    for inst_id in ids:
        inst = insts[inst_id]
        pair = inst.pair
        sent = pair.sentence
        segs = _segments(pair.document.text, sent.begin, sent.end,
                         (pair.subject_begin, pair.subject_end),
                         (pair.object_begin, pair.object_end))
        out.append(Sample(inst, times[inst_id], labels.get(pair.pk), segs))
    return out


def verdict_counts(sub: Submission) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    groups = (RelationInstance.objects.filter(draws__submission=sub)
              .values_list("predicate", "pair__label__predicates")
              .annotate(n=Count("id", distinct=True)).order_by())
    for predicate, label, n in groups:
        v = _correct(predicate, label)
        counts["all"] += n
        counts["pending" if v is None else ("correct" if v else "wrong")] += n
    return {k: counts.get(k, 0) for k in VERDICTS}


__all__ = ["VERDICTS", "history", "latest_scores", "per_predicate",
           "progress", "sample_queryset", "samples", "spend", "verdict_counts"]
