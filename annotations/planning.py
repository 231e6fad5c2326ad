"""Planning: from an ingested submission to posted crowd questions.

`plan_submission(submission_id)` is the body of the Celery task of the same name and is
safe to run any number of times, concurrently or after a crash:

1. `ingested → planning`;
2. the sample: the estimation core sizes it (`plan_sample_size`, DESIGN §6.4) and it is
   drawn i.i.d. with replacement from the submission's sampling distribution, seeded by
   the submission id, and stored as `SampleDraw` rows — once; a re-run reuses them;
3. one relation `Question` per drawn pair that has neither a `PairLabel` nor an open
   question (the database allows one open question per pair; a concurrent planner that
   wins the race simply owns it), grouped into pending `Hit`s of a `HitBatch`;
4. the HITs are posted through the configured backend while the budgets allow; what does
   not fit stays pending, with the reason on the HIT and in the submission's timeline;
5. `planning → annotating`, or straight to `scoring` when every drawn pair is labelled
   already (then `labels_changed` is sent for the corpus).

Any unexpected error moves the submission to `failed` with the traceback kept.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from estimation.core import plan_sample_size, sample_draws, scheme_weights
from estimation.data import PREDICATE_CODE, load_corpus_data, system_name
from submissions.models import RelationInstance, State, Submission, SubmissionEvent
from submissions.services import TransitionError, transition

from . import budget
from .backends import post_hit
from .models import (
    Hit,
    HitBatch,
    HitQuestion,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    SampleDraw,
    TaskKind,
)
from .mturk import MTurkError
from .signals import labels_changed

logger = logging.getLogger(__name__)
MAX_DRAWS = 100_000
CENT = Decimal("0.01")


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


def draw_sample(sub: Submission) -> int:
    """Size and draw the submission's sample, store it; returns the number of draws."""
    scheme = settings.KBPO_SAMPLING_SCHEME
    data = load_corpus_data(sub.corpus)
    name = system_name(sub.pk)
    if name not in data.population.names:
        raise RuntimeError(f"submission {sub.pk} is not active ({sub.state}); cannot plan")
    n = plan_sample_size(data.population, data.evidence(), name,
                         target_halfwidth=settings.KBPO_TARGET_HALFWIDTH,
                         confidence=settings.KBPO_CONFIDENCE, scheme=scheme, n_max=MAX_DRAWS)
    if n <= 0:
        return 0
    rows = list(RelationInstance.objects.filter(submission=sub).order_by("pk")
                .values_list("pk", "predicate", "subject_entity_id"))
    if not rows:
        return 0
    ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    codes = np.fromiter((PREDICATE_CODE.get(r[1], -1) for r in rows), np.int64, len(rows))
    subjects = np.fromiter((r[2] for r in rows), np.int64, len(rows))
    probs = scheme_weights(scheme, codes, subjects)
    # Seeded by the submission id: the same submission always gets the same sample.
    picks = sample_draws(probs, n, np.random.default_rng(sub.pk))
    SampleDraw.objects.bulk_create(
        SampleDraw(submission=sub, scheme=scheme, index=i, instance_id=int(ids[k]))
        for i, k in enumerate(picks))
    return n


def _open_question(pair_id: int, sub: Submission) -> bool:
    """Create the open question for a pair; False if another one is open already."""
    try:
        with transaction.atomic():
            Question.objects.create(corpus_id=sub.corpus_id, kind=TaskKind.RELATION,
                                    pair_id=pair_id, requested_by=sub,
                                    answers_needed=settings.KBPO_ANSWERS_PER_QUESTION)
    except IntegrityError:
        return False  # a concurrent planner opened it: its answers serve us too
    return True


def _group_into_hits(sub: Submission) -> tuple[int, int]:
    """Pending HITs for this submission's open questions that have no live HIT."""
    live = HitQuestion.objects.filter(hit__state__in=(HitState.PENDING, HitState.POSTED))
    orphans = list(Question.objects.filter(
        requested_by=sub, state=QuestionState.OPEN, kind=TaskKind.RELATION)
        .exclude(pk__in=live.values("question_id")).order_by("pk"))
    if not orphans:
        return 0, 0
    backend = settings.KBPO_CROWD_BACKEND
    per_hit = max(1, settings.KBPO_QUESTIONS_PER_HIT)
    per_question = Decimal(str(settings.KBPO_REWARD_PER_QUESTION_USD)).quantize(CENT)
    answered = {q.pk: q.responses.count() for q in orphans}
    batch = HitBatch.objects.create(corpus_id=sub.corpus_id, submission=sub,
                                    kind=TaskKind.RELATION, n_questions=len(orphans))
    total = Decimal("0")
    n_hits = 0
    for start in range(0, len(orphans), per_hit):
        chunk = orphans[start:start + per_hit]
        assignments = max(1, max(q.answers_needed - answered[q.pk] for q in chunk))
        reward = per_question * len(chunk)
        cost = budget.hit_cost(backend, reward, assignments)
        hit = Hit.objects.create(corpus_id=sub.corpus_id, kind=TaskKind.RELATION,
                                 backend=backend, submission=sub, batch=batch,
                                 max_assignments=assignments, reward=reward,
                                 cost_estimate=cost)
        HitQuestion.objects.bulk_create(
            HitQuestion(hit=hit, question=q, position=i) for i, q in enumerate(chunk))
        total += cost
        n_hits += 1
    batch.cost_estimate = total
    batch.save(update_fields=["cost_estimate"])
    return len(orphans), n_hits


