"""Operator views of the crowd pipeline: batches, HITs, assignments, workers, money.

Actions: sync with MTurk now, post held HITs, expire, extend, approve, reject (with a
reason the worker reads), pay bonuses, block/unblock workers (with a reason),
recompute worker quality, re-plan submissions.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from kbpo.core import jobs
from kbpo.core.admin import ReadOnlyInline

from .crowd import backends, budget, mturk, periodic, posting, review, waiting, workers
from .models import (
    Assignment,
    AssignmentState,
    Bonus,
    BudgetSettings,
    CrowdWorker,
    Hit,
    HitBatch,
    HitState,
    PagePost,
    PairLabel,
    Question,
    Response,
    SubmissionBudget,
)
from .quality.workers import update_worker_quality

# The planner lives in the estimation app, above this one: its task is queued by name.
PLAN_TASK = "estimation.plan_submission"
ERRORS = (mturk.MTurkError, budget.BudgetExceeded, ValueError)


def _ask_reason(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet,
                action: str, question: str, verb: str,
                worker_sees: bool) -> str | HttpResponse:
    """A reason from the intermediate page, or the page asking for it."""
    reason = (request.POST.get("reason") or "").strip()
    if "confirm" in request.POST and reason:
        return reason
    return TemplateResponse(request, "admin/annotations/action_reason.html", {
        **modeladmin.admin_site.each_context(request), "title": verb, "queryset": queryset,
        "action": action, "question": question, "verb": verb, "worker_sees": worker_sees,
        "reason": reason, "opts": modeladmin.model._meta,
        "error": "A reason is required." if "confirm" in request.POST else ""})


def _report(modeladmin: admin.ModelAdmin, request: HttpRequest, done: int, verb: str,
            errors: list[str]) -> None:
    if done:
        modeladmin.message_user(request, f"{verb}: {done}.", messages.SUCCESS)
    for error in errors[:10]:
        modeladmin.message_user(request, error, messages.ERROR)
    if not done and not errors:
        modeladmin.message_user(request, f"Nothing to do ({verb.lower()}).", messages.INFO)


class HitInline(ReadOnlyInline):
    model = Hit
    fields = ("state", "backend", "max_assignments", "reward", "cost_estimate",
              "external_id", "post_error")
    show_change_link = True


@admin.register(HitBatch)
class HitBatchAdmin(admin.ModelAdmin):
    list_display = ("id", "corpus", "submission", "kind", "n_questions", "hits_open",
                    "cost_estimate", "alpha", "n_answers", "created_at")
    list_filter = ("corpus", "kind")
    readonly_fields = ("corpus", "submission", "kind", "n_questions", "cost_estimate", "alpha",
                       "n_answers", "created_at")
    inlines = [HitInline]
    actions = ["recompute_agreement", "replan"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("corpus", "submission")

    @admin.display(description="open HITs")
    def hits_open(self, obj: HitBatch) -> int:
        return obj.hits.filter(state__in=(HitState.PENDING, HitState.POSTED)).count()

    @admin.action(description="Recompute agreement (Krippendorff's alpha) and worker quality")
    def recompute_agreement(self, request: HttpRequest, queryset: QuerySet) -> None:
        corpora = set(queryset.values_list("corpus_id", flat=True))
        for cid in corpora:
            update_worker_quality(cid)
        _report(self, request, len(corpora), "Recomputed corpora", [])

    @admin.action(description="Re-plan the batches' submissions (post what the budget allows)")
    def replan(self, request: HttpRequest, queryset: QuerySet) -> None:
        ids = {pk for pk in queryset.values_list("submission_id", flat=True) if pk}
        for pk in ids:
            jobs.enqueue(PLAN_TASK, pk)
        _report(self, request, len(ids), "Re-planning queued for submissions", [])


class HitQuestionInline(ReadOnlyInline):
    model = Hit.questions.through
    fields = ("position", "question")


@admin.register(Hit)
class HitAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "backend", "state", "submission", "batch", "questions_n",
                    "assignments_n", "max_assignments", "reward", "cost_estimate",
                    "external_id", "expires_at", "post_error_short")
    list_filter = ("state", "backend", "kind", "corpus")
    search_fields = ("external_id", "request_token", "=id")
    readonly_fields = ("corpus", "kind", "backend", "state", "submission", "batch",
                       "max_assignments", "reward", "cost_estimate", "request_token",
                       "external_id", "hit_type_id", "post_error", "created_at", "posted_at",
                       "expires_at", "last_synced_at")
    inlines = [HitQuestionInline]
    actions = ["sync_now", "post_now", "expire_now", "extend_now"]

    def get_urls(self) -> list:
        own = [path("waiting/", self.admin_site.admin_view(self.waiting_view),
                    name="annotations_hit_waiting")]
        return own + super().get_urls()

    def waiting_view(self, request: HttpRequest) -> HttpResponse:
        """Everything in the crowd pipeline not yet final, and why (crowd/waiting.py)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return TemplateResponse(request, "admin/annotations/waiting.html", {
            **self.admin_site.each_context(request), "title": "Crowd work still waiting",
            "sections": waiting.report(), "opts": self.model._meta})

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("submission", "batch").annotate(
            n_questions=Count("items", distinct=True),
            n_assignments=Count("assignments", distinct=True))

    @admin.display(description="questions", ordering="n_questions")
    def questions_n(self, obj: Hit) -> int:
        return obj.n_questions  # type: ignore[attr-defined]

    @admin.display(description="assignments", ordering="n_assignments")
    def assignments_n(self, obj: Hit) -> int:
        return obj.n_assignments  # type: ignore[attr-defined]

    @admin.display(description="post error")
    def post_error_short(self, obj: Hit) -> str:
        return obj.post_error[:120]

    @admin.action(description="Sync with MTurk now (collect answers, extend, settle)")
    def sync_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        result = periodic.sync_all(list(queryset.values_list("pk", flat=True)))
        _report(self, request, result.hits,
                f"Synced HITs ({result.reconciled} answers collected, {result.extended} "
                f"extended, {result.settled} settled)", result.errors)

    @admin.action(description="Post pending HITs now (if the budget allows)")
    def post_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        posted, held = posting.post_pending_hits(queryset)
        _report(self, request, posted, "Posted HITs", held)

    @admin.action(description="Expire (stop new work now)")
    def expire_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for hit in queryset.filter(state=HitState.POSTED):
            try:
                backends.expire(hit)
                Hit.objects.filter(pk=hit.pk).update(state=HitState.EXPIRED)
                done += 1
            except ERRORS as exc:
                errors.append(f"HIT {hit.pk}: {exc}")
        _report(self, request, done, "Expired HITs (re-plan to ask their open questions "
                                     "again)", errors)

    @admin.action(description="Extend by KBPO_MTURK_EXTEND_SECONDS")
    def extend_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for hit in queryset.filter(state__in=(HitState.POSTED, HitState.EXPIRED)):
            try:
                backends.extend(hit)
                Hit.objects.filter(pk=hit.pk).update(state=HitState.POSTED)
                done += 1
            except ERRORS as exc:
                errors.append(f"HIT {hit.pk}: {exc}")
        _report(self, request, done, "Extended HITs", errors)


