"""Operators: score runs (with their errors), per-system scores, and a recompute action."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from .models import ScoreRun, ScoringState, SystemScore
from .scoring import request_recompute


class ReadOnly(admin.ModelAdmin):
    """History is written by the recomputation only."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ScoreRun)
class ScoreRunAdmin(ReadOnly):
    list_display = ("id", "corpus", "status", "generation", "started_at", "duration_s",
                    "n_systems", "n_labels", "n_exhaustive_documents")
    list_filter = ("status", "corpus")
    date_hierarchy = "started_at"


@admin.register(SystemScore)
class SystemScoreAdmin(ReadOnly):
    list_display = ("submission", "scheme", "run", "p_joint", "r_joint", "f1_joint",
                    "labels_used", "pending", "cost_usd")
    list_filter = ("scheme", "run__corpus")
    search_fields = ("submission__name",)
    list_select_related = ("submission", "run")


@admin.register(ScoringState)
class ScoringStateAdmin(ReadOnly):
    list_display = ("corpus", "generation", "scored_generation", "scheduled", "lease_until",
                    "updated_at")
    actions = ["recompute_now"]

    @admin.action(description="Recompute scores now")
    def recompute_now(self, request: HttpRequest, queryset: QuerySet[ScoringState]) -> None:
        for state in queryset:
            request_recompute(state.corpus_id, f"admin action by {request.user}")
        messages.success(request, f"Queued a recomputation for {queryset.count()} corpora.")
