"""From answers to labels: a relation question with its `answers_needed` answers gets
the majority label; a tie asks for one more answer (up to `KBPO_MAX_EXTRA_ANSWERS`,
budget permitting; on MTurk the HIT gets another assignment), after which the
plurality wins. The quality pass (quality/workers.py) later moves a label to the
worker model's answer where the model is surer of it (`KBPO_LABEL_AGGREGATION`); the
vote stays in `PairLabel.majority`. Labels are `PairLabel` rows shared by every submission;
`labels_changed` goes out for the corpus on commit, and an `annotating` submission
whose drawn pairs are all labelled moves to `scoring`."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotations.models import (
    Backend,
    Hit,
    HitQuestion,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    SampleDraw,
    TaskKind,
)
from annotations.quality import aggregation
from annotations.signals import labels_changed
from submissions.models import State, Submission
from submissions.services import TransitionError, transition

from . import backends, budget, mturk, posting, slots
from .review import settle_hits

logger = logging.getLogger(__name__)
# A question's answers that count (a rejected assignment's do not: crowd/discount.py).
COUNTED = Count("responses", filter=Q(responses__counted=True))
AGGREGATE_TASK = "annotations.aggregate"  # crowd/tasks.py


@dataclass
class AggregateResult:
    labelled: list[int] = field(default_factory=list)      # question ids
    controls: list[int] = field(default_factory=list)      # control questions completed
    extra_requested: list[int] = field(default_factory=list)
    waiting: int = 0
    scoring: list[int] = field(default_factory=list)       # submission ids


def plurality(answers: list[list[str]]) -> tuple[list[str], float]:
    """The most frequent answer set (ties broken by the sorted key), with its share."""
    keys = Counter(aggregation.answer_key(a) for a in answers)
    top = max(keys.values())
    best = min(k for k, c in keys.items() if c == top)
    return best.split("|"), top / len(answers)


def _request_extra(q: Question) -> Hit | None:
    """One more answer for a tied question: budget first, then the HIT's slot count."""
    item = (HitQuestion.objects.filter(question=q, hit__state=HitState.POSTED)
            .select_related("hit").order_by("-hit_id").first())
    if item is None:
        return None
    hit = Hit.objects.select_for_update().get(pk=item.hit_id)
    target = hit.assignments.count() + 1
    if hit.max_assignments >= target:
        return hit  # a slot is already open (e.g. another tied question asked for it)
    new_cost = budget.hit_cost(hit.backend, hit.reward, target)
    budget.check_and_lock(new_cost - hit.cost_estimate, hit.submission,
                          f"another answer on HIT {hit.pk}")
    hit.max_assignments = target
    hit.cost_estimate = new_cost
    hit.save(update_fields=["max_assignments", "cost_estimate"])
    return hit


def _ready(question_ids: Iterable[int]) -> tuple[list[int], int]:
    """(open relation questions with all their answers, in id order; how many are open
    with answers still to come), read in one query without locks.

    Skipping a question that looked short of answers here is safe: answers are only
    ever added (a rejection takes some away: `recount` handles those questions), and
    the submission of each answer aggregates its questions after it commits, so the
    one that brings the last answer sees it. A question found ready is locked and
    checked again before it is labelled.
    """
    ready, waiting = [], 0
    rows = (Question.objects.filter(pk__in=set(question_ids), kind=TaskKind.RELATION,
                                    state=QuestionState.OPEN)
            .annotate(n=COUNTED).order_by("pk")
            .values_list("pk", "n", "answers_needed"))
    for qid, n, needed in rows:
        if n < needed:
            waiting += 1
        else:
            ready.append(qid)
    return ready, waiting


