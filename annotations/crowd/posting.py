"""Posting crowd work: one open relation question per unlabelled drawn pair, grouped
into pending HITs of a batch, then posted through the configured backend while the
budgets allow. What does not fit stays pending, with the reason on the HIT.

The database allows one open question per pair; a concurrent planner that wins the
race simply owns it, and its answers serve every submission that drew the pair.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from annotations.models import (
    Hit,
    HitBatch,
    HitQuestion,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    TaskKind,
)
from submissions.models import Submission

from . import budget, controls
from .backends import post_hit
from .mturk import MTurkError

CENT = Decimal("0.01")


@dataclass
class QuestionPlan:
    """What `open_questions` found and did for a set of drawn pairs."""

    labelled: int      # pairs that already have a label (reused)
    opened: int        # new questions
    hits: int          # new pending HITs
    waiting: int       # pairs with a question another submission opened


def open_questions(sub: Submission, pair_ids: set[int]) -> QuestionPlan:
    """Open a question for every pair without a label or an open question, and group the
    submission's HIT-less open questions into pending HITs. Call inside a transaction."""
    labelled = set(PairLabel.objects.filter(pair_id__in=pair_ids)
                   .values_list("pair_id", flat=True))
    open_ = set(Question.objects.filter(pair_id__in=pair_ids, state=QuestionState.OPEN,
                                        kind=TaskKind.RELATION, control_answer__isnull=True)
                .values_list("pair_id", flat=True))
    created = sum(_open_question(p, sub) for p in sorted(pair_ids - labelled - open_))
    _, n_hits = _group_into_hits(sub)
    return QuestionPlan(labelled=len(labelled), opened=created, hits=n_hits,
                        waiting=len(pair_ids) - len(labelled) - created)


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


def regroup(sub: Submission) -> int:
    """Pending HITs for the submission's open questions left without a live HIT (a
    retired HIT's); the number of new HITs. Call inside a transaction."""
    return _group_into_hits(sub)[1]


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
    answered = {q.pk: q.responses.filter(counted=True).count() for q in orphans}
    batch = HitBatch.objects.create(corpus_id=sub.corpus_id, submission=sub,
                                    kind=TaskKind.RELATION, n_questions=len(orphans))
    total = Decimal("0")
    n_hits = 0
    rng = random.Random(batch.pk)
    starts = range(0, len(orphans), per_hit)
    owed = controls.spread([len(orphans[s:s + per_hit]) for s in starts])
    pool = controls.batch_pool(sub.corpus_id, [q.pair_id for q in orphans], rng) \
        if sum(owed) else []
    for start, n_controls in zip(starts, owed, strict=True):
        chunk = orphans[start:start + per_hit]
        chosen = [(c.pair_id, c.answer)
                  for c in (pool.pop() for _ in range(min(n_controls, len(pool))))]
        assignments = max(1, max(q.answers_needed - answered[q.pk] for q in chunk))
        # Controls are paid like any question: the reward and cost include them.
        reward = per_question * (len(chunk) + len(chosen))
        cost = budget.hit_cost(backend, reward, assignments)
        hit = Hit.objects.create(corpus_id=sub.corpus_id, kind=TaskKind.RELATION,
                                 backend=backend, submission=sub, batch=batch,
                                 max_assignments=assignments, reward=reward,
                                 cost_estimate=cost)
        HitQuestion.objects.bulk_create(
            HitQuestion(hit=hit, question=q, position=i) for i, q in enumerate(chunk))
        controls.add_controls(hit, chosen, rng)
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
