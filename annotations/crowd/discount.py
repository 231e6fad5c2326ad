"""A rejected assignment's answers stop counting.

Whatever rejects an assignment — the review of a finished HIT (`verdicts`), an
operator in the admin (the same function), or a verdict given on MTurk's own site
(copied by the sync) — calls `discount` in the transaction that stores the
REJECTED state. Its `Response` rows are kept for audit with `counted = False`; every
reader of answers (labels, worker quality, crowd accuracy, the scoring's noise
correction) skips them. The UPDATE is stamped by the Response trigger, so the
scoring's kept answers see a changed row and read everything again.

After commit the labels of the questions they answered are recomputed from the
answers that still count (`labels.recount`, queued by name: this module is imported
by `verdicts` and `sync`, which `labels` imports). In the same transaction each
relation question among them is marked `recount_pending_since`; only the recount that
relabels it clears the mark, so a recount lost with its task is found by the re-drive
(`labels.stale_labels`) whatever answers came in since.
"""

from __future__ import annotations

from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations.models import Question, Response, TaskKind
from kbpo.core import jobs

RECOUNT_TASK = "annotations.recount"  # crowd/tasks.py → labels.recount


def discount(assignment_id: int) -> list[int]:
    """Stop counting an assignment's answers; the questions they answered (sorted).
    Call inside the transaction that rejects it."""
    rows = Response.objects.filter(assignment_id=assignment_id, counted=True)
    question_ids = sorted(set(rows.values_list("question_id", flat=True)))
    if question_ids:
        # The questions a recount relabels. Row-locked in id order (two rejections on
        # the same questions never deadlock); a recount holding one blocks the mark
        # until it commits, so its clearing can never erase this mark (labels.recount).
        # `no_key`: answers being stored for them (a foreign key share lock) go on.
        marked = list(Question.objects.select_for_update(no_key=True)
                      .filter(pk__in=question_ids, kind=TaskKind.RELATION,
                              control_answer__isnull=True)
                      .order_by("pk").values_list("pk", flat=True))
        Question.objects.filter(pk__in=marked).update(recount_pending_since=Coalesce(
            "recount_pending_since", Value(timezone.now())))  # the oldest mark stays
        rows.update(counted=False)
        jobs.enqueue(RECOUNT_TASK, question_ids)
    return question_ids
