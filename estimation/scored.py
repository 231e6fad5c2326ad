"""A submission whose every sampled prediction is labelled: moved to `scored` by the
recompute that found it so (estimation/scoring.py), its owner e-mailed once."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse

from kbpo.core.security import isolated
from submissions.models import State, Submission
from submissions.services import TransitionError, transition

from .models import METRICS, ScoreRun, SystemScore, interval_ends, is_exact

logger = logging.getLogger(__name__)


def mark_scored(sub: Submission, run: ScoreRun) -> bool:
    """Move a submission to `scored` and e-mail its owner once that is committed."""
    score = (SystemScore.objects.filter(run=run, submission=sub, scheme=run.draw_scheme)
             .first())
    message = "All sampled predictions are labelled."
    if score is not None:
        parts = [f"{m} {est:.3f} " + ("(exact)" if is_exact(lo, hi)
                                       else "[{}, {}]".format(*interval_ends(lo, hi)))
                 for m in METRICS for est, lo, hi in [score.interval(m)] if est is not None]
        if parts:
            message += f" {run.draw_scheme} scheme: " + ", ".join(parts) + "."
    with transaction.atomic():
        try:
            transition(sub, State.SCORED, message)
        except TransitionError:
            return False  # withdrawn or re-planned meanwhile
        transaction.on_commit(lambda: notify_scored(sub.pk, run.pk))
    return True


def fmt_interval(est: float | None, lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "not estimable yet"
    head = "—" if est is None else f"{est:.3f}"
    if is_exact(lo, hi):
        return f"{head}  (exact: every prediction is labelled)"
    return "{}  (90% interval {}–{})".format(head, *interval_ends(lo, hi))


def report_url(submission_id: int) -> str:
    base = settings.KBPO_PUBLIC_URL.rstrip("/")
    return base + reverse("submission-evaluation", args=[submission_id])


def notify_scored(submission_id: int, run_id: int) -> None:
    """E-mail the owner that the submission is scored (never raises: mail may be down)."""
    try:
        sub = Submission.objects.select_related("owner", "corpus").get(pk=submission_id)
        if not sub.owner.email:
            return
        run = ScoreRun.objects.get(pk=run_id)
        lines = [f"Hello {sub.owner.get_username()},", "",
                 f"your submission “{isolated(sub.name)}” (#{sub.pk}) on corpus "
                 f"{sub.corpus.tag} is scored: every prediction sampled for it has a crowd "
                 "label.", ""]
        for score in SystemScore.objects.filter(run=run, submission=sub).order_by("scheme"):
            lines.append(f"{score.scheme} scheme (joint estimates):")
            for metric in METRICS:
                lines.append(f"  {metric:<9} {fmt_interval(*score.interval(metric))}")
        first = SystemScore.objects.filter(run=run, submission=sub).first()
        if first is not None:
            lines += ["", f"Labels used: {first.labels_used}; crowd cost charged: "
                          f"${first.cost_usd}."]
        lines += ["", "The estimates keep sharpening as other submissions add labels; the "
                      "report shows them live:", report_url(sub.pk), "", "— KBPO"]
        send_mail(f"[KBPO] {isolated(sub.name)} is scored", "\n".join(lines),
                  settings.DEFAULT_FROM_EMAIL, [sub.owner.email])
    except Exception:
        logger.exception("could not e-mail the owner of submission %s", submission_id)
