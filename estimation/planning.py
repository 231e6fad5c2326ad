"""Planning a submission's sample: from an ingested submission to posted crowd questions.

`plan_submission(submission_id)` is the body of the `estimation.plan_submission` task
and is safe to run any number of times, concurrently or after a crash:

1. `ingested → planning`;
2. the sample: the estimation core sizes it (`plan_sample_size`, docs/internals/estimation.md §5)
   and it is drawn i.i.d. with replacement from the submission's sampling distribution,
   seeded by the submission id, and stored as `SampleDraw` rows — once; a re-run
   reuses them;
3. the crowd opens one relation question per drawn pair that has neither a label nor
   an open question, grouped into pending HITs (`annotations.crowd.posting`);
4. the HITs are posted through the configured backend while the budgets allow; what does
   not fit stays pending, with the reason on the HIT and in the submission's timeline;
5. `planning → annotating`, or straight to `scoring` when every drawn pair is labelled
   already (then `labels_changed` is sent for the corpus).

Any unexpected error moves the submission to `failed` with the traceback kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import traceback
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotations.crowd import posting
from annotations.crowd.labels import to_scoring, unlabelled_draws
from annotations.models import Hit, HitState, SampleDraw
from annotations.signals import labels_changed
from kbpo.core.jobs import enqueue
from submissions.models import RelationInstance, State, Submission
from submissions.services import TransitionError, note_event, transition

from .core import plan_sample_size, sample_draws, scheme_weights
from .core.distinct_estimate import plan_distinct_size
from .data import PREDICATE_CODE, load_corpus_data, system_name

logger = logging.getLogger(__name__)
MAX_DRAWS = 100_000
PLAN_TASK = "estimation.plan_submission"  # estimation/tasks.py
TOP_UP_TASK = "estimation.top_up_submission"


@dataclass
class PlanResult:
    outcome: str
    draws: int = 0
    pairs: int = 0
    reused: int = 0
    new_questions: int = 0
    new_hits: int = 0
    posted: int = 0
    held: list[str] = field(default_factory=list)


def draw_rng(submission_id: int) -> np.random.Generator:
    """The generator of a submission's draws: seeded by its id, so that the same
    submission always gets the same sample, and salted by KBPO_SAMPLE_SALT when set
    (benchmark worlds all number their submissions 1, 2, ...: unsalted, every world's
    draws would reuse the same random numbers)."""
    salt = settings.KBPO_SAMPLE_SALT
    return np.random.default_rng([salt, submission_id] if salt else submission_id)


def planned_size(sub: Submission) -> int:
    """The sample size of a new submission for the joint estimator in use
    (KBPO_JOINT_ESTIMATOR): the distinct-pairs planner counts a draw that lands on a
    labelled pair as free (docs/internals/estimation.md §12), the importance planner
    bounds the worst-case variance (§5)."""
    data = load_corpus_data(sub.corpus)
    name = system_name(sub.pk)
    if name not in data.population.names:
        raise RuntimeError(f"submission {sub.pk} is not active ({sub.state}); cannot plan")
    plan = (plan_distinct_size if settings.KBPO_JOINT_ESTIMATOR == "distinct"
            else plan_sample_size)
    return plan(data.population, data.evidence(), name,
                target_halfwidth=settings.KBPO_TARGET_HALFWIDTH,
                confidence=settings.KBPO_CONFIDENCE, scheme=settings.KBPO_SAMPLING_SCHEME,
                n_max=MAX_DRAWS)


def _draw(sub: Submission, n: int, rng: np.random.Generator, start: int = 0) -> set[int]:
    """Draw ``n`` instances of the submission i.i.d. from its sampling distribution and
    store them as draws ``start``, ``start`` + 1, ...; returns the drawn pairs."""
    scheme = settings.KBPO_SAMPLING_SCHEME
    rows = list(RelationInstance.objects.filter(submission=sub).order_by("pk")
                .values_list("pk", "predicate", "subject_entity_id", "pair_id"))
    if n <= 0 or not rows:
        return set()
    ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    codes = np.fromiter((PREDICATE_CODE.get(r[1], -1) for r in rows), np.int64, len(rows))
    subjects = np.fromiter((r[2] for r in rows), np.int64, len(rows))
    probs = scheme_weights(scheme, codes, subjects)
    picks = sample_draws(probs, n, rng)
    SampleDraw.objects.bulk_create(
        SampleDraw(submission=sub, scheme=scheme, index=start + i, instance_id=int(ids[k]))
        for i, k in enumerate(picks))
    return {rows[k][3] for k in picks}


def draw_sample(sub: Submission) -> int:
    """Size and draw the submission's sample, store it; returns the number of draws."""
    n = planned_size(sub)
    return n if _draw(sub, n, draw_rng(sub.pk)) else 0



