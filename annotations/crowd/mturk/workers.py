"""Blocking workers from our tasks with a qualification of our own."""

from __future__ import annotations

from .client import MTurkClient, MTurkError, call, paginate

# --------------------------------------------------------------------------- blocking


def create_block_qualification(
    client: MTurkClient,
    name: str,
    description: str = "Workers whose answers disagreed too often with the majority.",
) -> str:
    """Our "blocked" qualification type (HITs require that workers do NOT have it).

    Names are unique per requester, so an existing type of that name is reused.
    """
    try:
        response = call(client, "create_qualification_type", Name=name,
                         Description=description, QualificationTypeStatus="Active")
        return response["QualificationType"]["QualificationTypeId"]
    except MTurkError as err:
        if err.code != "RequestError":
            raise
        existing = _find_qualification_type(client, name)
        if existing is None:
            raise
        return existing


def _find_qualification_type(client: MTurkClient, name: str) -> str | None:
    for qual in paginate(client, "list_qualification_types", "QualificationTypes",
                          Query=name, MustBeRequestable=False, MustBeOwnedByCaller=True):
        if qual.get("Name") == name:
            return qual["QualificationTypeId"]
    return None


def block_worker(client: MTurkClient, worker_id: str, qual_id: str, reason: str) -> None:
    """Grant the block qualification, hiding our HITs from the worker.

    AssociateQualificationWithWorker has no reason field; ``reason`` is required so
    the caller records it (and it is sent to MTurk when the block is lifted).
    Unlike CreateWorkerBlock this is invisible to the worker and does not count
    against their standing on MTurk.
    """
    if not reason or not reason.strip():
        raise ValueError("blocking a worker needs a reason for our records")
    call(client, "associate_qualification_with_worker", QualificationTypeId=qual_id,
          WorkerId=worker_id, IntegerValue=1, SendNotification=False)


def unblock_worker(client: MTurkClient, worker_id: str, qual_id: str, reason: str) -> None:
    """Revoke the block qualification; an error if the worker was not blocked."""
    call(client, "disassociate_qualification_from_worker", QualificationTypeId=qual_id,
          WorkerId=worker_id, Reason=reason or "unblocked")


unblock = unblock_worker


def list_blocked_workers(client: MTurkClient, qual_id: str) -> list[str]:
    """Workers currently holding the block qualification."""
    return [q["WorkerId"] for q in paginate(
        client, "list_workers_with_qualification_type", "Qualifications",
        QualificationTypeId=qual_id, Status="Granted")]


