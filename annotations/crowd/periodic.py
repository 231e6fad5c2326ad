"""What Celery beat runs for the crowd: the MTurk sync and the re-drive.

`sync_all` reconciles every posted (and recently retired) MTurk HIT with MTurk: the
assignments MTurk confirmed are stored from MTurk's own copy, refused work gets its
verdict and its slot replaced, MTurk's own verdicts are copied, HITs still needed are
kept on the market, fully labelled ones are settled, and task-page posts MTurk never
confirmed expire.

`redrive` moves on the work that stopped moving:

* pending HITs of work without a submission (exhaustive annotation) are posted;
* questions holding enough answers but never aggregated are aggregated, and labels
  still counting a rejected assignment's answers are recounted;
* finished HITs whose review was lost are reviewed, refused work still without a
  verdict gets it, and HITs fully labelled but never settled are settled;
* task-page posts MTurk never confirmed expire, their answers dropped at once (the
  rows go a day later; forged ones after 30 days);
* fully labelled `annotating` submissions move on to scoring.

Submissions stuck before their HITs exist are the planner's
(`estimation.planning.redrive_planning`).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from annotations.models import (
    Backend,
    Hit,
    HitState,
    PagePost,
    PagePostState,
    Question,
    QuestionState,
    TaskKind,
)

from . import backends, budget, labels, mturk, posting, refusals, review, slots, sync
from .sync import SyncResult, collect

logger = logging.getLogger(__name__)


@dataclass
class RedriveResult:
    posted: int = 0
    aggregated: int = 0
    settled: int = 0
    expired_posts: int = 0
    scoring: list[int] | None = None
    recounted: int = 0


POST_RETENTION = dt.timedelta(days=30)  # forged page posts, for the operator
EXPIRED_POST_RETENTION = dt.timedelta(days=1)  # unconfirmed ones: anyone can make them


def redrive() -> RedriveResult:
    cutoff = timezone.now() - dt.timedelta(seconds=settings.KBPO_CROWD_REDRIVE_AFTER)
    out = RedriveResult()
    orphans = Hit.objects.filter(state=HitState.PENDING, created_at__lt=cutoff,
                                 submission__isnull=True)
    if orphans.exists():
        out.posted, _ = posting.post_pending_hits(orphans)
    ready = list(Question.objects.filter(state=QuestionState.OPEN, kind=TaskKind.RELATION)
                 .annotate(n=labels.COUNTED).filter(n__gte=F("answers_needed"))
                 .values_list("pk", flat=True)[:5000])
    out.aggregated = len(labels.aggregate(ready).labelled) if ready else 0
    # Labels still counting a rejected assignment's answers (a lost recount).
    stale = labels.stale_labels()
    out.recounted = len(stale)
    if stale:
        labels.recount(stale)
    # Finished HITs whose review was lost, and HITs fully labelled but never settled.
    for hit_id in Hit.objects.filter(state__in=(HitState.COMPLETE, HitState.EXPIRED),
                                     assignments__state="submitted").values_list(
            "pk", flat=True).distinct():
        review.review_hit(hit_id)
    # Refused work on live HITs whose verdict an MTurk failure delayed.
    for hit in Hit.objects.filter(state=HitState.POSTED, assignments__state="submitted",
                                  assignments__refusal__in=("reject", "pay")).distinct():
        refusals.finish_refusals(hit)  # failures are logged and retried next time
    out.expired_posts = sync.expire_page_posts()
    PagePost.objects.filter(state=PagePostState.FORGED,
                            received_at__lt=timezone.now() - POST_RETENTION).delete()
    PagePost.objects.filter(state=PagePostState.EXPIRED,
                            resolved_at__lt=timezone.now() - EXPIRED_POST_RETENTION).delete()
    unsettled = (Hit.objects.filter(state=HitState.POSTED, kind=TaskKind.RELATION,
                                    items__isnull=False)
                 .exclude(items__question__state=QuestionState.OPEN)
                 .values_list("pk", flat=True).distinct())
    out.settled = len(review.settle_hits(list(unsettled)))
    out.scoring = labels.finish_submissions()
    return out


def sync_hit(hit: Hit, result: SyncResult | None = None) -> SyncResult:
    """Reconcile one MTurk HIT with MTurk: collect, keep it answerable, or settle it."""
    result = result or SyncResult()
    result.hits += 1
    collect(hit, result)
    hit.refresh_from_db()
    if hit.state != HitState.POSTED:
        Hit.objects.filter(pk=hit.pk).update(last_synced_at=timezone.now())
        return result
    open_questions = hit.items.filter(question__state=QuestionState.OPEN).exists()
    if open_questions:
        backends.ensure_assignments(hit)
        remote = mturk.get_hit(backends.client(), hit.external_id)
        if remote["Expiration"] <= timezone.now():
            # Questions still need answers: keep the HIT on the market.
            backends.extend(hit)
            result.extended += 1
        # Refused work, and slots MTurk did not give back, are replaced.
        result.replaced += slots.replenish(Hit.objects.get(pk=hit.pk))
    else:
        result.settled += len(review.settle_hits([hit.pk]))
    Hit.objects.filter(pk=hit.pk).update(last_synced_at=timezone.now())
    return result


def _recently_closed() -> Q:
    """Retired or expired HITs on which late work may still be submitted or
    auto-approved: they are collected (never extended) until MTurk is done with them."""
    horizon = timezone.now() - dt.timedelta(
        seconds=settings.KBPO_MTURK_ASSIGNMENT_DURATION + settings.KBPO_MTURK_AUTO_APPROVAL_DELAY)
    return Q(state=HitState.EXPIRED, expires_at__gte=horizon)


def sync_all(hit_ids: list[int] | None = None) -> SyncResult:
    """Reconcile every posted MTurk HIT (or these); errors are collected, not raised."""
    result = SyncResult()
    qs = Hit.objects.filter(Q(state=HitState.POSTED) | _recently_closed(),
                            backend=Backend.MTURK,
                            external_id__isnull=False).order_by("last_synced_at", "pk")
    if hit_ids is not None:
        qs = qs.filter(pk__in=hit_ids)
    for hit in qs:
        try:
            sync_hit(hit, result)
        except (mturk.MTurkError, budget.BudgetExceeded) as exc:
            result.errors.append(f"HIT {hit.pk}: {exc}")
            logger.warning("sync of HIT %s failed: %s", hit.pk, exc)
    result.posts_expired += sync.expire_page_posts()
    return result
