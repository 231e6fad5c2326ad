"""Live scoring: recompute every active system's scores on a corpus as labels arrive.

Protocol (no lost update, one queued task per corpus):

1. `request_recompute(corpus_id)` — called for every `labels_changed` signal, a
   withdrawal, or a submission reaching `scoring` — increments the corpus's
   `ScoringState.generation` under a row lock and, only if no task is queued yet
   (`scheduled` is false), sets `scheduled` and enqueues one `recompute_corpus`
   task with a short countdown (the debounce) once the transaction commits.
2. The task takes a lease on the state row. If another run holds an unexpired
   lease it re-queues itself and exits. Otherwise it reads `g = generation`,
   clears `scheduled` and commits, *then* loads the data. Every label whose
   `labels_changed` was handled before that commit is therefore visible to the
   run; a label announced later bumps the generation past `g` and, since
   `scheduled` is false again, enqueues the next run.
3. The run writes its `ScoreRun` (with `generation = g`) and `SystemScore` rows in
   one transaction, sets `scored_generation = g`, releases the lease, and — as a
   safety net — enqueues another run if the generation moved on and nothing is
   queued. Submissions in `scoring` with no pending draws become `scored` and
   their owners are e-mailed after the commit.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from annotations.models import Hit, HitState
from annotations.quality.accuracy import crowd_accuracy
from kbpo.core import jobs
from kbpo.core.models import Corpus
from submissions.models import State, Submission

from . import instance_cache
from .beside import Beside, SharedReplicates, replicates_beside
from .core import SCHEMES, Estimates, Evidence, estimate, prepare_evidence
from .core.adaptive import top_up_size
from .core.distinct_estimate import distinct_points
from .core.noise import widen
from .core.points import PointPlan
from .core.recall import exhaustive_hits
from .correction import forget_answers, relation_answers
from .data import PREDICATES, CorpusData, load_corpus_data, store_instance_cache, system_name
from .data import forget as forget_kept
from .lease import LeaseKeeper, lease_seconds
from .models import ScoreRun, ScoringState, SystemScore
from .planning import MAX_DRAWS, enqueue_top_up
from .score_rows import FIELDS as _FIELDS  # noqa: F401  (tests build rows with them)
from .score_rows import SCORE_FIELDS as _SCORE_FIELDS  # noqa: F401
from .score_rows import carried_rows, insert_scores, score_rows, unchanged
from .score_rows import insert_scores as _insert_scores  # noqa: F401
from .scored import fmt_interval, mark_scored  # noqa: F401  (fmt_interval: the e-mail's)
from .snapshot import write_snapshots

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]
RECOMPUTE_TASK = "estimation.recompute_corpus"  # estimation/tasks.py
FOLLOW_UP_TASK = "estimation.recompute_reweighted"  # the reweighted schemes after a live run
# A queued task that has not started after this long was lost (broker flush, worker
# crash before ack): the re-drive queues a fresh one.
STALE_QUEUE = dt.timedelta(minutes=10)
# Hits whose cost is committed to a submission: posted (money reserved) or complete.
CHARGED_HIT_STATES = (HitState.POSTED, HitState.COMPLETE)


def debounce_seconds() -> float:
    return float(getattr(settings, "KBPO_SCORE_DEBOUNCE_SECONDS", 2.0))


def score_schemes(draw_scheme: str) -> list[str]:
    """The schemes recomputed live: KBPO_SCORE_SCHEMES (default all), draw scheme first."""
    wanted = getattr(settings, "KBPO_SCORE_SCHEMES", None) or list(SCHEMES)
    return [draw_scheme] + [s for s in SCHEMES if s in wanted and s != draw_scheme]


def follow_up() -> bool:
    """Whether a recompute task estimates the draw scheme only and queues the reweighted
    schemes (KBPO_SCORE_FOLLOW_UP, default on); off: every scheme in one run."""
    return bool(getattr(settings, "KBPO_SCORE_FOLLOW_UP", True))


def _enqueue(corpus_id: int, countdown: float) -> None:
    jobs.send(RECOMPUTE_TASK, corpus_id, countdown=countdown, coalesce=True)


def _enqueue_follow_up(corpus_id: int, countdown: float) -> None:
    jobs.send(FOLLOW_UP_TASK, corpus_id, countdown=countdown, coalesce=True)


def _locked_state(corpus_id: int) -> ScoringState:
    ScoringState.objects.get_or_create(corpus_id=corpus_id)
    return ScoringState.objects.select_for_update().get(corpus_id=corpus_id)


def request_recompute(corpus_id: int, reason: str = "") -> bool:
    """Record that a corpus's evaluation data changed; queue one recompute if none is.

    Returns True when this call enqueued the task (False: one was already queued).
    """
    with transaction.atomic():
        state = _locked_state(corpus_id)
        state.generation += 1
        enqueue = not state.scheduled
        if enqueue:
            state.scheduled = True
            state.scheduled_at = timezone.now()
        state.save(update_fields=["generation", "scheduled", "scheduled_at", "updated_at"])
        if enqueue:
            countdown = debounce_seconds()
            transaction.on_commit(lambda: _enqueue(corpus_id, countdown))
    logger.debug("scores of corpus %s requested (%s); enqueued=%s", corpus_id, reason, enqueue)
    return enqueue


@dataclass
class RunOutcome:
    status: str  # "complete", "busy", "up to date", "failed"
    run: ScoreRun | None = None


def run_scheduled(corpus_id: int, force: bool = False, trigger: str = "labels changed",
                  progress: Progress | None = None, full: bool = False,
                  live: bool = True) -> RunOutcome:
    """The body of the recompute task (also used by `recompute_scores`).

    `force` recomputes even when nothing changed since the last run; `full` rebuilds
    the stored instance arrays from the database (see `recompute`). `live` (with
    KBPO_SCORE_FOLLOW_UP on): the draw scheme now, the reweighted schemes in the
    follow-up task queued once this run is committed (`run_follow_up`).
    """
    now = timezone.now()
    with transaction.atomic():
        state = _locked_state(corpus_id)
        if state.lease_until and state.lease_until > now:
            # Someone else is computing: come back when its lease would end (it is
            # renewed while the run lives, expires within one lease if it died), not
            # every few seconds; keep one task queued.
            if not state.scheduled:
                state.scheduled = True
                state.scheduled_at = now
                state.save(update_fields=["scheduled", "scheduled_at", "updated_at"])
            left = (state.lease_until - now).total_seconds()
            countdown = max(debounce_seconds(), 1.0, left + 1.0)
            transaction.on_commit(lambda: _enqueue(corpus_id, countdown))
            return RunOutcome("busy")
        state.scheduled = False
        if state.up_to_date and not force:
            state.save(update_fields=["scheduled", "updated_at"])
            return RunOutcome("up to date")
        generation = state.generation
        state.lease_until = now + dt.timedelta(seconds=lease_seconds())
        state.save(update_fields=["scheduled", "lease_until", "updated_at"])
    ok = False
    run = None
    keeper = LeaseKeeper(corpus_id, state.lease_until)
    try:
        with keeper:
            corpus = Corpus.objects.get(pk=corpus_id)
            run = recompute(corpus, generation=generation, trigger=trigger,
                            progress=progress, full=full, live=live and follow_up())
        ok = True
    finally:
        with transaction.atomic():
            state = _locked_state(corpus_id)
            if not keeper.lost:  # else the lease is another run's now
                state.lease_until = None
            if ok:
                state.scored_generation = max(state.scored_generation, generation)
            again = ok and not state.up_to_date and not state.scheduled
            if again:
                state.scheduled = True
                state.scheduled_at = timezone.now()
            state.save()
            if again:
                countdown = debounce_seconds()
                transaction.on_commit(lambda: _enqueue(corpus_id, countdown))
            if ok and behind(run):
                transaction.on_commit(lambda: _enqueue_follow_up(corpus_id, 0))
            if ok:
                send_top_ups(run)
    return RunOutcome("complete", run)


def run_follow_up(corpus_id: int, progress: Progress | None = None) -> RunOutcome:
    """The body of the follow-up task: `complete_reweighted` under the corpus's lease
    (runs never overlap), re-queued while another run holds it."""
    now = timezone.now()
    with transaction.atomic():
        state = _locked_state(corpus_id)
        if state.lease_until and state.lease_until > now:
            # As a busy recompute: come back when the holder's lease would end.
            left = (state.lease_until - now).total_seconds()
            countdown = max(debounce_seconds(), 1.0, left + 1.0)
            transaction.on_commit(lambda: _enqueue_follow_up(corpus_id, countdown))
            return RunOutcome("busy")
        if not behind(ScoreRun.latest(corpus_id)):
            return RunOutcome("up to date")
        generation = state.generation
        state.lease_until = now + dt.timedelta(seconds=lease_seconds())
        state.save(update_fields=["lease_until", "updated_at"])
    # The lease is short and renewed while the follow-up runs (a large corpus's takes
    # longer than one lease), like a recompute's.
    keeper = LeaseKeeper(corpus_id, state.lease_until)
    try:
        with keeper:
            run = complete_reweighted(Corpus.objects.get(pk=corpus_id), generation, progress)
    finally:
        if not keeper.lost:  # else the lease is another run's now
            ScoringState.objects.filter(corpus_id=corpus_id).update(lease_until=None)
    return RunOutcome("complete" if run is not None else "up to date", run)


def redrive_scores() -> int:
    """Queue a recompute for every corpus whose scores lag and that nothing will serve.

    Catches a failed run (which does not re-queue itself, to avoid a hot loop) and a
    queued task that was lost. Returns the number of corpora queued.
    """
    now = timezone.now()
    lagging = (ScoringState.objects.filter(scored_generation__lt=F("generation"))
               .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
               .filter(Q(scheduled=False) | Q(scheduled_at__lt=now - STALE_QUEUE)))
    n = 0
    for state in lagging:
        ScoringState.objects.filter(pk=state.pk).update(scheduled=True, scheduled_at=now)
        _enqueue(state.corpus_id, 0)
        n += 1
    # A follow-up lost the same ways (the live run's commit queued it once).
    for state in ScoringState.objects.filter(Q(lease_until__isnull=True) |
                                             Q(lease_until__lt=now)):
        if behind(ScoreRun.latest(state.corpus_id)):
            _enqueue_follow_up(state.corpus_id, 0)
            n += 1
    # A submission left waiting in scoring (its top-up message lost, or the run that
    # would have scored it failed after storing): a recompute scores it or tops it up.
    waiting = (Submission.objects.filter(state=State.SCORING,
                                         state_changed_at__lt=now - STALE_QUEUE)
               .values_list("corpus_id", flat=True).distinct())
    for corpus_id in list(waiting):
        if request_recompute(corpus_id, "a submission waits in scoring"):
            n += 1
    if n:
        logger.info("re-drove score recomputation for %d corpora", n)
    return n


def attributed_costs(submission_ids: list[int]) -> dict[int, Decimal]:
    """Crowd cost charged to each submission: its posted and completed HITs."""
    rows = (Hit.objects.filter(submission_id__in=submission_ids, state__in=CHARGED_HIT_STATES)
            .values("submission_id").annotate(total=Sum("cost_estimate")).order_by())
    return {r["submission_id"]: r["total"] or Decimal("0") for r in rows}


def _num(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def _consistent_snapshot() -> None:
    """On Postgres, read draws, labels and gold from one snapshot.

    Only possible as the first statement of an outermost transaction (inside a test's
    wrapping transaction it is skipped; statement-level snapshots are still correct
    for the generation protocol, just less tidy).
    """
    if connection.vendor == "postgresql" and len(connection.atomic_blocks) == 1:
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")


def _hard_estimates(data: CorpusData, evidence: Evidence, draw_scheme: str,
                    schemes: list[str], confidence: float, plan: PointPlan | None = None,
                    estimator: str = "importance"
                    ) -> dict[tuple[str, str, str], np.ndarray] | None:
    """With soft labels in use, the same point estimates from the 0/1 labels (for the
    report's "the correction moved it by"), keyed (scheme, metric, kind); None when the
    scores already are the hard ones. Only point estimates: ``plan`` (a `PointPlan` of
    these draws and labels) gives them, `estimate`'s to rounding."""
    if data.soft is None or not len(data.soft.pairs):
        return None
    hard = replace(evidence, soft_keys=None, soft_probs=None, true_prob=None,
                   soft_prior=None, soft_type_prior=None, true_prior=None,
                   true_prior_at=None, system_prior=None,
                   group_prior=None)
    if plan is None or plan.draw_scheme != draw_scheme:
        plan = PointPlan(data.population, hard, draw_scheme)
    points = plan.estimates(hard, schemes, confidence)
    if estimator == "distinct":
        points.update(distinct_points(data.population, hard, draw_scheme, schemes, confidence,
                                      points, plan.state.for_evidence(hard, plan.right(hard))))
    return points


def _store_cache(data: CorpusData) -> None:
    """Keep the rebuilt instance arrays for the next run; the run does not need them."""
    try:
        store_instance_cache(data)
    except DatabaseError:
        logger.exception("could not store the instance arrays of corpus %s", data.corpus.pk)


def exhaustive_found(data: CorpusData, evidence: Evidence | None = None
                     ) -> dict[int, dict[str, list[int]]]:
    """Per submission: {predicate: [true instances in the exhaustive sample, of which the
    submission predicted]}, for the report's per-predicate recall (estimation/report.py).

    An exhaustive instance matching no mention pair (negative id) is found by nobody.
    `evidence`: the data's, if already prepared (only its exhaustive sample is read).
    """
    width = len(PREDICATES)
    preds = data.exhaustive_preds
    total = np.bincount(preds, minlength=width)
    pop = data.population
    if evidence is None:
        evidence = prepare_evidence(pop, {}, np.zeros(0, np.int64), np.zeros(0, np.int64),
                                    data.exhaustive_pairs, preds, data.exhaustive_subjects)
    # Who predicted each exhaustive instance (same pair, same predicate), all at once.
    hit = exhaustive_hits(pop, evidence)  # (systems × instances), 0/1
    onehot = np.zeros((len(preds), width))
    onehot[np.arange(len(preds)), preds] = 1.0
    found = np.rint(hit @ onehot).astype(np.int64)  # small integer counts: exact
    out = {}
    for sub in data.submissions:
        row = found[pop.index_of(system_name(sub.pk))]
        out[sub.pk] = {PREDICATES[c]: [int(total[c]), int(row[c])]
                       for c in np.flatnonzero(total)}
    return out


def _load(corpus: Corpus, confidence: float, full: bool) -> tuple[CorpusData, dict]:
    """The corpus's evaluation data, read in one snapshot, with the report's crowd section
    measured from the same snapshot as the labels scored (stored with the run, so a report
    request never reads the whole corpus)."""
    if full:
        instance_cache.clear(corpus)
        forget_answers(corpus.pk)
        forget_kept(corpus.pk)
    with transaction.atomic():
        _consistent_snapshot()
        data = load_corpus_data(corpus, hot=True)
        # The relation answers, if the correction read them, are not read again; else
        # they come through the ones this process keeps.
        answers = data.extra.get("answers")
        if answers is None:
            answers = relation_answers(corpus)
        crowd = {**crowd_accuracy(corpus.pk, confidence, answers,
                                  data.extra.get("labels")).as_dict(),
                 # from the fit the soft labels used (the correction's)
                 "weak_relations": data.extra.get("weak_relations") or []}
    _store_cache(data)
    return data, crowd


def _estimates(data: CorpusData, schemes: list[str], draw_scheme: str, confidence: float,
               estimator: str, say: Progress, t0: float) -> tuple[
                   Estimates, dict[tuple[str, str, str], np.ndarray] | None, Evidence, np.ndarray]:
    """Every active system's estimates under ``schemes`` (widened by the noise
    correction's variance), the hard-label point estimates, the evidence, and each
    system's joint precision half-width under the draw scheme before the widening (what
    its sample size was planned for: `planning.top_up` compares it with the target)."""
    # With soft labels, the plan of point estimates the systems' priors were fixed
    # with serves the hard labels and the replicates too.
    evidence, plan = data.evidence_and_plan(draw_scheme)
    if plan is None and data.soft is not None and len(data.soft.pairs):
        plan = PointPlan(data.population, evidence, draw_scheme)
    if plan is not None:
        plan.settle(schemes)  # it lives through the final estimate: no more than needed
    hard = _hard_estimates(data, evidence, draw_scheme, schemes, confidence, plan, estimator)
    # The plan's labelled pairs and judged instances serve the full estimate too, with
    # the evidence's verdicts from the plan (Evidence.correct's floats, computed once).
    state = None if plan is None else plan.state.for_evidence(evidence, plan.right(evidence))
    t1 = time.monotonic()
    # The correction's own uncertainty (estimation/correction.py), beside the estimate.
    with Beside(bool(data.soft_replicates) and replicates_beside()) as beside:
        replicates = None
        if data.soft_replicates:
            if plan is None:  # (as correction_variance makes one)
                plan = PointPlan(data.population, evidence, draw_scheme)
            replicates = SharedReplicates(data.population, evidence, data.soft_replicates,
                                          draw_scheme, schemes, confidence, plan,
                                          estimator).start(beside).result
        del plan  # the replicates' own now
        # One call for every scheme: the scheme-free parts (which pairs are labelled,
        # who found each exhaustive instance, the sure bounds) are computed once.
        res = estimate(data.population, evidence, draw_scheme=draw_scheme,
                       schemes=schemes, confidence=confidence, state=state,
                       estimator=estimator)
        del state
        iv = res.results.get(draw_scheme, {}).get("precision", {}).get("joint")
        sampling_hw = np.full(len(data.population), np.nan) if iv is None else (iv.hi - iv.lo) / 2
        say(f"estimated {', '.join(schemes)} in {time.monotonic() - t1:.2f} s "
            f"({time.monotonic() - t0:.2f} s)")
        variance = None
        if replicates is not None:
            variance = replicates()
            say(f"{len(data.soft_replicates)} correction replicates "
                f"{'beside it' if beside.threaded else 'before it'}, done at "
                f"{time.monotonic() - t1:.2f} s ({time.monotonic() - t0:.2f} s)")
    if variance is not None:
        res = widen(res, variance, confidence)
    return res, hard, evidence, sampling_hw


def recompute(corpus: Corpus, *, generation: int | None = None, trigger: str = "",
              progress: Progress | None = None, full: bool = False,
              live: bool = False) -> ScoreRun:
    """Estimate every active system on `corpus` under every scheme and store the history.

    Writes a `ScoreRun` (first as `running`, so the attempt is visible) and its
    `SystemScore` rows; then moves finished submissions from `scoring` to `scored`.
    Instances come from the stored per-submission arrays and, when this process built
    the population for the same arrays before, from memory (`instance_cache`); `full`
    drops both and reads every row again. The numbers are the same either way.

    `live`: estimate the draw scheme only and carry the other schemes' rows of the
    latest run, stamped with the generation they reflect, for `complete_reweighted` to
    replace (when that run lacks one of them, every scheme is estimated here).
    """
    say = progress or (lambda _msg: None)
    draw_scheme = settings.KBPO_SAMPLING_SCHEME
    confidence = float(settings.KBPO_CONFIDENCE)
    if generation is None:
        generation = ScoringState.objects.filter(corpus=corpus).values_list(
            "generation", flat=True).first() or 0
    started = timezone.now()
    t0 = time.monotonic()
    prev = ScoreRun.latest(corpus)
    estimator = settings.KBPO_JOINT_ESTIMATOR
    run = ScoreRun.objects.create(corpus=corpus, generation=generation, trigger=trigger[:200],
                                  draw_scheme=draw_scheme, estimator=estimator,
                                  confidence=confidence, started_at=started)
    try:
        say(f"loading evaluation data of corpus {corpus.tag}")
        data, run.crowd = _load(corpus, confidence, full)
        ids = [s.pk for s in data.submissions]
        n_draws = int(sum(len(d) for d in data.draws.values()))
        say(f"{len(ids)} active systems, {n_draws} draws, {data.n_labels} labelled pairs, "
            f"{data.exhaustive_documents} exhaustive documents "
            f"({time.monotonic() - t0:.2f} s)")
        schemes = score_schemes(draw_scheme)
        costs = attributed_costs(ids)
        # Carried rows are marked by an older generation: with none to mark them by (a
        # run not announced as a change), every scheme is estimated now.
        carried = (carried_rows(prev, run, ids, schemes[1:])
                   if live and prev is not None and prev.generation < generation else None)
        if carried is not None:
            schemes = schemes[:1]
        res, hard, evidence, sampling_hw = _estimates(data, schemes, draw_scheme, confidence,
                                                      estimator, say, t0)
        found = exhaustive_found(data, evidence)
        rows = score_rows(run, ids, schemes, draw_scheme, res, hard, costs, found,
                          generation) + (carried or [])
        run.n_systems = len(ids)
        run.n_labels = data.n_labels
        run.n_draws = n_draws
        run.n_exhaustive_documents = data.exhaustive_documents
        run.n_exhaustive_instances = len(data.exhaustive_pairs)
        same = unchanged(corpus, run, rows)
        if same is None:
            finished = timezone.now()
            with transaction.atomic():
                insert_scores(rows)
                run.status = ScoreRun.Status.COMPLETE
                run.finished_at = finished
                run.duration_s = time.monotonic() - t0
                run.save()
                # The stored boards move with the run: pages never see a run without them.
                write_snapshots(run, rows, carried_from=prev if carried else None)
            say(f"stored {len(rows)} scores in run {run.pk} ({run.duration_s:.2f} s)")
        else:
            if same.crowd != run.crowd:
                # Same scores, but the crowd section moved (e.g. a quality pass that
                # relabelled pairs no estimate depends on, or moved only posteriors):
                # the kept run carries the new section rather than a new history point
                # with identical scores. The update changes the run row, hence the key
                # of every report showing it (estimation/stored_pages.py).
                ScoreRun.objects.filter(pk=same.pk).update(crowd=run.crowd)
                same.crowd = run.crowd
            # Nothing to add to the history: the attempt leaves no row behind (last
            # statement of the try: a failure never marks the kept run as failed).
            run.delete()
    except Exception as exc:
        run.status = ScoreRun.Status.FAILED
        run.finished_at = timezone.now()
        run.duration_s = time.monotonic() - t0
        run.error = f"{type(exc).__name__}: {exc}"[:5000]
        run.save()
        raise
    if same is not None:
        say(f"scores unchanged since run {same.pk}: nothing stored "
            f"({time.monotonic() - t0:.2f} s)")
        run = same
    pending = dict(zip(ids, (int(x) for x in res.pending), strict=True))
    # Top-ups are sent by the caller once the corpus's lease is released
    # (`send_top_ups`): the top-up re-plans the submission, which asks for a recompute.
    run.top_ups = []
    for k, sub in enumerate(data.submissions):
        if sub.state != State.SCORING or pending[sub.pk] != 0:
            continue
        extra = top_up_wanted(sub, int(res.n[k]), float(sampling_hw[k]))
        if extra:
            run.top_ups.append((sub.pk, sub.top_ups, extra, float(sampling_hw[k])))
            say(f"submission {sub.pk} ({sub.name}): ±{sampling_hw[k]:.4f}, {extra} more draws")
            continue
        mark_scored(sub, run)
        say(f"submission {sub.pk} ({sub.name}) is scored")
    return run


def send_top_ups(run: ScoreRun | None) -> None:
    """Queue the top-ups ``run``'s recompute found wanted (after the transaction)."""
    for args in getattr(run, "top_ups", None) or []:
        enqueue_top_up(*args)


def top_up_wanted(sub: Submission, n: int, halfwidth: float) -> int:
    """More draws for a fully labelled submission whose joint precision half-width under
    the draw scheme (before the crowd correction widens it) is over the target by more
    than KBPO_TOP_UP_SLACK, while it has top-up rounds left (KBPO_TOP_UP_ROUNDS) and
    stays under the planner's draw cap; 0: score it as it is."""
    if sub.top_ups >= settings.KBPO_TOP_UP_ROUNDS:
        return 0
    target = settings.KBPO_TARGET_HALFWIDTH
    if not halfwidth > target * (1 + settings.KBPO_TOP_UP_SLACK):
        return 0
    return min(top_up_size(n, halfwidth, target), max(MAX_DRAWS - n, 0))


def behind(run: ScoreRun | None) -> bool:
    """Whether some of ``run``'s rows reflect an older label generation than the run."""
    return run is not None and any(g < run.generation
                                   for g in run.scheme_generations().values())


def complete_reweighted(corpus: Corpus, generation: int, progress: Progress | None = None
                        ) -> ScoreRun | None:
    """The follow-up of a live run: estimate the schemes the latest run carried from an
    older one and replace their rows in that run, stamped with ``generation`` (the
    label generation announced before this read), then its boards. Nothing when the
    latest run is current, or scored another set of systems than is active now (the
    live run already queued computes every scheme for the new set)."""
    say = progress or (lambda _msg: None)
    run = ScoreRun.latest(corpus)
    if not behind(run):
        return None
    assert run is not None
    t0 = time.monotonic()
    draw_scheme, confidence = run.draw_scheme, run.confidence
    stale = sorted(s for s, g in run.scheme_generations().items() if g < run.generation)
    schemes = [s for s in score_schemes(draw_scheme) if s in stale and s != draw_scheme]
    data, _ = _load(corpus, confidence, False)
    ids = [s.pk for s in data.submissions]
    scored = sorted(SystemScore.objects.filter(run=run, scheme=draw_scheme)
                    .values_list("submission_id", flat=True))
    if sorted(ids) != scored or not schemes:
        return None
    res, hard, _, _ = _estimates(data, schemes, draw_scheme, confidence, run.estimator, say, t0)
    rows = score_rows(run, ids, schemes, draw_scheme, res, hard, attributed_costs(ids), None,
                      generation)
    with transaction.atomic():
        SystemScore.objects.filter(run=run, scheme__in=schemes).delete()
        insert_scores(rows)
        write_snapshots(run)
    say(f"replaced {len(rows)} scores of {', '.join(schemes)} in run {run.pk} "
        f"({time.monotonic() - t0:.2f} s)")
    return run


def latest_run(corpus: Corpus | int) -> ScoreRun | None:
    return ScoreRun.latest(corpus)
