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

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.dispatch import Signal

from kbpo.schema import NO_RELATION, predicates_for

from .models import (
    Assignment,
    AssignmentState,
    CrowdWorker,
    Hit,
    HitState,
    Question,
    Response,
    TaskKind,
)

# Sent after commit with `hit_id` and `question_ids` whenever answers were stored.
answers_stored = Signal()

MAX_EXTRA_BYTES = 200_000


class IntakeError(Exception):
    """An answer we refuse; `field` names what is wrong, `status` is the HTTP status."""

    def __init__(self, message: str, field: str = "", status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status

    def as_dict(self) -> dict[str, str]:
        return {"error": self.message, "field": self.field}


@dataclass(frozen=True)
class AnswerIn:
    """One answer as it arrives: the question, the chosen relations, extra checks."""

    question_id: int
    choices: tuple[str, ...]
    extra: dict = field(default_factory=dict, hash=False, compare=False)
    seconds: float | None = field(default=None, hash=False, compare=False)


def parse_answers(payload: object) -> list[AnswerIn]:
    """Parse `{"answers": [{"question": 12, "choices": [...], "extra": {...}}, ...]}`."""
    if not isinstance(payload, dict) or not isinstance(payload.get("answers"), list):
        raise IntakeError('expected a JSON object {"answers": [...]}', "answers")
    out: list[AnswerIn] = []
    for i, item in enumerate(payload["answers"]):
        where = f"answers[{i}]"
        if not isinstance(item, dict):
            raise IntakeError(f"{where}: expected an object", where)
        qid = item.get("question")
        if not isinstance(qid, int) or isinstance(qid, bool):
            raise IntakeError(f"{where}.question: expected a question id (integer)",
                              f"{where}.question")
        choices = item.get("choices")
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, str) for c in choices)):
            raise IntakeError(f"{where}.choices: expected a non-empty list of relation names",
                              f"{where}.choices")
        extra = item.get("extra", {})
        if not isinstance(extra, dict) or len(repr(extra)) > MAX_EXTRA_BYTES:
            raise IntakeError(f"{where}.extra: expected a (small) object", f"{where}.extra")
        seconds = item.get("seconds")
        if seconds is not None and (not isinstance(seconds, int | float)
                                    or not math.isfinite(seconds) or seconds < 0):
            raise IntakeError(f"{where}.seconds: expected a non-negative number",
                              f"{where}.seconds")
        out.append(AnswerIn(qid, tuple(sorted(set(choices))), extra,
                            float(seconds) if seconds is not None else None))
    return out


def allowed_choices(question: Question) -> set[str]:
    """The answers a relation question accepts: the pair's relations or no_relation."""
    pair = question.pair
    assert pair is not None
    return {*predicates_for(pair.subject_type, pair.object_type), NO_RELATION}


def _check_choices(question: Question, answer: AnswerIn, where: str) -> None:
    if question.kind != TaskKind.RELATION:
        return  # document tasks carry their spans and relations in `extra`
    allowed = allowed_choices(question)
    bad = [c for c in answer.choices if c not in allowed]
    if bad:
        raise IntakeError(f"{where}: {bad[0]!r} is not an option for this pair "
                          f"(allowed: {', '.join(sorted(allowed))})", where)
    if NO_RELATION in answer.choices and len(answer.choices) > 1:
        raise IntakeError(f"{where}: 'no_relation' cannot be combined with a relation", where)


def worker_for(backend: str, external_id: str, user: object | None = None) -> CrowdWorker:
    """The CrowdWorker row for an external id, created on first sight."""
    if not external_id or len(external_id) > 64:
        raise IntakeError("a worker id (1–64 characters) is required", "workerId")
    worker, _ = CrowdWorker.objects.get_or_create(
        backend=backend, external_id=external_id,
        defaults={"user": user if getattr(user, "pk", None) else None})
    return worker


def _same_answers(assignment: Assignment, answers: Iterable[AnswerIn]) -> bool:
    stored = {r.question_id: tuple(r.choices) for r in assignment.responses.all()}
    return stored == {a.question_id: a.choices for a in answers}


def submit_assignment(*, hit: Hit, worker: CrowdWorker, assignment_id: str,
                      answers: list[AnswerIn], source: str = "intake") -> Assignment:
    """Validate and store one worker's answers to every question of a HIT."""
    if not assignment_id or len(assignment_id) > 64:
        raise IntakeError("an assignment id (1–64 characters) is required", "assignmentId")
    with transaction.atomic():
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        existing = Assignment.objects.filter(external_id=assignment_id).first()
        if existing is not None:
            if existing.hit_id != locked.pk or existing.worker_id != worker.pk:
                raise IntakeError("this assignment belongs to another HIT or worker",
                                  "assignmentId", status=403)
            if not _same_answers(existing, answers):
                raise IntakeError("this assignment was already submitted with other answers",
                                  "answers", status=409)
            return existing  # a repeated POST: nothing new
        if locked.state != HitState.POSTED:
            raise IntakeError(f"this HIT is {locked.get_state_display()} and takes no answers",
                              "hitId", status=409)
        if worker.blocked:
            raise IntakeError("this worker may no longer answer our tasks", "workerId",
                              status=403)
        if Assignment.objects.filter(hit=locked, worker=worker).exists():
            raise IntakeError("this worker already answered this HIT", "workerId", status=409)
        items = {hq.question_id: hq.question for hq in
                 locked.items.select_related("question__pair")}
        given = [a.question_id for a in answers]
        if len(set(given)) != len(given):
            raise IntakeError("a question is answered twice", "answers")
        missing = set(items) - set(given)
        extra = set(given) - set(items)
        if extra:
            raise IntakeError(f"question {min(extra)} is not part of this HIT", "answers")
        if missing:
            raise IntakeError(f"question {min(missing)} of this HIT has no answer", "answers")
        for i, answer in enumerate(answers):
            _check_choices(items[answer.question_id], answer, f"answers[{i}].choices")
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
            raise IntakeError("this worker already answered one of these questions",
                              "answers", status=409) from exc
        qids = sorted(items)
        transaction.on_commit(lambda: answers_stored.send(
            sender=Hit, hit_id=locked.pk, question_ids=qids))
    return assignment
