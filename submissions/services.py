"""Submission lifecycle: creation under limits, state transitions, withdrawal, hooks.

Every state change goes through `transition`, which enforces the allowed graph and
writes the timeline event in the same transaction as the state, under a row lock.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import zlib
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import OperationalError, connection, transaction
from django.dispatch import Signal
from django.utils import timezone

from kbpo.core.jobs import enqueue
from kbpo.core.models import Corpus
from kbpo.core.security import isolated

from .kbformat import open_stream
from .models import State as S
from .models import Submission, SubmissionEvent

INGEST_TASK = "submissions.ingest"  # submissions/tasks.py

# Which state may follow which. Self-loops on uploaded/validating record re-drives.
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.UPLOADED: frozenset({S.UPLOADED, S.VALIDATING, S.REJECTED, S.FAILED, S.WITHDRAWN}),
    S.VALIDATING: frozenset({S.UPLOADED, S.INGESTED, S.REJECTED, S.FAILED, S.WITHDRAWN}),
    # uploaded again = operator re-validation (the task deletes and redoes the rows).
    S.INGESTED: frozenset({S.PLANNING, S.UPLOADED, S.FAILED, S.WITHDRAWN}),
    S.PLANNING: frozenset({S.ANNOTATING, S.SCORING, S.FAILED, S.WITHDRAWN}),
    S.ANNOTATING: frozenset({S.SCORING, S.FAILED, S.WITHDRAWN}),
    S.SCORING: frozenset({S.SCORED, S.ANNOTATING, S.FAILED, S.WITHDRAWN}),
    S.SCORED: frozenset({S.SCORING, S.ANNOTATING, S.WITHDRAWN}),
    S.REJECTED: frozenset({S.UPLOADED, S.WITHDRAWN}),
    S.FAILED: frozenset({S.UPLOADED, S.WITHDRAWN}),
    S.WITHDRAWN: frozenset(),
}

# What the owner reads next to each state.
NEXT_STEP: dict[str, str] = {
    S.UPLOADED: "Your file is stored and queued for validation; this usually starts within "
                "a minute.",
    S.VALIDATING: "Every line is being checked against the corpus and the schema. Large "
                  "files take a minute or two.",
    S.INGESTED: "Your file was accepted. Next, KBPO plans how many of your predictions the "
                "crowd needs to verify, reusing labels it already holds.",
    S.PLANNING: "Sampling your predictions and deciding which need new crowd labels.",
    S.ANNOTATING: "Crowdworkers are verifying a sample of your predictions.",
    S.SCORING: "Precision, recall and F1 are being estimated from the labels.",
    S.SCORED: "Scores are ready; they sharpen as other submissions add labels.",
    S.REJECTED: "The file has errors (see the validation report). Fix them and upload "
                "again; rejected uploads do not count against your limits.",
    S.FAILED: "An internal error stopped processing. The operators have been told and can "
              "re-run it; you need not upload again.",
    S.WITHDRAWN: "Withdrawn: this submission no longer counts anywhere.",
}

# Sent after a submission reached `ingested` and that state was committed. The
# planning stage (crowd issue) connects a receiver that moves it to `planning`.
submission_ingested = Signal()


class TransitionError(Exception):
    """A state change the graph does not allow."""


class SubmissionBusy(Exception):
    """The submission's row is locked by a running ingestion (which holds it until the
    whole file is in): a person's request says so instead of waiting minutes for it."""


# How long a request waits for the submission's row lock: state changes hold it for
# milliseconds, an ingestion for the whole file.
REQUEST_LOCK_WAIT_MS = 3000


class DuplicateUpload(Exception):
    """The same KB (by content) is already a submission of this owner on this corpus."""

    def __init__(self, existing: Submission) -> None:
        self.existing = existing
        super().__init__(
            f"This file is identical to your submission #{existing.pk} ({isolated(existing.name)}, "
            f"{existing.state}) on corpus {existing.corpus.tag}; it was not uploaded again "
            "and used no slot. Withdraw that one first to resubmit it.")


def content_sha256(fh: IO[bytes], compressed: bool) -> str:
    """SHA-256 of the uncompressed content, so a gzip and a plain copy hash alike."""
    fh.seek(0)
    digest = hashlib.sha256()
    try:
        # The reader ingestion uses, so a gzip with trailing bytes hashes as its content.
        stream = open_stream(fh)[0] if compressed else fh
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    except (OSError, EOFError, zlib.error):  # damaged gzip: ingestion says so; hash bytes
        fh.seek(0)
        digest = hashlib.sha256()
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    fh.seek(0)
    return digest.hexdigest()


