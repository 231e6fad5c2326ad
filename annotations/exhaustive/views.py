"""Operator pages: progress of each corpus's exhaustive annotation (staff only)."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotations.models import ExhaustiveDocument, ExhaustiveStage
from kbpo.core.models import Corpus

from .workflow import progress

MAX_ROWS = 500


@staff_member_required
def exhaustive_progress(request: HttpRequest, tag: str) -> HttpResponse:
    """Counts per stage and state, gold totals, cost, and the sampled documents."""
    corpus = get_object_or_404(Corpus, tag=tag)
    stage = request.GET.get("stage", "")
    rows = (ExhaustiveDocument.objects.filter(corpus=corpus).select_related("document")
            .annotate(n_mentions=Count("document__gold_mentions", distinct=True),
                      n_relations=Count("document__gold_relations", distinct=True),
                      open_questions=Count("document__questions", distinct=True,
                                           filter=Q(document__questions__state="open")))
            .order_by("stage", "document__doc_id"))
    if stage in ExhaustiveStage.values:
        rows = rows.filter(stage=stage)
    total = rows.count()
    return render(request, "annotations/exhaustive_progress.html", {
        "corpus": corpus, "p": progress(corpus), "rows": rows[:MAX_ROWS], "total": total,
        "truncated": total > MAX_ROWS, "stage": stage,
        "stages": ExhaustiveStage.choices,
        "states": ExhaustiveDocument.State.choices})
