"""Running the ingestion of one submission, and re-driving submissions that got stuck.

`run_ingestion` is the body of the `submissions.ingest` task, `redrive_stuck` of the
periodic `submissions.redrive_stuck`; both are safe to run twice or concurrently.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from kbpo.core.jobs import enqueue
from kbpo.core.schemas import DOCRED

from .docred_ingest import DocredIngestor
from .ingest import Ingestor, Outcome, Rejected
from .kbformat import CODES
from .models import RelationInstance, State, Submission
from .services import INGEST_TASK, TransitionError, on_ingested, transition

logger = logging.getLogger(__name__)


class Interrupted(Exception):
    """The database connection was lost during an ingestion: nothing of it was kept
    and the submission is still `validating`; the task retries it (and the re-drive
    picks it up if the retries run out)."""


# SQLSTATEs of a connection going away: class 08 (connection exception), and the
# server shutting down or terminating the backend (57P01-57P03). A lock or statement
# timeout (55P03, 57014) is an error of the work, not of the connection.
_GONE = ("08", "57P01", "57P02", "57P03")


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from or during, is the database
    going away (a restart, a terminated backend) rather than an error of the work."""
    if connection.vendor != "postgresql":
        return False  # (SQLite's "database is locked" is no lost connection)
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, InterfaceError):
            return True
        if isinstance(err, OperationalError):
            raw = err.__cause__
            code = getattr(raw, "pgcode", None) or getattr(raw, "sqlstate", None)
            if code is None or code.startswith(_GONE):
                return True
        err = err.__cause__ or err.__context__
    return False


def run_ingestion(submission_id: int) -> str:
    """Validate and ingest one submission; safe to run twice or concurrently.

    A first short transaction moves `uploaded` to `validating` (so users see it);
    the ingestion itself runs in one transaction holding the submission's row lock,
    so a second delivery of the task waits and then finds nothing to do. Leftover
    rows (re-validation of an ingested submission) are deleted inside it.
    """
    with transaction.atomic():
        sub = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if sub is None:
            return "missing"
        if sub.state == State.UPLOADED:
            transition(sub, State.VALIDATING, "Validation started.")
        elif sub.state != State.VALIDATING:
            return f"skipped ({sub.state})"
    try:
        with transaction.atomic():
            # of=("self",): FOR UPDATE on a join locks the corpus row too, and every
            # insert referencing the corpus (another upload, HITs, score runs) would
            # wait for this whole ingestion at its COMMIT.
            sub = (Submission.objects.select_for_update(of=("self",))
                   .select_related("corpus").get(pk=submission_id))
            if sub.state != State.VALIDATING:
                return f"skipped ({sub.state})"
            delete_rows(sub)
            if sub.drop_invalid:
                out, dropped = ingest_dropping_invalid(sub)
            else:
                out, dropped = ingestor_for(sub)(sub).run(), {}
            warnings = out.report.warnings
            kept = (f" {len(dropped):,} invalid line(s) dropped." if sub.drop_invalid
                    else "")
            transition(
                sub, State.INGESTED,
                f"Accepted: {out.n_relations:,} relations, {out.n_mentions:,} mentions, "
                f"{warnings:,} warning(s).{kept}",
                run_id=out.run_id, report=_with_dropped(out, dropped),
                report_counts=dict(out.report.counts), stats=out.stats,
                n_entities=out.n_entities, n_mentions=out.n_mentions,
                n_relations=out.n_relations, n_warnings=warnings, n_errors=0, error="",
                n_dropped=len(dropped),
                dropped=[[line, code, msg] for line, (code, msg) in sorted(dropped.items())])
    except Rejected as rej:
        try:
            transition(
                sub, State.REJECTED,
                f"Rejected: {rej.report.errors:,} error(s), {rej.report.warnings:,} "
                "warning(s).",
                run_id=rej.run_id, report=rej.report.as_list(),
                report_counts=dict(rej.report.counts), stats=rej.stats, n_entities=0,
                n_mentions=0, n_relations=0, n_warnings=rej.report.warnings,
                n_errors=rej.report.errors)
        except TransitionError:
            return "skipped (state changed meanwhile)"
        return "rejected"
    except SoftTimeLimitExceeded:
        limit = settings.KBPO_SUBMISSION_TIME_LIMIT
        logger.warning("ingestion of submission %s stopped after %s s", submission_id, limit)
        try:
            transition(sub, State.FAILED,
                       f"Validation stopped: it took longer than {limit:,} s, the limit. "
                       "Nothing of the file was kept. A file this slow to check usually "
                       "has entities with very many mentions or provenances with very "
                       "many spans; ask the operators if yours should pass.",
                       error=f"SoftTimeLimitExceeded after {limit} s")
        except TransitionError:
            return "skipped (state changed meanwhile)"
        return "failed"
    except Exception as exc:
        if connection_lost(exc):
            logger.warning("ingestion of submission %s interrupted: database connection "
                           "lost (%s)", submission_id, exc)
            # The rollback happened on the server; a fresh connection for the retry.
            if not connection.in_atomic_block:
                connection.close()
            raise Interrupted(str(exc)) from exc
        logger.exception("ingestion of submission %s failed", submission_id)
        try:
            transition(sub, State.FAILED, f"Internal error: {type(exc).__name__}.",
                       error=traceback.format_exc()[-20000:])
        except TransitionError:
            return "skipped (state changed meanwhile)"
        return "failed"
    try:
        on_ingested(sub)
    except Exception:
        # The submission is ingested and committed; the next stage owns its own errors.
        logger.exception("on_ingested hook failed for submission %s", submission_id)
    return "ingested"


