"""After the answers arrive: labels, finished HITs, payments, worker quality.

* `aggregate(question_ids)` — a relation question with its `answers_needed` answers
  gets the majority label; a tie asks for one more answer (up to
  `KBPO_MAX_EXTRA_ANSWERS`, budget permitting; on MTurk the HIT gets another
  assignment), after which the plurality wins. Labels are `PairLabel` rows shared by
  every submission; `labels_changed` goes out for the corpus on commit, and an
  `annotating` submission whose drawn pairs are all labelled moves to `scoring`.
* `settle_hits` / `review_hit` — a HIT whose questions are all labelled is complete;
  its assignments are approved (MTurk `ApproveAssignment`; on-site backends record
  the payment), except clear spam, which is rejected with a reason.
* `grant_bonus` / `pay_bonus` — the `Bonus` row and its token exist before the money
  moves; paying twice is impossible.
* `update_worker_quality` — Dawid–Skene per corpus, agreement with the other workers,
  flags, and Krippendorff's alpha per batch.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from submissions.models import State, Submission

from . import aggregation, backends, budget, mturk
from .models import (
    Assignment,
    AssignmentState,
    Backend,
    Bonus,
    CrowdWorker,
    Hit,
    HitBatch,
    HitQuestion,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    Response,
    SampleDraw,
    TaskKind,
)
from .planning import to_scoring
from .signals import labels_changed

logger = logging.getLogger(__name__)


@dataclass
class AggregateResult:
    labelled: list[int] = field(default_factory=list)      # question ids
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


def aggregate(question_ids: Iterable[int]) -> AggregateResult:
    """Aggregate these questions where they have enough answers (idempotent)."""
    out = AggregateResult()
    corpora: set[int] = set()
    pairs: list[int] = []
    hits: set[int] = set()
    extra_hits: set[int] = set()
    base = settings.KBPO_ANSWERS_PER_QUESTION
    for qid in sorted(set(question_ids)):
        with transaction.atomic():
            q = (Question.objects.select_for_update().filter(pk=qid, kind=TaskKind.RELATION)
                 .first())
            if q is None or q.state != QuestionState.OPEN:
                continue
            hits.update(q.hit_items.values_list("hit_id", flat=True))
            answers = [list(c) for c in q.responses.values_list("choices", flat=True)]
            if len(answers) < q.answers_needed:
                out.waiting += 1
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
                "predicates": labels, "method": method, "support": support,
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


# --------------------------------------------------------------------------- HITs & money


def settle_hits(hit_ids: Iterable[int]) -> list[int]:
    """Complete the HITs whose questions are all labelled, then review their work.

    An MTurk HIT is expired first (no new worker takes it) and completed only once
    MTurk has no assignment in progress; the periodic sync collects late answers and
    settles it then, so an answer MTurk saw is never left behind.
    """
    completed = []
    for hit in Hit.objects.filter(pk__in=list(hit_ids), state=HitState.POSTED):
        if hit.items.filter(question__state=QuestionState.OPEN).exists():
            continue
        if hit.backend == Backend.MTURK:
            from .sync import settle_mturk_hit

            try:
                if not settle_mturk_hit(hit):
                    continue
            except mturk.MTurkError:
                logger.exception("HIT %s: could not settle on MTurk yet", hit.pk)
                continue
        with transaction.atomic():
            n = Hit.objects.filter(pk=hit.pk, state=HitState.POSTED).update(
                state=HitState.COMPLETE)
        if n:
            completed.append(hit.pk)
            transaction.on_commit(lambda h=hit.pk: enqueue_review(h))
    return completed


def enqueue_review(hit_id: int) -> None:
    """Queue the approval and payment of a complete HIT's assignments."""
    from .tasks import review_hit_task

    review_hit_task.delay(hit_id)


def spam_reason(assignment: Assignment) -> str | None:
    """Why an assignment is clear spam, or None: it contradicts every label of a HIT
    with at least KBPO_REJECT_MIN_QUESTIONS questions."""
    minimum = settings.KBPO_REJECT_MIN_QUESTIONS
    if minimum <= 0:
        return None
    responses = list(assignment.responses.select_related("question"))
    if len(responses) < minimum:
        return None
    labels = dict(PairLabel.objects.filter(
        question_id__in=[r.question_id for r in responses]).values_list("question_id",
                                                                       "predicates"))
    if len(labels) < len(responses):
        return None  # some questions were labelled through another question: be lenient
    if any(sorted(r.choices) == sorted(labels[r.question_id]) for r in responses):
        return None
    return (f"Every one of your {len(responses)} answers in this task contradicted the "
            "answer most other workers gave for the same sentence; this looks like random "
            "clicking. Please read each sentence before choosing.")


