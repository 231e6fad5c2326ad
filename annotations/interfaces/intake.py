"""Answer intake: the one path every crowd answer takes into the database.

Real workers (the task pages), the MTurk reconciliation sync and the simulated crowd
all call `submit_assignment`. It validates the whole assignment — the HIT is open,
the worker may answer, every question of the HIT is answered exactly once with a
well-formed answer — and stores it in one transaction *before* anything else
happens (the page forwards to MTurk only afterwards). Repeating the same submission
is idempotent; the same assignment id with other answers, another worker or another
HIT is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.dispatch import Signal
from django.utils import timezone

from annotations.models import (
    Assignment,
    AssignmentState,
    Backend,
    CrowdWorker,
    Hit,
    HitState,
    PagePost,
    PagePostState,
    Question,
    Refusal,
    Response,
)
from kbpo.core.models import Sentence

from .answers import (  # MAX_EXTRA_BYTES, allowed_choices, page_order: callers import them here
    DONE,
    MAX_EXTRA_BYTES,  # noqa: F401
    MTURK_ASSIGNMENT_ID,
    AnswerIn,
    IntakeError,
    allowed_choices,  # noqa: F401
    check_choices,
    from_page,
    page_order,  # noqa: F401
    parse_answers,
    valid_external_id,
)

# Sent after commit with `hit_id` and `question_ids` whenever answers were stored.
answers_stored = Signal()
# Sent after commit with `post_id` and `hit_id` when an MTurk task page posted answers
# (provisional).
page_post_received = Signal()


def worker_for(backend: str, external_id: str, user: object | None = None) -> CrowdWorker:
    """The CrowdWorker row for an external id, created on first sight."""
    if not valid_external_id(external_id):
        raise IntakeError("a worker id (1–64 printable characters) is required", "workerId")
    worker, _ = CrowdWorker.objects.get_or_create(
        backend=backend, external_id=external_id,
        defaults={"user": user if getattr(user, "pk", None) else None})
    return worker


def _same_answers(assignment: Assignment, answers: Iterable[AnswerIn]) -> bool:
    # Document tasks carry their answer in `extra`, so it takes part in the comparison.
    stored = {r.question_id: (tuple(r.choices), r.extra if r.choices == [DONE] else None)
              for r in assignment.responses.all()}
    return stored == {a.question_id: (a.choices, a.extra if a.choices == (DONE,) else None)
                      for a in answers}


def _check_answers(hit: Hit, answers: list[AnswerIn]) -> dict[int, Question]:
    """Every question of the HIT answered exactly once, each answer well-formed."""
    items = {hq.question_id: hq.question for hq in
             hit.items.select_related("question__pair", "question__document")
             .order_by("position", "pk")}  # page_order
    given = [a.question_id for a in answers]
    if len(set(given)) != len(given):
        raise IntakeError("a question is answered twice", "answers")
    extra = set(given) - set(items)
    if extra:
        raise IntakeError(f"question {min(extra)} is not part of this HIT", "answers")
    # Named by its place on the page: its id would tell a control (see from_page).
    missing = [n for n, qid in enumerate(items) if qid not in set(given)]
    if missing:
        raise IntakeError(f"question {missing[0] + 1} of {len(items)} (numbered "
                          f"{missing[0]} in the answers) has no answer", "answers")
    for i, answer in enumerate(answers):
        check_choices(items[answer.question_id], answer, f"answers[{i}].choices")
    return items


def _check_open(hit: Hit) -> None:
    if hit.state != HitState.POSTED:
        raise IntakeError(f"this HIT is {hit.get_state_display()} and takes no answers",
                          "hitId", status=409, code="closed")


# The code of work submitted sooner after accepting than we count (crowd/refusals.py
# pays it, crowd/workers.py blocks a worker who keeps doing it).
TOO_FAST = "too_fast"
REPEAT_MESSAGE = ("you already answered a question of this HIT in another of our tasks; "
                  "please return this HIT (you cannot answer the same question twice)")


def work_units(questions: Iterable[Question]) -> int:
    """What a HIT asks to read, in questions: one per mention pair, and one per sentence
    of a document task's document (a document of forty sentences is not read in a
    second, so a whole document counted as one question would barely be judged)."""
    questions = list(questions)
    docs = [q.document_id for q in questions if q.pair_id is None and q.document_id]
    if not docs:
        return len(questions)
    sentences = dict(Sentence.objects.filter(document_id__in=docs).values("document_id")
                     .annotate(n=Count("id")).values_list("document_id", "n").order_by())
    return len(questions) - len(docs) + sum(max(sentences.get(d, 0), 1) for d in docs)


def min_work_seconds(units: int) -> float:
    """The least time (accept to submit) in which we count a HIT of ``units`` questions
    (`work_units`)."""
    return settings.KBPO_MIN_SECONDS_PER_QUESTION * units


def submit_assignment(*, hit: Hit, worker: CrowdWorker, assignment_id: str,
                      answers: list[AnswerIn], source: str = "intake",
                      work_seconds: float | None = None) -> Assignment:
    """Validate and store one worker's answers to every question of a HIT.

    For MTurk HITs only confirmed work comes here (the sync, with MTurk's own copy of
    the answers); the task page's post goes to `receive_page_post`. `work_seconds`:
    MTurk's SubmitTime − AcceptTime, None where there is none (local and simulated
    work, or a record without them), which is then not judged on time.
    """
    if not valid_external_id(assignment_id):
        raise IntakeError("an assignment id (1–64 printable characters) is required",
                          "assignmentId")
    with transaction.atomic():
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        existing = Assignment.objects.filter(external_id=assignment_id).first()
        if existing is not None:
            if existing.hit_id != locked.pk or existing.worker_id != worker.pk:
                raise IntakeError("this assignment belongs to another HIT or worker",
                                  "assignmentId", status=403, code="conflict")
            if not _same_answers(existing, answers):
                raise IntakeError("this assignment was already submitted with other answers",
                                  "answers", status=409, code="conflict")
            return existing  # a repeated POST: nothing new
        # Malformed work is the worker's fault whatever else holds: checked before the
        # refusals that are ours (closed, blocked, repeat), which MTurk work is paid for.
        items = _check_answers(locked, answers)
        _check_open(locked)
        if worker.blocked:
            raise IntakeError("this worker may no longer answer our tasks", "workerId",
                              status=403, code="blocked")
        if Assignment.objects.filter(hit=locked, worker=worker).exists():
            raise IntakeError("this worker already answered this HIT", "workerId", status=409,
                              code="repeat")
        if work_seconds is not None:
            units = work_units(items.values())
            least = min_work_seconds(units)
            if work_seconds < least:
                raise IntakeError(f"submitted {work_seconds:.1f} s after accepting a task of "
                                  f"{units} question(s) or sentence(s); we count work that "
                                  f"took at least {least:g} s", "workTime", status=409,
                                  code=TOO_FAST)
        if (locked.backend != Backend.MTURK and locked.assignments.filter(
                refusal=Refusal.NONE).count() >= locked.max_assignments):
            # On our own site nothing else keeps a HIT to its slots (MTurk does that
            # for its HITs): more answers would be counted and paid beyond its cost.
            raise IntakeError("this task already has all the answers it needs; take the "
                              "next one from “Next task”", "hitId", status=409, code="closed")
        try:
            with transaction.atomic():
                assignment = Assignment.objects.create(
                    hit=locked, worker=worker, external_id=assignment_id,
                    state=AssignmentState.SUBMITTED, source=source)
                Response.objects.bulk_create([
                    Response(assignment=assignment, question_id=a.question_id, worker=worker,
                             choices=list(a.choices), extra=a.extra, seconds=a.seconds)
                    for a in answers])
        except IntegrityError as exc:
            raise IntakeError(REPEAT_MESSAGE, "answers", status=409, code="repeat") from exc
        qids = sorted(items)
        transaction.on_commit(lambda: answers_stored.send(
            sender=Hit, hit_id=locked.pk, question_ids=qids))
    return assignment


def receive_page_post(*, hit: Hit, worker_id: str, assignment_id: str, payload: dict,
                      client_ip: str | None = None) -> PagePost:
    """Check and keep what an MTurk task page posted, as a provisional `PagePost`.

    The worker learns at once whether the answers would be accepted (the page forwards
    to MTurk only then), but nothing counts until MTurk confirms the assignment: the
    ids in the request are only claims. A repeated post of the same claim replaces
    its answers while it waits (MTurk's copy wins in the end anyway).
    """
    if not valid_external_id(assignment_id):
        raise IntakeError("an assignment id (1–64 printable characters) is required",
                          "assignmentId")
    if not MTURK_ASSIGNMENT_ID.fullmatch(assignment_id):
        raise IntakeError("assignmentId is not an MTurk assignment id (capital letters and "
                          "digits); open this HIT from Mechanical Turk", "assignmentId")
    if not valid_external_id(worker_id):
        raise IntakeError("a worker id (1–64 printable characters) is required", "workerId")
    answers = parse_answers(payload)
    with transaction.atomic():
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        answers = from_page(locked, answers)
        clean = {"answers": [{"question": a.question_id, "choices": list(a.choices),
                              "extra": a.extra, "seconds": a.seconds} for a in answers]}
        confirmed = Assignment.objects.filter(external_id=assignment_id).select_related(
            "worker").first()
        if confirmed is not None:
            # MTurk already confirmed this assignment: only its own worker may post it.
            if confirmed.hit_id != locked.pk or confirmed.worker.external_id != worker_id:
                raise IntakeError("this assignment belongs to another HIT or worker",
                                  "assignmentId", status=403, code="conflict")
            # The same checks as any post: a replay with answers to questions of other
            # HITs or made-up labels is refused, not kept as this assignment's post.
            _check_answers(locked, answers)
            post, _ = PagePost.objects.get_or_create(
                hit=locked, assignment_external_id=assignment_id,
                worker_external_id=worker_id, defaults={
                    "payload": clean, "client_ip": client_ip, "assignment": confirmed,
                    "state": PagePostState.CONFIRMED, "resolved_at": timezone.now()})
            return post
        _check_open(locked)
        worker = CrowdWorker.objects.filter(backend=locked.backend,
                                            external_id=worker_id).first()
        if worker is not None:
            if worker.blocked:
                raise IntakeError("this worker may no longer answer our tasks", "workerId",
                                  status=403, code="blocked")
            if Assignment.objects.filter(hit=locked, worker=worker).exists():
                raise IntakeError("you already answered this HIT", "workerId", status=409,
                                  code="repeat")
            if Response.objects.filter(worker=worker,
                                       question__hit_items__hit=locked).exists():
                raise IntakeError(REPEAT_MESSAGE, "answers", status=409, code="repeat")
        if locked.assignments.filter(refusal=Refusal.NONE).count() >= locked.max_assignments:
            raise IntakeError("this HIT already has all the answers it needs; please return "
                              "it", "hitId", status=409, code="closed")
        _check_answers(locked, answers)
        claim = {"hit": locked, "assignment_external_id": assignment_id,
                 "worker_external_id": worker_id}
        if (not PagePost.objects.filter(**claim).exists()
                and PagePost.objects.filter(hit=locked, state=PagePostState.WAITING).count()
                >= settings.KBPO_PAGE_POSTS_WAITING_PER_HIT):
            # Anyone can post: past this many unconfirmed posts a HIT keeps no more (a
            # bound on the disk whatever the number of addresses). The answers are
            # fine, so the worker goes on to MTurk, whose copy the sync counts.
            return PagePost(**claim, payload=clean, client_ip=client_ip)
        post, created = PagePost.objects.get_or_create(
            **claim, defaults={"payload": clean, "client_ip": client_ip})
        if not created and post.state == PagePostState.FORGED:
            raise IntakeError("MTurk says this assignment is not yours", "assignmentId",
                              status=403, code="conflict")
        if not created and post.state == PagePostState.WAITING and post.payload != clean:
            post.payload = clean
            post.save(update_fields=["payload"])
        if post.state == PagePostState.WAITING:
            transaction.on_commit(lambda: page_post_received.send(
                sender=PagePost, post_id=post.pk, hit_id=locked.pk))
    return post
