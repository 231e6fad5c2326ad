"""What crowd work is still waiting, and why: the operator's page (admin → HITs →
"Still waiting"). Every item that has not reached a final state appears in one section
with the reason it waits and what moves it on."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from annotations.models import (
    Assignment,
    AssignmentState,
    Backend,
    Hit,
    HitQuestion,
    HitState,
    PagePost,
    PagePostState,
    Question,
    QuestionState,
    Refusal,
    TaskKind,
)

LIMIT = 200  # rows shown per section (the count is always complete)


@dataclass
class Row:
    what: str
    why: str
    since: dt.datetime | None
    admin: tuple[str, int] | None = None   # (model name, pk) for a link


@dataclass
class Section:
    title: str
    explanation: str
    total: int = 0
    rows: list[Row] = field(default_factory=list)


def _section(title: str, explanation: str, qs, make) -> Section:
    section = Section(title, explanation, total=qs.count())
    section.rows = [make(obj) for obj in qs[:LIMIT]]
    return section


def report(now: dt.datetime | None = None) -> list[Section]:
    """Everything not yet final, oldest first, in the order an operator acts on it."""
    now = now or timezone.now()
    ttl = dt.timedelta(seconds=settings.KBPO_PAGE_POST_TTL)
    open_counts = {h: n for h, n in HitQuestion.objects.filter(
        question__state=QuestionState.OPEN).values_list("hit_id").annotate(n=Count("id"))}

    def post_row(p: PagePost) -> Row:
        return Row(f"assignment {p.assignment_external_id} claimed by worker "
                   f"{p.worker_external_id} on HIT {p.hit_id}",
                   "MTurk has not confirmed it (the worker has not submitted it yet, or the "
                   f"ids are invented); it counts for nothing and expires at "
                   f"{(p.received_at + ttl):%Y-%m-%d %H:%M} UTC", p.received_at,
                   ("pagepost", p.pk))

    def refused_row(a: Assignment) -> Row:
        verdict = "payment" if a.refusal == Refusal.PAY else "rejection"
        return Row(f"{a.external_id} by {a.worker.external_id} on HIT {a.hit_id} (refused)",
                   f"its {verdict} on MTurk failed so far; the sync and the re-drive retry "
                   f"it. Reason: {a.refusal_reason}", a.submitted_at, ("assignment", a.pk))

    def review_row(a: Assignment) -> Row:
        n_open = open_counts.get(a.hit_id, 0)
        why = (f"HIT {a.hit_id} still has {n_open} open question(s); its work is reviewed "
               "when they are labelled" if a.hit.state == HitState.POSTED
               else f"HIT {a.hit_id} is {a.hit.get_state_display()}: its review is queued "
                    "(the re-drive re-queues a lost one)")
        return Row(f"{a.external_id} by {a.worker.external_id}", why, a.submitted_at,
                   ("assignment", a.pk))

    def held_row(h: Hit) -> Row:
        return Row(f"HIT {h.pk} ({h.backend}, {h.items.count()} questions)",
                   h.post_error or "not posted yet: the re-drive posts it", h.created_at,
                   ("hit", h.pk))

    def live_row(h: Hit) -> Row:
        expired = h.expires_at is not None and h.expires_at <= now
        why = f"{open_counts.get(h.pk, 0)} open question(s), {h.n_done} of " \
              f"{h.max_assignments} assignment(s) in"
        if h.backend == Backend.MTURK:
            why += ("; expired on MTurk: the next sync extends it" if expired else
                    f"; on MTurk until {h.expires_at:%Y-%m-%d %H:%M} UTC" if h.expires_at
                    else "")
            why += (f"; last synced {h.last_synced_at:%Y-%m-%d %H:%M} UTC"
                    if h.last_synced_at else "; never synced yet")
        if h.post_error:
            why += f"; {h.post_error}"
        return Row(f"HIT {h.pk} ({h.backend}{', ' + h.external_id if h.external_id else ''})",
                   why, h.posted_at, ("hit", h.pk))

    def orphan_row(q: Question) -> Row:
        got = q.responses.filter(counted=True).count()
        return Row(f"question {q.pk} ({got} of {q.answers_needed} answers)",
                   "no live HIT asks it (its HIT was expired or retired): re-plan the "
                   "submission that requested it", q.created_at, ("question", q.pk))

    live_hits = HitQuestion.objects.filter(hit__state__in=(HitState.PENDING, HitState.POSTED))
    return [
        _section("Task-page posts waiting for MTurk",
                 "Provisional answers; they never count until MTurk confirms the assignment.",
                 PagePost.objects.filter(state=PagePostState.WAITING).order_by("received_at"),
                 post_row),
        _section("Refused work without its verdict",
                 "MTurk holds work we could not count; it must be rejected (or paid) before "
                 "MTurk auto-approves it.",
                 Assignment.objects.filter(state=AssignmentState.SUBMITTED)
                 .exclude(refusal=Refusal.NONE).select_related("worker")
                 .order_by("submitted_at"), refused_row),
        _section("Confirmed work waiting for review", "Counted answers not yet paid.",
                 Assignment.objects.filter(state=AssignmentState.SUBMITTED,
                                           refusal=Refusal.NONE)
                 .select_related("worker", "hit").order_by("submitted_at"), review_row),
        _section("HITs held before posting", "Budget, balance or MTurk errors.",
                 Hit.objects.filter(state=HitState.PENDING).order_by("created_at"), held_row),
        _section("HITs waiting for answers", "Posted, with questions still open.",
                 Hit.objects.filter(state=HitState.POSTED, items__question__state=
                                    QuestionState.OPEN).distinct()
                 .annotate(n_done=Count("assignments", filter=Q(assignments__refusal=""),
                                        distinct=True)).order_by("posted_at", "pk"),
                 live_row),
        _section("Open questions without a live HIT", "Nobody is being asked these.",
                 Question.objects.filter(state=QuestionState.OPEN, kind=TaskKind.RELATION)
                 .exclude(pk__in=live_hits.values("question_id")).order_by("created_at"),
                 orphan_row),
    ]
