"""The operator dashboard (/operator/, staff only): spend against budgets, HITs by state,
crowd work still waiting and why, flagged workers, recent score recomputations."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotations.crowd import budget, live, waiting
from annotations.models import CrowdWorker, Hit, HitState
from submissions.models import ACTIVE_STATES, Submission

from . import stored_pages
from .models import ScoreRun, ScoringState

RECENT_RUNS = 15
FLAGGED_ROWS = 50
BUDGET_ROWS = 50


def _percent(part: object, whole: object) -> int:
    return int(100 * part / whole) if whole else 0  # type: ignore[operator]


@stored_pages.private_for_viewers
@staff_member_required
@require_safe
def operator_dashboard(request: HttpRequest) -> HttpResponse:
    total = budget.spend()
    subs = (Submission.objects.filter(state__in=ACTIVE_STATES, hits__isnull=False)
            .distinct().select_related("corpus", "owner").order_by("-created_at")[:BUDGET_ROWS])
    per_sub = []
    for sub in subs:
        s = budget.spend(sub)
        per_sub.append({"sub": sub, "spend": s, "percent": _percent(s.committed, s.cap)})
    per_sub.sort(key=lambda r: -r["percent"])
    by_state = dict(Hit.objects.values_list("state").annotate(n=Count("id")).order_by())
    hits = [{"state": label, "n": by_state.get(value, 0)} for value, label in HitState.choices]
    sections = waiting.report()
    flagged = (CrowdWorker.objects.filter(flagged=True) | CrowdWorker.objects.filter(
        blocked=True)).order_by("-blocked", "agreement")
    runs = ScoreRun.objects.select_related("corpus").order_by("-started_at", "-id")[:RECENT_RUNS]
    lagging = ScoringState.objects.select_related("corpus").order_by("corpus__tag")
    return render(request, "estimation/operator.html", {
        "total": total, "total_percent": _percent(total.committed, total.cap),
        "per_sub": per_sub, "hits": hits, "n_hits": sum(by_state.values()),
        "waiting": [{"title": s.title, "total": s.total, "explanation": s.explanation}
                    for s in sections],
        "n_waiting": sum(s.total for s in sections),
        "flagged": flagged[:FLAGGED_ROWS], "n_flagged": flagged.count(),
        "runs": runs, "states": lagging, "crowd": live.describe(),
    })