def census_pairs(sub: Submission, draws: int) -> set[int]:
    """Every pair of a system no larger than its own sample.

    Drawing with replacement from a tiny system leaves some of its pairs unlabelled even
    when there are as many draws as pairs; asking about all of them costs no more and
    makes its precision exact (the label bounds close). The draws stay as drawn, so the
    sampling estimators are unchanged; the extra labels only tighten the bounds."""
    if draws <= 0:
        return set()
    pairs = set(RelationInstance.objects.filter(submission=sub)
                .order_by("pair_id").values_list("pair_id", flat=True)
                .distinct()[:draws + 1])
    return pairs if len(pairs) <= draws else set()


def _plan(submission_id: int) -> PlanResult:
    with transaction.atomic():
        # Only the submission's row: locking the joined corpus row would stall every
        # other upload to the corpus until this plan commits.
        sub = (Submission.objects.select_for_update(of=("self",)).select_related("corpus")
               .get(pk=submission_id))
        if sub.state not in (State.PLANNING, State.ANNOTATING):
            return PlanResult(f"skipped ({sub.state})")
        n = SampleDraw.objects.filter(submission=sub).count()
        if n == 0 and sub.state == State.PLANNING:
            n = draw_sample(sub)
        pair_ids = set(SampleDraw.objects.filter(submission=sub)
                       .values_list("instance__pair_id", flat=True))
        questions = posting.open_questions(sub, pair_ids | census_pairs(sub, n))
    result = PlanResult("planned", draws=n, pairs=len(pair_ids), reused=questions.labelled,
                        new_questions=questions.opened, new_hits=questions.hits)
    sub.refresh_from_db()
    if not pair_ids or unlabelled_draws(sub) == 0:
        if pair_ids:
            what = f"all {len(pair_ids):,} sampled pairs already have crowd labels"
        elif not RelationInstance.objects.filter(submission=sub,
                                                 pair__label__isnull=True).exists():
            # The planner asks for nothing when labels cover the whole output: the
            # scores are then exact, not estimated.
            total = (RelationInstance.objects.filter(submission=sub)
                     .values("pair_id").distinct().count())
            what = (f"all {total:,} mention pairs of this system already have crowd labels, "
                    "so its precision is exact")
        else:
            what = "the labels already held meet the precision target"
        to_scoring(sub, f"Sample of {n:,} draws planned; {what}.")
        result.outcome = "scoring"
        return result
    if sub.state == State.PLANNING:
        cost = sum((h.cost_estimate for h in Hit.objects.filter(
            submission=sub, state=HitState.PENDING)), Decimal("0"))
        transition(sub, State.ANNOTATING,
                   f"Sample of {n:,} draws over {len(pair_ids):,} mention pairs: "
                   f"{questions.labelled:,} reuse existing labels, {questions.opened:,} new "
                   f"questions in {questions.hits:,} HITs (estimated ${cost}); "
                   f"{questions.waiting:,} wait for questions other submissions opened.")
    result.posted, result.held = posting.post_pending(sub)
    if result.held:
        note_event(sub, "Crowd work on hold: " + result.held[0])
        result.outcome = "held"
    return result


def plan_submission(submission_id: int) -> PlanResult:
    """Plan one submission (the `estimation.plan_submission` task); idempotent."""
    with transaction.atomic():
        sub = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if sub is None:
            return PlanResult("missing")
        if sub.state == State.INGESTED:
            transition(sub, State.PLANNING, "Planning the crowd sample.")
        elif sub.state not in (State.PLANNING, State.ANNOTATING):
            return PlanResult(f"skipped ({sub.state})")
    try:
        return _plan(submission_id)
    except Exception as exc:
        logger.exception("planning of submission %s failed", submission_id)
        with contextlib.suppress(TransitionError):
            transition(sub, State.FAILED, f"Planning failed: {type(exc).__name__}: {exc}"[:900],
                       error=traceback.format_exc()[-20000:])
        return PlanResult("failed")


@dataclass
class RedriveResult:
    replanned: int = 0
    failed: int = 0


