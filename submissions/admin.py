"""Operator views: submissions with re-validate, re-run and withdraw actions."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from kbpo.core.admin import ReadOnlyInline

from .models import MentionPair, State, Submission, SubmissionEvent
from .services import TransitionError, requeue, withdraw


class EventInline(ReadOnlyInline):
    model = SubmissionEvent
    fields = ("created_at", "from_state", "to_state", "message")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    # Links typed without a scheme are taken as https (Django 6 behaviour, today).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ("id", "name", "owner", "corpus", "state", "state_changed_at",
                    "n_relations", "n_warnings", "n_errors", "public", "is_baseline",
                    "created_at")
    list_filter = ("state", "corpus", "public", "is_baseline")
    search_fields = ("name", "owner__username", "run_id", "original_name")
    readonly_fields = ("owner", "corpus", "run_id", "file", "original_name", "compressed",
                       "file_size", "state", "state_changed_at", "error", "redrives",
                       "report", "report_counts", "stats", "n_entities", "n_mentions",
                       "n_relations", "n_warnings", "n_errors", "created_at")
    fields = ("name", "description", "method_description", "paper_url", "public",
              "is_baseline", *readonly_fields)
    inlines = [EventInline]
    actions = ["revalidate", "rerun", "withdraw_selected"]

    def _apply(self, request: HttpRequest, queryset: QuerySet[Submission],
               allowed: set[str], verb: str, fn: object) -> None:
        done, skipped = 0, []
        for sub in queryset:
            if sub.state not in allowed:
                skipped.append(f"#{sub.pk} ({sub.state})")
                continue
            try:
                fn(sub)  # type: ignore[operator]
                done += 1
            except TransitionError:
                skipped.append(f"#{sub.pk} ({sub.state})")
        if done:
            self.message_user(request, f"{verb}: {done} submission(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"Not {verb.lower()} (state does not allow it): "
                                       + ", ".join(skipped), messages.WARNING)

    @admin.action(description="Re-validate (ingested or rejected: delete rows and re-ingest)")
    def revalidate(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        who = request.user.get_username()
        self._apply(request, queryset, {State.INGESTED, State.REJECTED}, "Re-validated",
                    lambda s: requeue(s, f"Re-validation requested by {who}."))

    @admin.action(description="Re-run (failed or stuck in uploaded/validating)")
    def rerun(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        who = request.user.get_username()
        self._apply(request, queryset, {State.FAILED, State.UPLOADED, State.VALIDATING},
                    "Re-run", lambda s: requeue(s, f"Re-run requested by {who}."))

    @admin.action(description="Withdraw")
    def withdraw_selected(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        allowed = {s for s in State if s != State.WITHDRAWN}
        self._apply(request, queryset, allowed, "Withdrawn",
                    lambda s: withdraw(s, by=request.user, reason="(operator)"))


@admin.register(MentionPair)
class MentionPairAdmin(admin.ModelAdmin):
    """Mention pairs, view only. A pair is shared corpus data, written once at ingest
    (a later upload naming it reuses it as is): every submission's instances, the
    crowd's questions, answers and labels, and the worker model's strata rest on its
    spans and types, and the scoring workers keep them between runs. An edit here would
    change what past questions offered without any of those knowing."""

    list_display = ("id", "document", "subject_begin", "subject_end", "object_begin",
                    "object_end", "subject_type", "object_type")
    list_filter = ("subject_type", "object_type")
    raw_id_fields = ("document", "sentence")
    search_fields = ("document__doc_id",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
