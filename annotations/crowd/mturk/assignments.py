"""Assignments: list them, approve or reject once, and read MTurk's copy of the answers."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .client import ASSIGNMENT_STATUSES, MTurkClient, MTurkError, call, paginate

# --------------------------------------------------------------------------- assignments


@dataclass(frozen=True)
class AssignmentRecord:
    """An assignment as MTurk reports it, with the answer already parsed."""

    assignment_id: str
    worker_id: str
    hit_id: str
    status: str
    submit_time: datetime | None
    answers: dict[str, list[str]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # Why `Answer` could not be read ("" if it could): the answer of one assignment,
    # which a worker may hand-craft, must not stop the listing of the others.
    answer_error: str = ""
    # MTurk's server-side clock: when the worker accepted (None if the record lacks it).
    accept_time: datetime | None = None

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> AssignmentRecord:
        answer = data.get("Answer") or ""
        answers: dict[str, list[str]] = {}
        error = ""
        if answer.strip():
            try:
                answers = parse_answer_xml(answer)
            except ValueError as exc:
                error = str(exc)[:300]
        return cls(
            assignment_id=data["AssignmentId"], worker_id=data["WorkerId"],
            hit_id=data["HITId"], status=data["AssignmentStatus"],
            submit_time=data.get("SubmitTime"), answers=answers, raw=data,
            answer_error=error, accept_time=data.get("AcceptTime"),
        )

    @property
    def work_seconds(self) -> float | None:
        """SubmitTime − AcceptTime by MTurk's clock (the worker cannot forge it); None
        when either is missing or is not a timestamp."""
        accepted, submitted = self.accept_time, self.submit_time
        if not isinstance(accepted, datetime) or not isinstance(submitted, datetime):
            return None
        try:
            return (submitted - accepted).total_seconds()
        except TypeError:  # one aware, one naive: not comparable, so no verdict on time
            return None


def list_all_assignments(
    client: MTurkClient, hit_id: str, statuses: Iterable[str] = ASSIGNMENT_STATUSES,
) -> list[AssignmentRecord]:
    """Every assignment of ``hit_id`` in ``statuses``, across all pages."""
    wanted = list(statuses)
    unknown = set(wanted) - set(ASSIGNMENT_STATUSES)
    if unknown or not wanted:
        raise ValueError(f"statuses must be a non-empty subset of {ASSIGNMENT_STATUSES}")
    items = paginate(client, "list_assignments_for_hit", "Assignments",
                      HITId=hit_id, AssignmentStatuses=wanted)
    return [AssignmentRecord.from_api(a) for a in items]


def get_assignment(client: MTurkClient, assignment_id: str) -> dict[str, Any]:
    return call(client, "get_assignment", AssignmentId=assignment_id)["Assignment"]


def approve(
    client: MTurkClient,
    assignment_id: str,
    feedback: str | None = None,
    *,
    override_rejection: bool = False,
) -> bool:
    """Approve (pay) an assignment. True if approved now, False if it already was.

    An error from ApproveAssignment is checked with GetAssignment: if the assignment
    is Approved (by us earlier, by a lost-response retry, or by auto-approval) that is
    success, whatever the error text said.
    """
    params: dict[str, Any] = {"AssignmentId": assignment_id}
    if feedback:
        params["RequesterFeedback"] = feedback
    if override_rejection:
        params["OverrideRejection"] = True
    try:
        call(client, "approve_assignment", **params)
    except MTurkError as err:
        if err.code == "RequestError" and _status_of(client, assignment_id) == "Approved":
            return False
        raise
    return True


def _status_of(client: MTurkClient, assignment_id: str) -> str | None:
    """The assignment's status, or None if MTurk will not tell (the original error wins)."""
    try:
        return get_assignment(client, assignment_id)["AssignmentStatus"]
    except MTurkError:
        return None


def reject(client: MTurkClient, assignment_id: str, reason: str) -> bool:
    """Reject an assignment; the worker sees ``reason``. False if already rejected.

    Rejections hurt a worker's approval rate, so only clear spam is rejected and a
    reason is mandatory.
    """
    if not reason or not reason.strip():
        raise ValueError("a rejection needs a reason the worker can read")
    try:
        call(client, "reject_assignment", AssignmentId=assignment_id,
              RequesterFeedback=reason.strip())
    except MTurkError as err:
        if err.code == "RequestError" and _status_of(client, assignment_id) == "Rejected":
            return False
        raise
    return True


# --------------------------------------------------------------------------- answers


def parse_answer_xml(xml: str) -> dict[str, list[str]]:
    """QuestionFormAnswers XML (``Assignment.Answer``) as {field: [values]}.

    ExternalQuestion answers arrive as one FreeText per posted form field; a field
    posted twice, or a multi-select, gives several values in order.
    """
    if "<!DOCTYPE" in xml or "<!ENTITY" in xml:
        raise ValueError("answer XML must not contain a DTD")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"answer XML is not well-formed: {exc}") from exc
    if _local(root.tag) != "QuestionFormAnswers":
        raise ValueError(f"not a QuestionFormAnswers document: <{_local(root.tag)}>")
    out: dict[str, list[str]] = {}
    for answer in root:
        if _local(answer.tag) != "Answer":
            continue
        qid: str | None = None
        values: list[str] = []
        for child in answer.iter():
            name = _local(child.tag)
            if name == "QuestionIdentifier":
                qid = (child.text or "").strip()
            elif name in {"FreeText", "SelectionIdentifier", "OtherSelectionText",
                          "UploadedFileKey"}:
                values.append(child.text or "")
        if not qid:
            raise ValueError("an Answer without a QuestionIdentifier")
        out.setdefault(qid, []).extend(values)
    return out


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