class LimitExceeded(Exception):
    """The user has no uploads left for this corpus; `retry_after`: seconds until the
    next daily slot opens (None when the total limit is spent: nothing opens)."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def transition(submission: Submission, to_state: str, message: str = "",
               lock_wait_ms: int | None = None, **fields: Any) -> Submission:
    """Move a submission to `to_state`, writing the event atomically.

    Locks the row, re-reads the current state (so concurrent callers serialise) and
    raises TransitionError if the edge is not allowed. Extra `fields` are saved with it.
    With `lock_wait_ms` (Postgres), raises SubmissionBusy when the row stays locked
    that long, rather than waiting for the lock.
    """
    with transaction.atomic():
        locked = _lock(submission.pk, lock_wait_ms)
        if to_state not in ALLOWED_TRANSITIONS[locked.state]:
            raise TransitionError(
                f"submission {locked.pk} cannot go from {locked.state} to {to_state}")
        now = timezone.now()
        SubmissionEvent.objects.create(submission=locked, from_state=locked.state,
                                       to_state=to_state, message=message)
        locked.state = to_state
        locked.state_changed_at = now
        for name, value in fields.items():
            setattr(locked, name, value)
        locked.save(update_fields=["state", "state_changed_at", *fields])
    for name in ("state", "state_changed_at", *fields):
        setattr(submission, name, getattr(locked, name))
    return submission


def _lock(pk: int, wait_ms: int | None) -> Submission:
    """The submission's row, locked for this transaction."""
    if wait_ms is None or connection.vendor != "postgresql":
        return Submission.objects.select_for_update().get(pk=pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout')")
        (before,) = cursor.fetchone()
        # Local to the transaction, and undone with the savepoint if the lock fails.
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{wait_ms}ms"])
        try:
            with transaction.atomic():
                locked = Submission.objects.select_for_update().get(pk=pk)
        except OperationalError as exc:
            cause = exc.__cause__
            code = getattr(cause, "pgcode", None) or getattr(cause, "sqlstate", None)
            if code != "55P03":  # lock_not_available
                raise
            raise SubmissionBusy(
                f"Submission {pk} is being validated right now, which can take a few "
                "minutes for a large file; try again when its page shows the result."
            ) from None
        finally:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [before])
    return locked


@dataclass(frozen=True)
class Quota:
    daily_limit: int
    total_limit: int
    used_today: int
    used_total: int
    next_slot_at: dt.datetime | None

    @property
    def left_today(self) -> int:
        return max(0, min(self.daily_limit - self.used_today,
                          self.total_limit - self.used_total))

    @property
    def left_total(self) -> int:
        return max(0, self.total_limit - self.used_total)


def quota(user: AbstractBaseUser, corpus: Corpus) -> Quota:
    """How many uploads `user` has used and has left on `corpus`.

    Counting rules: everything except rejected uploads counts (withdrawn ones do);
    "per day" is any rolling 24 hours.
    """
    since = timezone.now() - dt.timedelta(days=1)
    qs = Submission.objects.filter(owner=user, corpus=corpus).counting_towards_limits()
    recent = list(qs.filter(created_at__gte=since).order_by("created_at")
                  .values_list("created_at", flat=True))
    daily = settings.KBPO_SUBMISSION_DAILY_LIMIT
    next_slot = None
    if len(recent) >= daily and recent:
        next_slot = recent[len(recent) - daily] + dt.timedelta(days=1)
    return Quota(daily, settings.KBPO_SUBMISSION_TOTAL_LIMIT, len(recent), qs.count(),
                 next_slot)


def _check_rejected_allowance(owner: AbstractBaseUser) -> None:
    """Rejected uploads take no slot, but each still costs a validation: past
    KBPO_SUBMISSION_REJECTED_DAILY_LIMIT of them in 24 hours (any corpus) the owner
    waits, so free accounts cannot keep the ingestion workers busy with junk."""
    limit = settings.KBPO_SUBMISSION_REJECTED_DAILY_LIMIT
    since = timezone.now() - dt.timedelta(days=1)
    recent = list(Submission.objects.filter(owner=owner, state=S.REJECTED,
                                            created_at__gte=since)
                  .order_by("-created_at").values_list("created_at", flat=True)[:limit])
    if len(recent) >= limit:
        again = recent[-1] + dt.timedelta(days=1)
        raise LimitExceeded(
            f"{limit} of your uploads were rejected in the last 24 hours, the most "
            f"allowed; you can upload again at {again:%Y-%m-%d %H:%M} UTC. Fix the "
            "problems listed in their reports first.")