def approve_assignment(assignment: Assignment, feedback: str = "") -> bool:
    """Approve and pay once. True if approved now (MTurk or on-site)."""
    with transaction.atomic():
        a = (Assignment.objects.select_for_update().select_related("hit", "worker")
             .get(pk=assignment.pk))
        if a.state != AssignmentState.SUBMITTED:
            return False
        if a.hit.backend == Backend.MTURK:
            # Idempotent on MTurk's side: an approved assignment is reported, not re-paid.
            mturk.approve(backends.client(), a.external_id, feedback or None)
        a.state = AssignmentState.APPROVED
        a.reviewed_at = timezone.now()
        a.paid = a.hit.reward
        a.feedback = feedback[:1000]
        a.save(update_fields=["state", "reviewed_at", "paid", "feedback"])
    return True


def reject_assignment(assignment: Assignment, reason: str) -> bool:
    """Reject with a reason the worker reads. True if rejected now."""
    if not reason or not reason.strip():
        raise ValueError("a rejection needs a reason the worker can read")
    with transaction.atomic():
        a = (Assignment.objects.select_for_update().select_related("hit")
             .get(pk=assignment.pk))
        if a.state != AssignmentState.SUBMITTED:
            return False
        if a.hit.backend == Backend.MTURK:
            mturk.reject(backends.client(), a.external_id, reason)
        a.state = AssignmentState.REJECTED
        a.reviewed_at = timezone.now()
        a.feedback = reason.strip()[:1000]
        a.save(update_fields=["state", "reviewed_at", "feedback"])
    return True


def review_hit(hit_id: int) -> tuple[int, int]:
    """Approve (or reject as spam) the submitted assignments of a complete HIT."""
    approved = rejected = 0
    hit = Hit.objects.get(pk=hit_id)
    if hit.state != HitState.COMPLETE:
        return 0, 0
    for a in hit.assignments.filter(state=AssignmentState.SUBMITTED).order_by("pk"):
        reason = spam_reason(a)
        if reason:
            rejected += reject_assignment(a, reason)
        else:
            approved += approve_assignment(a, "Thank you.")
    return approved, rejected


def grant_bonus(assignment: Assignment, amount: Decimal, reason: str) -> Bonus:
    """Record a bonus (row and token first, budget checked), then pay it."""
    if not reason or not reason.strip():
        raise ValueError("a bonus needs a reason; the worker sees it")
    amount = Decimal(mturk.format_amount(amount))
    if amount <= 0:
        raise ValueError("a bonus must be positive")
    with transaction.atomic():
        a = Assignment.objects.select_related("hit").get(pk=assignment.pk)
        budget.check_and_lock(budget.bonus_cost(a.hit.backend, amount), a.hit.submission,
                              f"a ${amount} bonus")
        bonus = Bonus.objects.create(assignment=a, amount=amount, reason=reason.strip(),
                                     token=f"new-{a.pk}-{timezone.now().timestamp()}")
        bonus.token = mturk.unique_request_token("bonus", bonus.pk,
                                                 settings.KBPO_MTURK_TOKEN_NAMESPACE)
        bonus.save(update_fields=["token"])
    pay_bonus(bonus.pk)
    bonus.refresh_from_db()
    return bonus


def pay_bonus(bonus_id: int) -> bool:
    """Pay a recorded bonus once; True if paid now. Safe to retry after any crash."""
    with transaction.atomic():
        bonus = (Bonus.objects.select_for_update()
                 .select_related("assignment__hit", "assignment__worker").get(pk=bonus_id))
        if bonus.paid_at is not None:
            return False
        a = bonus.assignment
        if a.hit.backend == Backend.MTURK:
            mturk.send_bonus(backends.client(), a.worker.external_id, a.external_id,
                             bonus.amount, bonus.reason, bonus.token)
        bonus.paid_at = timezone.now()
        bonus.save(update_fields=["paid_at"])
    return True


# --------------------------------------------------------------------------- workers


def block_worker(worker: CrowdWorker, reason: str) -> None:
    """Stop a worker from taking our tasks (MTurk: our block qualification)."""
    if not reason.strip():
        raise ValueError("blocking a worker needs a reason for our records")
    backends.block_on_backend(worker, reason)
    CrowdWorker.objects.filter(pk=worker.pk).update(blocked=True,
                                                    blocked_reason=reason.strip()[:500])


