"""Compare two systems on a corpus: the difference in joint P, R and F1 with a paired
interval (estimation/core/difference.py), for the compare page and its API."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db.models import Q

from kbpo.core.models import Corpus
from submissions.models import ACTIVE_STATES, Submission

from .core.difference import compare, with_correction
from .core.intervals import rounded_outward
from .core.noise import replicate_estimates
from .core.points import PointPlan
from .data import load_corpus_data, system_name
from .leaderboard import reliability, shown
from .models import METRICS, ScoreRun, ScoringState, SystemScore, is_exact

CACHE_SECONDS = 300


class CompareError(ValueError):
    """A request the comparison cannot serve; `field` names the query parameter."""

    def __init__(self, field: str, message: str, status: int = 400) -> None:
        self.field = field
        self.status = status
        super().__init__(message)


class CompareThrottled(CompareError):
    """Too many fresh comparisons from one client: 429, to retry after `retry_after` s."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = max(1, retry_after)
        super().__init__("rate", "Too many new comparisons from your network address: each "
                                 "one recomputes the corpus's scores. Try again in "
                                 f"{self.retry_after} seconds (comparisons already made "
                                 "are still shown at once).", status=429)


def comparable(corpus: Corpus, user: object) -> list[Submission]:
    """The active systems on ``corpus`` this viewer may compare (those they see ranked)."""
    qs = Submission.objects.filter(corpus=corpus, state__in=ACTIVE_STATES).select_related("owner")
    if not getattr(user, "is_staff", False):
        q = Q(public=True)
        if getattr(user, "is_authenticated", False):
            q |= Q(owner_id=user.pk)  # type: ignore[attr-defined]
        qs = qs.filter(q)
    return list(qs.order_by("name", "pk"))


# A submission id as the schema gives it: ASCII digits. int() alone also takes other
# scripts' digits ("١", "１"), underscores ("1_0"), signs and surrounding spaces.
_ID = re.compile(r"[0-9]+")
# Ids are bigints (at most 19 digits); a longer number names no submission.
_ID_DIGITS = 19


def parse_id(value: str | None, field: str) -> int:
    if value is None or value == "":
        raise CompareError(field, f"{field} is required: the id of a submission to compare.")
    if not _ID.fullmatch(value):
        raise CompareError(field, f"{field}={shown(value)} is not a submission id (a whole "
                                  "number).")
    if len(value.lstrip("0")) > _ID_DIGITS:
        raise CompareError(field, f"{field}={shown(value)}: no submission has that id.",
                           status=404)
    out = int(value)
    if out <= 0:
        raise CompareError(field, f"{field}={value!r} is not a submission id.")
    return out


def pick(corpus: Corpus, user: object, a: int, b: int) -> tuple[Submission, Submission]:
    if a == b:
        raise CompareError("b", "a and b are the same submission; choose two different ones.")
    visible = {s.pk: s for s in comparable(corpus, user)}
    for field, pk in (("a", a), ("b", b)):
        if pk not in visible:
            # Hidden and missing look the same: a private system's existence is not leaked.
            raise CompareError(field, f"{field}={pk}: no active submission with that id on "
                                      f"corpus {corpus.tag} that you may see.", status=404)
    return visible[a], visible[b]


def _num(x: Any) -> float | None:
    return None if x is None else round(float(x), 6)


def difference(corpus: Corpus, a: Submission, b: Submission, scheme: str,
               draw_scheme: str, confidence: float,
               admit: Callable[[], None] | None = None) -> dict[str, Any]:
    """The comparison as JSON-ready data (cached per label generation of the corpus).

    `admit` is called only when the answer must be computed, and may refuse it by
    raising (CompareThrottled): a cached answer costs nothing and is never refused.
    """
    run = ScoreRun.latest(corpus)
    # The leaderboard beside the comparison shows `run`: the comparison is computed on
    # the same labelled state, so it is keyed by the run and made only while no label
    # has changed since (a comparison on newer labels disagreed with the board: recall
    # 0.633 against its 0.600, truth 0.598).
    key = (f"cmp:{corpus.pk}:{run.pk if run else 0}:{scheme}:{draw_scheme}:{confidence}:"
           f"{a.pk}:{b.pk}")
    out = cache.get(key)
    if out is None:
        if run is None or not _shows_current_labels(corpus, run) or \
                run.draw_scheme != draw_scheme:
            raise _updating()
        if admit is not None:
            admit()
        out = _computed(corpus, a, b, scheme, draw_scheme, confidence, run)
        if not _shows_current_labels(corpus, run):  # labels changed while it loaded
            raise _updating()
        cache.set(key, out, CACHE_SECONDS)
    # The names as they are now: a rename does not move the generation, and the cached
    # numbers would otherwise show the old name for CACHE_SECONDS.
    return {**out, "a": {**out["a"], "name": a.name}, "b": {**out["b"], "name": b.name}}