def ingestor_for(sub: Submission) -> type[Ingestor] | type[DocredIngestor]:
    """The corpus's schema decides the file format: DocRED corpora take DocRED result
    files (checked at upload, docred_format.format_problem), the others TAC KB files."""
    return DocredIngestor if sub.corpus.schema == DOCRED else Ingestor


# Each round drops the lines the previous one found invalid; dropping a line can only
# expose errors in lines that depended on it, so a few rounds reach a clean file.
MAX_DROP_ROUNDS = 6
# The statistics of the lines read (`Ingestor._base_stats`), without those of the rows.
LINE_STATS = frozenset({"lines", "entity_lines", "relation_lines", "skipped",
                        "problems_by_code"})


def ingest_dropping_invalid(sub: Submission) -> tuple[Outcome, dict[int, tuple[str, str]]]:
    """Ingest the valid lines of a file: re-run the ingestor without the lines (and the
    entities) that had errors until it passes. Raises `Rejected` when a problem of the
    whole file remains (empty, corrupt, no relation left), or after MAX_DROP_ROUNDS.

    Returns the outcome and every dropped line as line -> (code, message).
    """
    dropped: dict[int, tuple[str, str]] = {}
    nodes: set[str] = set()
    last: Rejected | None = None
    for _round in range(MAX_DROP_ROUNDS):
        try:
            with transaction.atomic():  # a savepoint: a rejected round leaves nothing
                out = ingestor_for(sub)(sub, frozenset(dropped), frozenset(nodes)).run()
        except Rejected as rej:
            new_lines = set(rej.report.error_lines) - set(dropped)
            if not rej.curable or not (new_lines or rej.bad_nodes - nodes):
                raise
            if (rej.report.error_lines_full
                    or len(dropped) + len(new_lines) > settings.KBPO_SUBMISSION_MAX_DROPPED):
                raise _too_many(rej, set(dropped) | new_lines) from None
            for line in new_lines:
                dropped[line] = rej.report.error_lines[line]
            nodes |= rej.bad_nodes
            last = rej
            continue
        for line, why in out.cascaded.items():
            dropped.setdefault(line, why)
        if len(dropped) > settings.KBPO_SUBMISSION_MAX_DROPPED:
            # (The caller's rollback removes the rows this round inserted.)
            counts = {k: v for k, v in out.stats.items()  # not those of the rows undone
                      if k in LINE_STATS}
            # This round's report holds only warnings: list the invalid lines it dropped
            # (the first of them: the report is capped), so the owner sees what to fix.
            for line, (code, message) in sorted(dropped.items()):
                out.report.add(line, code, message)
            raise _too_many(Rejected(out.report, counts, out.run_id), set(dropped))
        return out, dropped
    assert last is not None
    raise last