def unblock_worker(worker: CrowdWorker, reason: str = "unblocked by an operator") -> None:
    if worker.backend == Backend.MTURK and worker.blocked:
        try:
            backends.unblock_on_backend(worker, reason)
        except mturk.MTurkError as err:
            if err.code != "RequestError":  # "not blocked there" is what we want anyway
                raise
    CrowdWorker.objects.filter(pk=worker.pk).update(blocked=False, blocked_reason="")


@dataclass
class QualityReport:
    answers: int = 0
    questions: int = 0
    workers: int = 0
    flagged: list[str] = field(default_factory=list)
    alpha: dict[int, float | None] = field(default_factory=dict)       # per corpus
    batch_alpha: dict[int, float | None] = field(default_factory=dict)
    ds_labels: dict[int, list[str]] = field(default_factory=dict)      # question -> DS label


def _arrays(rows: list[tuple[int, int, list[str]]]) -> tuple[np.ndarray, np.ndarray, list[str],
                                                              list[int], list[int]]:
    q_index: dict[int, int] = {}
    w_index: dict[int, int] = {}
    items = np.fromiter((q_index.setdefault(q, len(q_index)) for q, _, _ in rows), np.int64,
                        len(rows))
    workers = np.fromiter((w_index.setdefault(w, len(w_index)) for _, w, _ in rows), np.int64,
                          len(rows))
    answers = [aggregation.answer_key(c) for _, _, c in rows]
    return items, workers, answers, list(q_index), list(w_index)


def update_worker_quality(corpus_id: int | None = None) -> QualityReport:
    """Fit Dawid–Skene per corpus; store accuracy, agreement and flags on the workers."""
    report = QualityReport()
    corpora = ([corpus_id] if corpus_id is not None else
               list(Question.objects.filter(kind=TaskKind.RELATION, responses__isnull=False)
                    .values_list("corpus_id", flat=True).distinct()))
    acc_sum: Counter[int] = Counter()
    agree_sum: Counter[int] = Counter()
    agree_n: Counter[int] = Counter()
    answered: Counter[int] = Counter()
    for cid in corpora:
        rows = list(Response.objects.filter(question__corpus_id=cid,
                                            question__kind=TaskKind.RELATION)
                    .values_list("question_id", "worker_id", "choices").order_by("pk"))
        if not rows:
            continue
        items, workers, answers, qids, wids = _arrays(rows)
        fit = aggregation.dawid_skene(items, workers, answers, len(qids), len(wids))
        rate, total = aggregation.worker_agreement(items, workers, answers, len(wids))
        counts = np.bincount(workers, minlength=len(wids))
        for k, wid in enumerate(wids):
            acc_sum[wid] += float(fit.worker_accuracy[k]) * int(counts[k])
            answered[wid] += int(counts[k])
            if total[k] > 0:
                agree_sum[wid] += float(rate[k]) * float(total[k])
                agree_n[wid] += int(total[k])
        report.ds_labels.update({q: fit.labels[i].split("|") for i, q in enumerate(qids)})
        report.alpha[cid] = aggregation.krippendorff_alpha(items, workers, answers, len(qids),
                                                           len(wids))
        report.answers += len(rows)
        report.questions += len(qids)
    threshold = settings.KBPO_WORKER_FLAG_AGREEMENT
    minimum = settings.KBPO_WORKER_FLAG_MIN_ANSWERS
    for worker in CrowdWorker.objects.filter(pk__in=list(answered)):
        n = answered[worker.pk]
        agreement = agree_sum[worker.pk] / agree_n[worker.pk] if agree_n[worker.pk] else None
        worker.accuracy_ds = acc_sum[worker.pk] / n if n else None
        worker.agreement = agreement
        worker.n_answers = worker.responses.count()
        worker.flagged = bool(agreement is not None and agree_n[worker.pk] >= minimum
                              and agreement < threshold)
        worker.save(update_fields=["accuracy_ds", "agreement", "n_answers", "flagged"])
        if worker.flagged:
            report.flagged.append(str(worker))
    report.workers = len(answered)
    batches = HitBatch.objects.all()
    if corpus_id is not None:
        batches = batches.filter(corpus_id=corpus_id)
    for batch in batches:
        rows = list(Response.objects.filter(question__hit_items__hit__batch=batch)
                    .values_list("question_id", "worker_id", "choices").distinct())
        if not rows:
            continue
        items, workers, answers, qids, wids = _arrays(rows)
        batch.alpha = aggregation.krippendorff_alpha(items, workers, answers, len(qids),
                                                     len(wids))
        batch.n_answers = len(rows)
        batch.save(update_fields=["alpha", "n_answers"])
        report.batch_alpha[batch.pk] = batch.alpha
    return report