def _shows_current_labels(corpus: Corpus, run: ScoreRun) -> bool:
    """Whether the leaderboard's run reflects every label announced: it read the
    current generation, or every generation is scored (a recompute whose scores equal
    the run's keeps that run, scoring.py `_unchanged`)."""
    state = ScoringState.objects.filter(corpus=corpus).first()
    return state is None or state.generation == run.generation or state.up_to_date


def _updating() -> CompareError:
    return CompareError("scores", "The leaderboard is being updated with new labels; the "
                                  "comparison uses the same labels as the leaderboard, so it "
                                  "is available once the update is done. Try again shortly.",
                        status=503)


def _computed(corpus: Corpus, a: Submission, b: Submission, scheme: str, draw_scheme: str,
              confidence: float, run: ScoreRun) -> dict[str, Any]:
    data = load_corpus_data(corpus)
    pop = data.population
    try:
        ia, ib = pop.index_of(system_name(a.pk)), pop.index_of(system_name(b.pk))
    except KeyError:  # withdrawn between the visibility check and the load
        raise CompareError("a", "one of the two submissions is no longer active; "
                                "reload the page.", status=404) from None
    ev, plan = data.evidence_and_plan(draw_scheme)
    # The board's estimator (the run's): the same estimates, their own correlations.
    res = compare(pop, ev, ia, ib, draw_scheme, scheme, confidence, estimator=run.estimator)
    if len(data.soft_replicates) >= 2:
        # The correction's uncertainty, as the board's intervals carry it (scoring.py),
        # but of the difference itself: each replicate moves both systems.
        plan = plan if plan is not None else PointPlan(pop, ev, draw_scheme)
        res = with_correction(res, [
            replicate_estimates(pop, ev, soft, draw_scheme, [scheme], confidence, plan,
                                run.estimator)
            for soft in data.soft_replicates])
    block = res.estimates.results[scheme]
    # Each system's figures as the leaderboard shows them: its stored row of `run` (the
    # same labels; the row also carries the correction's variance).
    stored = {sc.submission_id: sc for sc in SystemScore.objects.filter(
        run=run, scheme=scheme, submission__in=[a.pk, b.pk])}
    systems = []
    for sub, i in ((a, ia), (b, ib)):
        row = stored.get(sub.pk)
        systems.append({"submission": sub.pk, **{
            m: _interval(block[m]["joint"], i) if row is None else _stored(row, m)
            for m in METRICS}})
    diffs = {}
    for m in METRICS:
        d = res.differences[m]
        lo, hi = _ends(d.lo, d.hi)
        diffs[m] = {"estimate": _num(d.estimate), "lo": lo, "hi": hi,
                    "sd": _num(d.paired_sd), "sd_if_independent": _num(d.separate_sd),
                    "better": {1: "a", -1: "b", 0: None}[d.verdict]}
    return {"corpus": corpus.tag, "scheme": scheme, **reliability(scheme, draw_scheme),
            "confidence": confidence, "estimator": run.estimator, "a": systems[0],
            "b": systems[1], "difference": diffs}


def _nan(x: float) -> float | None:
    return None if x != x else x


def _ends(lo: Any, hi: Any) -> tuple[float | None, float | None]:
    """The ends rounded outward (lo down, hi up): the printed interval keeps the truth."""
    if lo is None or hi is None or lo != lo or hi != hi:
        return None, None
    return rounded_outward(float(lo), float(hi))


def _stored(row: SystemScore, metric: str) -> dict[str, Any]:
    est, lo, hi = row.interval(metric, "joint")
    exact = is_exact(lo, hi)
    lo, hi = _ends(lo, hi)
    return {"estimate": _num(est), "lo": lo, "hi": hi, "exact": exact}


def _interval(est: Any, i: int) -> dict[str, Any]:
    exact = is_exact(float(est.lo[i]), float(est.hi[i]))
    lo, hi = _ends(est.lo[i], est.hi[i])
    return {"estimate": _num(_nan(est.estimate[i])), "lo": lo, "hi": hi, "exact": exact}