def _too_many(rej: Rejected, lines: set[int]) -> Rejected:
    """`rej`, its report naming the line where the drop-invalid limit was passed: a
    file mostly invalid (often one of another corpus) is refused, not kept as its few
    valid lines with millions listed as dropped."""
    limit = settings.KBPO_SUBMISSION_MAX_DROPPED
    line = sorted(lines)[limit]
    rej.report.add(line, "TOO_MANY_INVALID_LINES",
                   f"more than {limit:,} lines are invalid, the most drop-invalid drops "
                   f"({len(lines):,} found before the check stopped)", always=True)
    return rej


def _with_dropped(out: Outcome, dropped: dict[int, tuple[str, str]]) -> list[dict]:
    """The report: warnings of the accepted file, then the dropped lines (capped; the
    full list is the submission's `dropped`, downloadable as dropped.tsv)."""
    cap = settings.KBPO_SUBMISSION_REPORT_MAX
    rows = out.report.as_list()
    for line, (code, message) in sorted(dropped.items())[:cap]:
        rows.append({"line": line, "code": code, "severity": "dropped", "message": message,
                     "hint": CODES[code][1]})
    return sorted(rows, key=lambda p: (p["line"], p["code"]))


REDRIVE_MESSAGE = "Re-queued automatically: {why} (attempt {n})."


def redrive_stuck() -> int:
    """Re-enqueue submissions stuck in uploaded/validating (worker crash, broker outage).

    A live ingestion holds its submission's row lock for the whole file, and a dead
    one's lock went with its database session: a `validating` row nobody holds
    (SKIP LOCKED) for KBPO_SUBMISSION_LOST_AFTER seconds lost its worker, and is
    re-queued at once; a row `uploaded` for KBPO_SUBMISSION_REDRIVE_AFTER seconds
    lost its queued task. The lock also keeps a re-queued ingestion from ever running
    beside the first. After KBPO_SUBMISSION_MAX_ATTEMPTS re-drives the submission is
    marked failed, so nothing stays in a non-final state forever.
    """
    after = settings.KBPO_SUBMISSION_REDRIVE_AFTER
    now = timezone.now()
    waiting = Q(state=State.UPLOADED, state_changed_at__lt=now - dt.timedelta(seconds=after))
    lost = Q(state=State.VALIDATING, state_changed_at__lt=now - dt.timedelta(
        seconds=settings.KBPO_SUBMISSION_LOST_AFTER))
    candidates = list(Submission.objects.filter(waiting | lost).values_list("pk", flat=True))
    handled = 0
    for pk in candidates:
        with transaction.atomic():
            sub = (Submission.objects.select_for_update(skip_locked=True)
                   .filter(waiting | lost, pk=pk).first())
            if sub is None:
                continue
            if sub.redrives >= settings.KBPO_SUBMISSION_MAX_ATTEMPTS:
                transition(sub, State.FAILED,
                           f"Gave up after {sub.redrives} automatic re-queues.",
                           error=f"Still {sub.state} after {sub.redrives} re-queues; the "
                                 "worker probably dies on this file (memory?). Check the "
                                 "worker logs, then re-run.")
            else:
                why = (f"no progress for {after // 60} minutes" if sub.state == State.UPLOADED
                       else "the worker validating it stopped")
                transition(sub, State.UPLOADED,
                           REDRIVE_MESSAGE.format(why=why, n=sub.redrives + 1),
                           redrives=sub.redrives + 1)
                enqueue(INGEST_TASK, pk)
            handled += 1
    return handled


def delete_rows(submission: Submission) -> None:
    """Remove a submission's ingested rows (shared mention pairs stay).

    Rows of other apps that point at its relation instances go first, through the
    ORM: a submission re-run after a failure past planning still has sample draws
    on the instances about to be replaced (they would break the foreign key).
    Looked up through the model's relations, so this layer names no upper app.
    """
    for rel in RelationInstance._meta.related_objects:
        (rel.related_model._base_manager
         .filter(**{f"{rel.field.name}__submission": submission}).delete())
    with connection.cursor() as cursor:
        for table in ("submissions_relationinstance", "submissions_submissionmention",
                      "submissions_submissionentity"):
            cursor.execute(f"DELETE FROM {table} WHERE submission_id = %s", [submission.pk])