def create_submission(*, owner: AbstractBaseUser, corpus: Corpus, name: str, file: IO[bytes],
                      original_name: str, compressed: bool, description: str = "",
                      method_description: str = "", paper_url: str = "", public: bool = False,
                      run_id: str = "", enforce_limits: bool = True,
                      drop_invalid: bool = False) -> Submission:
    """Store an upload as `uploaded` and enqueue its ingestion once committed.

    The owner's user row is locked while counting, so two parallel uploads can never
    both take the last slot.
    """
    digest = content_sha256(file, compressed)
    original_name = _printable_name(original_name)
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=owner.pk)
        # Before the limits: an identical re-upload must not cost a slot. A rejected
        # one is no duplicate: the same file may come back with drop-invalid ticked.
        existing = (Submission.objects.filter(owner=owner, corpus=corpus,
                                              content_sha256=digest)
                    .exclude(state__in=(S.WITHDRAWN, S.REJECTED))
                    .select_related("corpus").first())
        if existing is not None:
            raise DuplicateUpload(existing)
        if enforce_limits:
            _check_rejected_allowance(owner)
            q = quota(owner, corpus)
            if q.left_today <= 0:
                if q.left_total <= 0:
                    raise LimitExceeded(
                        f"You have used all {q.total_limit} submissions allowed on corpus "
                        f"{corpus.tag}. Withdrawn submissions count; rejected ones do not.")
                when = (f" The next slot opens at {q.next_slot_at:%Y-%m-%d %H:%M} UTC."
                        if q.next_slot_at else "")
                wait = (max(1, int((q.next_slot_at - timezone.now()).total_seconds()) + 1)
                        if q.next_slot_at else None)
                raise LimitExceeded(
                    f"You have used all {q.daily_limit} submissions allowed on corpus "
                    f"{corpus.tag} in 24 hours.{when}", retry_after=wait)
        size = _file_size(file)
        sub = Submission(owner=owner, corpus=corpus, name=name, description=description,
                         method_description=method_description, paper_url=paper_url,
                         public=public, original_name=original_name[:255],
                         compressed=compressed, file_size=size, run_id=run_id[:200],
                         drop_invalid=drop_invalid, content_sha256=digest)
        sub.file.save(_storage_name(original_name, compressed), File(file), save=False)
        sub.save()
        SubmissionEvent.objects.create(submission=sub, from_state="", to_state=S.UPLOADED,
                                       message=f"Uploaded {original_name[:200]}")
        enqueue(INGEST_TASK, sub.pk)
    return sub


def _printable_name(name: str) -> str:
    """A file name the database can store: a name that is not UTF-8 on disk (a Latin-1
    "café.tsv" given to `manage.py submit`) reaches Python with its bytes as lone
    surrogates, which cannot be encoded; they become U+FFFD."""
    raw = name.encode("utf-8", "surrogateescape")
    return "".join(c for c in raw.decode("utf-8", "replace") if c.isprintable())


def _file_size(fh: IO[bytes]) -> int:
    size = getattr(fh, "size", None)
    if size is None:
        pos = fh.tell()
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(pos)
    return int(size)


def _storage_name(original: str, compressed: bool) -> str:
    # Never trust the client's name for the path; the original is kept in a column.
    return "kb.tsv.gz" if compressed else "kb.tsv"


def withdraw(submission: Submission, by: AbstractBaseUser | None = None,
             reason: str = "", wait: bool = True) -> Submission:
    """Withdraw a submission: its rows stay but stop counting everywhere.

    `wait=False` (a person's request) raises SubmissionBusy while an ingestion holds
    the submission, instead of holding the request (and a web worker) until it ends.
    """
    who = f" by {by.get_username()}" if by is not None else ""
    message = f"Withdrawn{who}." + (f" {reason}" if reason else "")
    return transition(submission, S.WITHDRAWN, message,
                      lock_wait_ms=None if wait else REQUEST_LOCK_WAIT_MS)


def requeue(submission: Submission, message: str) -> Submission:
    """Send a submission back to `uploaded` and enqueue ingestion (re-run, re-validate)."""
    with transaction.atomic():
        transition(submission, S.UPLOADED, message, error="", redrives=0)
        enqueue(INGEST_TASK, submission.pk)
    return submission


def on_ingested(submission: Submission) -> None:
    """Hook run after a submission reached `ingested` (and that was committed).

    The estimation app connects a receiver to `submission_ingested` that queues the
    planning of the submission's sample (`estimation.planning`).
    """
    submission_ingested.send(sender=Submission, submission=submission)


def note_event(sub: Submission, message: str) -> None:
    """A timeline line for something that happened without a state change (written
    once: the same message twice in a row is kept once)."""
    last = sub.events.order_by("-created_at", "-id").first()
    if last is None or last.message != message:
        SubmissionEvent.objects.create(submission=sub, from_state=sub.state,
                                       to_state=sub.state, message=message)