def redrive_planning() -> RedriveResult:
    """Re-plan what stopped moving; nothing stays in planning for ever.

    * `ingested` submissions whose planning never started (for
      KBPO_CROWD_REDRIVE_AFTER seconds), and `planning` ones whose planner died, are
      re-planned. A live planner holds its submission's row while it draws and opens
      questions, and a dead one's lock went with its session, so a `planning` row that
      nobody holds (SKIP LOCKED) for KBPO_SUBMISSION_LOST_AFTER seconds lost its
      planner. After KBPO_SUBMISSION_MAX_ATTEMPTS re-drives a planning submission is
      marked failed;
    * `annotating` submissions with HITs still pending (budget raised, MTurk back) are
      re-planned, which posts what now fits.
    """
    now = timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.KBPO_CROWD_REDRIVE_AFTER)
    waiting = Q(state=State.INGESTED, state_changed_at__lt=cutoff)
    lost = Q(state=State.PLANNING, state_changed_at__lt=now - dt.timedelta(
        seconds=settings.KBPO_SUBMISSION_LOST_AFTER))
    out = RedriveResult()
    stuck = Submission.objects.filter(waiting | lost).values_list("pk", flat=True)
    for pk in list(stuck):
        with transaction.atomic():
            sub = (Submission.objects.select_for_update(skip_locked=True)
                   .filter(waiting | lost, pk=pk).first())
            if sub is None:
                continue
            if sub.state == State.PLANNING and \
                    sub.redrives >= settings.KBPO_SUBMISSION_MAX_ATTEMPTS:
                try:
                    transition(sub, State.FAILED,
                               f"Planning gave up after {sub.redrives} automatic re-runs.",
                               error="Planning never finished; check the worker logs, then "
                                     "re-run.")
                    out.failed += 1
                except TransitionError:
                    pass
                continue
            Submission.objects.filter(pk=pk).update(redrives=F("redrives") + 1)
            enqueue_plan(pk)
            out.replanned += 1
    pending = (Hit.objects.filter(state=HitState.PENDING, created_at__lt=cutoff,
                                  submission__state=State.ANNOTATING)
               .values_list("submission_id", flat=True).distinct())
    for pk in list(pending):
        enqueue_plan(pk)
        out.replanned += 1
    return out


def enqueue_plan(submission_id: int) -> None:
    """Plan a submission once the current transaction commits."""
    enqueue(PLAN_TASK, submission_id)


def top_up(submission_id: int, round_: int, extra: int, halfwidth: float) -> PlanResult:
    """Draw ``extra`` more for a submission in scoring whose joint precision interval
    (half-width ``halfwidth`` before the crowd correction) came out wider than the
    target allows (the `estimation.top_up_submission` task, sent by `scoring.recompute`).

    The planner's bound is on the variance; the interval also carries the sure bounds
    and the Wilson size rule, and a few heavy unlabelled pairs can leave it wider: the
    extra draws are what keep the promise. Round ``round_`` (the submission's
    `top_ups` when it was sent) runs once: a second send of the same round, or one
    after the submission moved on, does nothing. The draws are seeded by the submission
    and the round, so a re-run draws the same ones.
    """
    with transaction.atomic():
        sub = (Submission.objects.select_for_update(of=("self",)).select_related("corpus")
               .filter(pk=submission_id).first())
        if sub is None or sub.state != State.SCORING or sub.top_ups != round_:
            return PlanResult("skipped")
        n = SampleDraw.objects.filter(submission=sub).count()
        extra = min(extra, MAX_DRAWS - n)
        Submission.objects.filter(pk=sub.pk).update(top_ups=F("top_ups") + 1)
        sub.top_ups = round_ + 1
        salt = settings.KBPO_SAMPLE_SALT
        rng = np.random.default_rng([salt, sub.pk, 1 + round_] if salt else [sub.pk, 1 + round_])
        pairs = _draw(sub, extra, rng, start=n)
        questions = posting.open_questions(sub, pairs)
        target = settings.KBPO_TARGET_HALFWIDTH
        why = (f"The precision interval came out ±{halfwidth:.3f}, wider than the "
               f"±{target:.3f} target: {extra:,} more draws over {len(pairs):,} mention pairs")
        if unlabelled_draws(sub) == 0:
            # Every new draw landed on a labelled pair: nothing to ask, score again.
            note_event(sub, f"{why}, all already labelled.")
            corpus_id = sub.corpus_id
            transaction.on_commit(lambda: labels_changed.send(sender=Submission,
                                                              corpus_id=corpus_id))
            return PlanResult("scoring", draws=extra, pairs=len(pairs),
                              reused=questions.labelled)
        transition(sub, State.ANNOTATING,
                   f"{why}: {questions.labelled:,} reuse existing labels, "
                   f"{questions.opened:,} new questions in {questions.hits:,} HITs; "
                   f"{questions.waiting:,} wait for questions other submissions opened.")
    result = PlanResult("annotating", draws=extra, pairs=len(pairs), reused=questions.labelled,
                        new_questions=questions.opened, new_hits=questions.hits)
    result.posted, result.held = posting.post_pending(sub)
    if result.held:
        note_event(sub, "Crowd work on hold: " + result.held[0])
        result.outcome = "held"
    return result


def enqueue_top_up(submission_id: int, round_: int, extra: int, halfwidth: float) -> None:
    """Send `top_up` once the current transaction commits."""
    enqueue(TOP_UP_TASK, submission_id, round_, extra, halfwidth)