def aggregate(question_ids: Iterable[int]) -> AggregateResult:
    """Aggregate these questions where they have enough answers (idempotent)."""
    out = AggregateResult()
    corpora: set[int] = set()
    pairs: list[int] = []
    hits: set[int] = set()
    extra_hits: set[int] = set()
    base = settings.KBPO_ANSWERS_PER_QUESTION
    ready, out.waiting = _ready(question_ids)
    for qid in ready:
        with transaction.atomic():
            q = (Question.objects.select_for_update().filter(pk=qid, kind=TaskKind.RELATION)
                 .first())
            if q is None or q.state != QuestionState.OPEN:
                continue
            hits.update(q.hit_items.values_list("hit_id", flat=True))
            answers = [list(c) for c in q.responses.filter(counted=True)
                       .values_list("choices", flat=True)]
            if len(answers) < q.answers_needed:
                out.waiting += 1
                continue
            if q.control_answer is not None:
                # A control's answers measure the workers (quality pass): no label.
                q.state = QuestionState.COMPLETE
                q.completed_at = timezone.now()
                q.save(update_fields=["state", "completed_at"])
                out.controls.append(q.pk)
                continue
            vote = aggregation.majority_vote(answers)
            if vote.tied and q.answers_needed - base < settings.KBPO_MAX_EXTRA_ANSWERS:
                try:
                    with transaction.atomic():
                        hit = _request_extra(q)
                except budget.BudgetExceeded as exc:
                    logger.warning("question %s: no extra answer (%s); taking the plurality",
                                   q.pk, exc)
                    hit = None
                if hit is not None:
                    q.answers_needed += 1
                    q.save(update_fields=["answers_needed"])
                    out.extra_requested.append(q.pk)
                    extra_hits.add(hit.pk)
                    continue
            if vote.tied:
                labels, support = plurality(answers)
                method = "plurality"
            else:
                labels, support, method = sorted(vote.labels), vote.support, "majority"
            PairLabel.objects.get_or_create(pair_id=q.pair_id, defaults={
                "predicates": labels, "majority": labels, "method": method, "support": support,
                "n_answers": len(answers), "question": q})
            q.state = QuestionState.COMPLETE
            q.completed_at = timezone.now()
            q.save(update_fields=["state", "completed_at"])
            out.labelled.append(q.pk)
            corpora.add(q.corpus_id)
            pairs.append(q.pair_id)
    for corpus_id in sorted(corpora):
        transaction.on_commit(lambda c=corpus_id: labels_changed.send(sender=PairLabel,
                                                                      corpus_id=c))
    for hit in Hit.objects.filter(pk__in=extra_hits, backend=Backend.MTURK):
        try:
            backends.ensure_assignments(hit)
        except mturk.MTurkError:
            logger.exception("HIT %s: extra assignment not created yet; sync retries", hit.pk)
    settle_hits(hits - extra_hits)
    out.scoring = finish_submissions(pairs)
    return out


def recount(question_ids: Iterable[int]) -> AggregateResult:
    """Label these questions again from the answers that still count, after a rejection
    discounted some (crowd/discount.py). Idempotent.

    A label whose remaining answers, `answers_needed` or more, still give a clear
    majority is updated in place (its posterior, fitted with the discounted answers,
    is cleared until the next quality pass). Otherwise (too few answers left, or a tie)
    the label is removed and the question reopened, and `aggregate` treats it as any
    open question: a tie asks for one more answer, then takes the plurality; a question
    short of answers gets them through `_collect_more`. `scoring` (or `scored`)
    submissions whose drawn pairs lost their label go back to `annotating`.

    Each question's `recount_pending_since` mark (crowd/discount.py) is cleared in the
    transaction that relabels it, whatever it finds: under the row lock the label (or
    its absence: an open question is labelled later from the answers that count) agrees
    with every discount committed so far. A later discount marks the row again once
    this lock is released, so no mark is lost to a recount racing it (no timestamp to
    compare: the lock orders them).
    """
    out = AggregateResult()
    corpora: set[int] = set()
    reopened: list[int] = []
    for qid in sorted(set(question_ids)):
        with transaction.atomic():
            q = Question.objects.select_for_update().filter(pk=qid).first()
            if q is not None and q.recount_pending_since is not None:
                # Rolled back with the relabelling if it fails.
                q.recount_pending_since = None
                q.save(update_fields=["recount_pending_since"])
            if q is None or (q.kind, q.state) != (TaskKind.RELATION, QuestionState.COMPLETE) \
                    or q.control_answer is not None:
                continue
            label = PairLabel.objects.select_for_update().filter(question=q).first()
            if label is None:
                continue  # the pair was labelled another way
            answers = [list(c) for c in q.responses.filter(counted=True)
                       .values_list("choices", flat=True)]
            vote = aggregation.majority_vote(answers) if answers else None
            if vote is not None and not vote.tied and len(answers) >= q.answers_needed:
                if (label.majority, label.support, label.n_answers) == (
                        sorted(vote.labels), vote.support, len(answers)):
                    continue  # the vote is as stored (a retried recount)
                corpora.add(q.corpus_id)
                label.predicates = label.majority = sorted(vote.labels)
                label.method, label.support, label.n_answers = ("majority", vote.support,
                                                                len(answers))
                label.posterior, label.prior, label.type_prior = {}, {}, {}
                label.p_correct = None
                label.save(update_fields=["predicates", "majority", "method", "support",
                                          "n_answers", "posterior", "prior", "type_prior",
                                          "p_correct"])
                out.labelled.append(q.pk)
                continue
            if vote is not None and len(answers) >= q.answers_needed \
                    and (label.method, label.majority, label.n_answers) == (
                        "plurality", plurality(answers)[0], len(answers)):
                continue  # a tie already settled on these answers (a retried recount)
            corpora.add(q.corpus_id)
            label.delete()  # derived from the answers, which all stay stored
            q.state, q.completed_at = QuestionState.OPEN, None
            q.save(update_fields=["state", "completed_at"])
            reopened.append(q.pk)
    for corpus_id in sorted(corpora):
        transaction.on_commit(lambda c=corpus_id: labels_changed.send(sender=PairLabel,
                                                                      corpus_id=c))
    if not reopened:
        return out
    again = aggregate(reopened)
    out.labelled += again.labelled
    out.extra_requested = again.extra_requested
    out.scoring = again.scoring
    still_open = list(Question.objects.filter(pk__in=reopened, state=QuestionState.OPEN))
    back_to_annotating([q.pair_id for q in still_open])
    short = [q for q in still_open if q.pk not in again.extra_requested]
    out.waiting = len(short)
    if short:
        _collect_more(short)
    return out