def post_pending(submission: Submission | None = None) -> tuple[int, list[str]]:
    """Post pending HITs (of one submission, or all) in creation order.

    Returns (posted, reasons for what was held). Stops at the first MTurk failure: the
    service is probably down and the periodic re-drive will try again.
    """
    qs = Hit.objects.filter(state=HitState.PENDING)
    if submission is not None:
        qs = qs.filter(submission=submission)
    return post_pending_hits(qs)


def post_pending_hits(hits: QuerySet[Hit]) -> tuple[int, list[str]]:
    """Post these pending HITs in creation order; (posted, reasons for the held ones)."""
    posted, held = 0, []
    for hit in hits.filter(state=HitState.PENDING).order_by("pk"):
        try:
            post_hit(hit)
            posted += 1
        except budget.BudgetExceeded as exc:
            held.append(str(exc))
        except MTurkError as exc:
            held.append(f"MTurk refused or is unreachable, will retry: {exc}")
            break
    return posted, held


def _note_event(sub: Submission, message: str) -> None:
    """A timeline line for something that happened without a state change."""
    last = sub.events.order_by("-created_at", "-id").first()
    if last is None or last.message != message:
        SubmissionEvent.objects.create(submission=sub, from_state=sub.state,
                                       to_state=sub.state, message=message)


def unlabelled_draws(sub: Submission) -> int:
    return (SampleDraw.objects.filter(submission=sub, instance__pair__label__isnull=True)
            .values("instance__pair_id").distinct().count())


def to_scoring(sub: Submission, message: str) -> bool:
    """Move a fully labelled submission on to scoring and tell the scorer."""
    try:
        with transaction.atomic():
            transition(sub, State.SCORING, message)
            corpus_id = sub.corpus_id
            transaction.on_commit(lambda: labels_changed.send(sender=Submission,
                                                              corpus_id=corpus_id))
    except TransitionError:
        return False
    return True


def _plan(submission_id: int) -> PlanResult:
    with transaction.atomic():
        sub = (Submission.objects.select_for_update().select_related("corpus")
               .get(pk=submission_id))
        if sub.state not in (State.PLANNING, State.ANNOTATING):
            return PlanResult(f"skipped ({sub.state})")
        n = SampleDraw.objects.filter(submission=sub).count()
        if n == 0 and sub.state == State.PLANNING:
            n = draw_sample(sub)
        pair_ids = set(SampleDraw.objects.filter(submission=sub)
                       .values_list("instance__pair_id", flat=True))
        labelled = set(PairLabel.objects.filter(pair_id__in=pair_ids)
                       .values_list("pair_id", flat=True))
        open_ = set(Question.objects.filter(pair_id__in=pair_ids, state=QuestionState.OPEN,
                                            kind=TaskKind.RELATION)
                    .values_list("pair_id", flat=True))
        created = sum(_open_question(p, sub) for p in sorted(pair_ids - labelled - open_))
        _, n_hits = _group_into_hits(sub)
    result = PlanResult("planned", draws=n, pairs=len(pair_ids), reused=len(labelled),
                        new_questions=created, new_hits=n_hits)
    sub.refresh_from_db()
    if not pair_ids or unlabelled_draws(sub) == 0:
        what = ("no new labels are needed" if not pair_ids
                else f"all {len(pair_ids):,} sampled pairs already have crowd labels")
        to_scoring(sub, f"Sample of {n:,} draws planned; {what}.")
        result.outcome = "scoring"
        return result
    if sub.state == State.PLANNING:
        cost = sum((h.cost_estimate for h in Hit.objects.filter(
            submission=sub, state=HitState.PENDING)), Decimal("0"))
        transition(sub, State.ANNOTATING,
                   f"Sample of {n:,} draws over {len(pair_ids):,} mention pairs: "
                   f"{len(labelled):,} reuse existing labels, {created:,} new questions in "
                   f"{n_hits:,} HITs (estimated ${cost}); "
                   f"{len(pair_ids) - len(labelled) - created:,} wait for questions "
                   "other submissions opened.")
    result.posted, result.held = post_pending(sub)
    if result.held:
        _note_event(sub, "Crowd work on hold: " + result.held[0])
        result.outcome = "held"
    return result


def plan_submission(submission_id: int) -> PlanResult:
    """Plan one submission (the `annotations.plan_submission` task); idempotent."""
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