class ResponseInline(ReadOnlyInline):
    model = Response
    fields = ("question", "choices", "counted", "seconds", "created_at")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("external_id", "hit", "worker", "state", "refusal", "refusal_code",
                    "source", "paid", "submitted_at", "reviewed_at", "feedback")
    # refusal_code "too_fast": submitted sooner after accepting than we count.
    list_filter = ("state", "refusal", "refusal_code", "source", "hit__backend")
    search_fields = ("external_id", "worker__external_id", "=hit__id")
    readonly_fields = ("hit", "worker", "external_id", "state", "refusal", "refusal_code",
                       "refusal_reason", "source", "submitted_at", "reviewed_at", "feedback",
                       "paid")
    inlines = [ResponseInline]
    actions = ["approve_selected", "reject_selected", "bonus_selected"]

    @admin.action(description="Approve (pay)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for a in queryset.filter(state=AssignmentState.SUBMITTED):
            try:
                done += review.approve_assignment(a, "Thank you.")
            except ERRORS as exc:
                errors.append(f"{a.external_id}: {exc}")
        _report(self, request, done, "Approved assignments", errors)

    @admin.action(description="Reject with a reason…")
    def reject_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        reason = _ask_reason(self, request, queryset, "reject_selected",
                             "Reject these assignments? Rejections hurt the workers' approval "
                             "rating: reject only clear spam.", "Reject", worker_sees=True)
        if not isinstance(reason, str):
            return reason
        done, errors = 0, []
        for a in queryset.filter(state=AssignmentState.SUBMITTED):
            try:
                done += review.reject_assignment(a, reason)
            except ERRORS as exc:
                errors.append(f"{a.external_id}: {exc}")
        _report(self, request, done, "Rejected assignments", errors)
        return None

    @admin.action(description="Pay the standard bonus (KBPO_BONUS_USD) with a reason…")
    def bonus_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        reason = _ask_reason(self, request, queryset, "bonus_selected",
                             f"Pay a ${settings.KBPO_BONUS_USD:.2f} bonus for each of these "
                             "approved assignments?", "Pay bonus", worker_sees=True)
        if not isinstance(reason, str):
            return reason
        done, errors = 0, []
        for a in queryset.filter(state=AssignmentState.APPROVED):
            try:
                review.grant_bonus(a, Decimal(str(settings.KBPO_BONUS_USD)), reason)
                done += 1
            except ERRORS as exc:
                errors.append(f"{a.external_id}: {exc}")
        _report(self, request, done, "Bonuses paid", errors)
        return None


@admin.register(PagePost)
class PagePostAdmin(admin.ModelAdmin):
    """Provisional answers MTurk task pages posted: read-only, they count for nothing
    until MTurk confirms the assignment (then they link to it)."""

    list_display = ("assignment_external_id", "worker_external_id", "hit", "state",
                    "received_at", "client_ip", "note", "assignment")
    list_filter = ("state",)
    search_fields = ("assignment_external_id", "worker_external_id", "=hit__id", "client_ip")
    readonly_fields = ("hit", "assignment_external_id", "worker_external_id", "payload",
                       "state", "note", "client_ip", "received_at", "resolved_at",
                       "assignment")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(CrowdWorker)
class CrowdWorkerAdmin(admin.ModelAdmin):
    list_display = ("external_id", "backend", "n_answers", "agreement", "accuracy_ds",
                    "flagged", "blocked", "blocked_reason", "user")
    list_filter = ("backend", "flagged", "blocked")
    search_fields = ("external_id", "user__username")
    readonly_fields = ("backend", "external_id", "flagged", "blocked", "blocked_reason",
                       "agreement", "accuracy_ds", "n_answers", "created_at")
    fields = ("user", *readonly_fields)
    actions = ["block_selected", "unblock_selected", "recompute_quality"]

    @admin.action(description="Block with a reason…")
    def block_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        reason = _ask_reason(self, request, queryset, "block_selected",
                             "Block these workers from all our tasks?", "Block",
                             worker_sees=False)
        if not isinstance(reason, str):
            return reason
        done, errors = 0, []
        for worker in queryset.filter(blocked=False):
            try:
                workers.block_worker(worker, reason)
                done += 1
            except ERRORS as exc:
                errors.append(f"{worker}: {exc}")
        _report(self, request, done, "Blocked workers", errors)
        return None

    @admin.action(description="Unblock")
    def unblock_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for worker in queryset.filter(blocked=True):
            try:
                workers.unblock_worker(worker, f"unblocked by {request.user.get_username()}")
                done += 1
            except ERRORS as exc:
                errors.append(f"{worker}: {exc}")
        _report(self, request, done, "Unblocked workers", errors)

    @admin.action(description="Recompute quality (Dawid–Skene, agreement, flags)")
    def recompute_quality(self, request: HttpRequest, queryset: QuerySet) -> None:
        report = update_worker_quality()
        _report(self, request, report.workers,
                f"Recomputed workers ({len(report.flagged)} flagged, "
                f"{len(report.relabelled)} label(s) changed)", [])


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ("id", "corpus", "kind", "pair", "state", "answers_needed", "requested_by",
                    "created_at", "completed_at")
    list_filter = ("state", "kind", "corpus")
    raw_id_fields = ("pair", "document", "requested_by")
    readonly_fields = ("created_at", "completed_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Question | None = None
                            ) -> tuple[str, ...]:
        # What a question asks about is fixed once it exists: its answers are about that
        # pair, and the scoring workers keep each question's pair types (offered answers).
        fixed = ("corpus", "kind", "pair", "document")
        return self.readonly_fields + (fixed if obj is not None else ())


@admin.register(PairLabel)
class PairLabelAdmin(admin.ModelAdmin):
    list_display = ("pair", "predicates", "majority", "method", "support", "n_answers",
                    "created_at")
    list_filter = ("method",)
    raw_id_fields = ("pair", "question")
    search_fields = ("pair__document__doc_id",)


@admin.register(Bonus)
class BonusAdmin(admin.ModelAdmin):
    list_display = ("id", "assignment", "amount", "reason", "token", "paid_at", "created_at")
    readonly_fields = ("assignment", "amount", "reason", "token", "paid_at", "created_at")
    actions = ["pay_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # bonuses are granted from assignments, with the budget checked

    @admin.action(description="Pay now (never twice)")
    def pay_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for bonus in queryset.filter(paid_at__isnull=True):
            try:
                done += review.pay_bonus(bonus.pk)
            except ERRORS as exc:
                errors.append(f"bonus {bonus.pk}: {exc}")
        _report(self, request, done, "Bonuses paid", errors)


@admin.register(BudgetSettings)
class BudgetSettingsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "per_submission_default_usd", "spent", "committed",
                    "remaining", "updated_at")
    readonly_fields = ("spent", "committed", "remaining", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not BudgetSettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        BudgetSettings.current()  # the row always exists for the operator to edit
        return super().changelist_view(request, extra_context)

    @admin.display(description="spent ($)")
    def spent(self, obj: BudgetSettings) -> Decimal:
        return budget.spend().spent

    @admin.display(description="committed ($)")
    def committed(self, obj: BudgetSettings) -> Decimal:
        return budget.spend().committed

    @admin.display(description="remaining ($)")
    def remaining(self, obj: BudgetSettings) -> Decimal:
        return budget.spend().remaining


@admin.register(SubmissionBudget)
class SubmissionBudgetAdmin(admin.ModelAdmin):
    list_display = ("submission", "cap_usd", "spent", "committed", "remaining")
    raw_id_fields = ("submission",)
    actions = ["replan"]

    @admin.display(description="spent ($)")
    def spent(self, obj: SubmissionBudget) -> Decimal:
        return budget.spend(obj.submission).spent

    @admin.display(description="committed ($)")
    def committed(self, obj: SubmissionBudget) -> Decimal:
        return budget.spend(obj.submission).committed

    @admin.display(description="remaining ($)")
    def remaining(self, obj: SubmissionBudget) -> Decimal:
        return budget.spend(obj.submission).remaining

    @admin.action(description="Re-plan (post held HITs that now fit)")
    def replan(self, request: HttpRequest, queryset: QuerySet) -> None:
        for pk in queryset.values_list("submission_id", flat=True):
            jobs.enqueue(PLAN_TASK, pk)
        _report(self, request, queryset.count(), "Re-planning queued", [])