def stale_labels(limit: int = 5000) -> list[int]:
    """Labelled questions still owed a recount (one lost with the process that should
    have sent it): marked `recount_pending_since` by a rejection, oldest first.

    Not a count of the answers that still count against `n_answers`: a late answer can
    make up for a discounted one while the label still counts it. A marked question
    still open has no label to fix; if its recount was lost its mark waits until it is
    labelled (from the answers that count), then a recount finds nothing and clears it.
    """
    return list(Question.objects.filter(recount_pending_since__isnull=False,
                                        state=QuestionState.COMPLETE)
                .order_by("recount_pending_since", "pk").values_list("pk", flat=True)[:limit])


def _collect_more(questions: list[Question]) -> None:
    """More answers for reopened questions, as the pipeline gets missing ones: a live
    HIT holding one gets the slots its questions lack (MTurk: `slots.replenish`, as
    for refused work; on our site its assignment count is raised); the others are
    grouped into new HITs and posted (`posting.regroup`, as for a retired HIT)."""
    live = HitQuestion.objects.filter(question__in=questions,
                                      hit__state__in=(HitState.PENDING, HitState.POSTED))
    for hit in Hit.objects.filter(pk__in=live.values("hit_id"), state=HitState.POSTED):
        try:
            if hit.backend == Backend.MTURK:
                slots.replenish(hit)  # else the sync replaces them (`periodic.sync_hit`)
            else:
                with transaction.atomic():
                    locked = Hit.objects.select_for_update().get(pk=hit.pk)
                    # Rejected work keeps its slot on our site: count it in the target.
                    target = (locked.assignments.filter(refusal="").count()
                              + slots.still_needed(locked))
                    if target > locked.max_assignments:
                        new_cost = budget.hit_cost(locked.backend, locked.reward, target)
                        budget.check_and_lock(new_cost - locked.cost_estimate,
                                              locked.submission,
                                              f"answers replacing rejected work on HIT {hit.pk}")
                        locked.max_assignments, locked.cost_estimate = target, new_cost
                        locked.save(update_fields=["max_assignments", "cost_estimate"])
        except (budget.BudgetExceeded, mturk.MTurkError) as exc:
            logger.warning("HIT %s: no slot for answers replacing rejected work yet: %s",
                           hit.pk, exc)
    on_live = set(live.values_list("question_id", flat=True))
    orphaned = {q.requested_by_id for q in questions
                if q.requested_by_id is not None and q.pk not in on_live}
    for sub in Submission.objects.filter(pk__in=orphaned).order_by("pk"):
        with transaction.atomic():
            posting.regroup(sub)
        _, held = posting.post_pending(sub)
        if held:
            logger.warning("submission %s: reopened questions not posted yet: %s",
                           sub.pk, held)


def back_to_annotating(pair_ids: Iterable[int]) -> list[int]:
    """Move `scoring` and `scored` submissions that drew one of these pairs, now
    unlabelled, back to `annotating` (the state machine allows both): their sample is
    not labelled any more. They move on again once it is (`finish_submissions`)."""
    moved = []
    subs = Submission.objects.filter(state__in=(State.SCORING, State.SCORED),
                                     pk__in=SampleDraw.objects.filter(
        instance__pair_id__in=list(pair_ids), instance__pair__label__isnull=True)
        .values("submission_id"))
    for sub in subs:
        try:
            with transaction.atomic():
                transition(sub, State.ANNOTATING, "A rejected worker's answers no longer "
                           "count: some drawn pairs need more answers.")
        except TransitionError:
            continue
        moved.append(sub.pk)
    return moved


def finish_submissions(pair_ids: Iterable[int] | None = None) -> list[int]:
    """Move `annotating` submissions whose drawn pairs are all labelled to `scoring`."""
    qs = Submission.objects.filter(state=State.ANNOTATING)
    if pair_ids is not None:
        qs = qs.filter(pk__in=SampleDraw.objects.filter(
            instance__pair_id__in=list(pair_ids)).values("submission_id"))
    done = []
    for sub in qs.distinct():
        if SampleDraw.objects.filter(submission=sub, instance__pair__label__isnull=True).exists():
            continue
        n = SampleDraw.objects.filter(submission=sub).count()
        if to_scoring(sub, f"All pairs of the {n:,}-draw sample are labelled."):
            done.append(sub.pk)
    return done


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
