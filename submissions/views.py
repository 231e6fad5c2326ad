"""Pages: my submissions, upload, detail (with live status), report downloads, withdraw."""

from __future__ import annotations

import csv
import io
import json
import logging

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseNotFound,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.views.decorators.http import require_GET

from kbpo.core import schema
from kbpo.core.accounts import UNCONFIRMED_MESSAGE, email_confirmed
from kbpo.core.models import Corpus
from kbpo.core.schemas import DOCRED, get_schema
from kbpo.core.security import csv_safe, isolated

from .forms import SubmissionForm
from .kbformat import CODES
from .models import FINAL_STATES, State, Submission
from .services import (
    NEXT_STEP,
    DuplicateUpload,
    LimitExceeded,
    SubmissionBusy,
    TransitionError,
    create_submission,
    quota,
    withdraw,
)
from .uploads import upload_refused_message

logger = logging.getLogger(__name__)

REPORT_COLUMNS = ("line", "code", "severity", "message", "hint")
REPORT_PAGE_ROWS = 50


# A submission's bulky JSON columns (every problem, every dropped line: up to several
# MB), which a poll of its state has no use for.
BULKY_FIELDS = ("report", "report_counts", "stats", "dropped")


def _visible(request: HttpRequest, pk: int, light: bool = False) -> Submission:
    """The submission if the user may see it; 404 otherwise (existence is not leaked).
    ``light``: without BULKY_FIELDS (read only if touched)."""
    rows = Submission.objects.select_related("corpus", "owner")
    sub = get_object_or_404(rows.defer(*BULKY_FIELDS) if light else rows, pk=pk)
    if not sub.can_view(request.user):
        raise Http404("No such submission.")
    return sub


def _managed(request: HttpRequest, pk: int) -> Submission:
    sub = get_object_or_404(Submission.objects.select_related("corpus", "owner"), pk=pk)
    if not sub.can_manage(request.user):
        raise Http404("No such submission.")
    return sub


@login_required
def submission_list(request: HttpRequest) -> HttpResponse:
    subs = list(Submission.objects.filter(owner=request.user).select_related("corpus"))
    for sub in subs:
        # The newest complete score of the draw scheme, through the reverse relation that
        # the estimation app's SystemScore declares (no import upwards).
        sub.latest_score = (sub.scores.filter(run__status="complete",
                                              scheme=settings.KBPO_SAMPLING_SCHEME)
                            .order_by("-run__finished_at", "-run_id")
                            .values("p_joint", "r_joint", "f1_joint", "f1_joint_lo",
                                    "f1_joint_hi").first())
    return render(request, "submissions/list.html", {"submissions": subs})


@login_required
def submission_new(request: HttpRequest) -> HttpResponse:
    form = SubmissionForm(request.POST or None, request.FILES or None)
    valid = request.method == "POST" and form.is_valid()
    # A refused POST re-renders the form with a status that says why (as the API does):
    # 400 field errors, 403 address not confirmed, 409 duplicate, 413 over the size cap,
    # 429 limit (with Retry-After when a daily slot will open).
    status = 200 if valid or request.method != "POST" else 400
    retry_after: int | None = None
    refused = upload_refused_message(request) if request.method == "POST" else None
    if request.method == "POST" and not email_confirmed(request.user):
        messages.error(request, UNCONFIRMED_MESSAGE)
        valid, status = False, 403
    elif refused:  # the handler dropped the file: say why instead of "required"
        form.errors.pop("file", None)
        form.add_error("file", refused)
        valid, status = False, 413
    elif not valid and any(e.code == "file_too_large"
                           for e in form.errors.as_data().get("file", [])):
        status = 413
    if valid:
        data = form.cleaned_data
        upload = data["file"]
        assert form.check is not None
        try:
            sub = create_submission(
                owner=request.user, corpus=data["corpus"], name=data["name"], file=upload,
                original_name=upload.name, compressed=form.check.compressed,
                description=data["description"],
                method_description=data["method_description"], paper_url=data["paper_url"],
                public=data["public"], run_id=form.check.run_id,
                drop_invalid=data["drop_invalid"])
        except DuplicateUpload as exc:
            form.add_error("file", str(exc))
            status = 409
        except LimitExceeded as exc:
            form.add_error(None, str(exc))
            status = 429
            retry_after = exc.retry_after
        else:
            # Without a broker the pipeline ran inside this request: say where it is
            # now, not "validation starts in a moment" above a scored submission.
            state = Submission.objects.values_list("state", flat=True).get(pk=sub.pk)
            if state == State.REJECTED:
                messages.error(request, "Uploaded, but the file was rejected: the "
                                        "validation report below lists what to fix.")
            else:
                messages.success(request, f"Uploaded. {NEXT_STEP.get(state, '')}"
                                 + ("" if state in FINAL_STATES
                                    else " This page updates by itself."))
            return redirect("submission-detail", pk=sub.pk)
    quotas = [(c, quota(request.user, c)) for c in Corpus.objects.order_by("tag")]
    response = render(request, "submissions/new.html", {
        "form": form, "quotas": quotas,
        "max_mb": filesizeformat(settings.KBPO_SUBMISSION_MAX_BYTES)}, status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


@login_required
def submission_detail(request: HttpRequest, pk: int) -> HttpResponse:
    sub = _visible(request, pk)
    stats = sub.stats or {}
    # The problem table is paged; the downloads hold every listed problem.
    problems = Paginator(sub.report or [], REPORT_PAGE_ROWS).get_page(request.GET.get("problems"))
    return render(request, "submissions/detail.html", {
        "sub": sub, "problems": problems,
        "next_step": NEXT_STEP.get(sub.state, ""), "events": sub.events.all(),
        "can_manage": sub.can_manage(request.user),
        "can_withdraw": sub.can_manage(request.user) and sub.state != State.WITHDRAWN,
        "is_final": sub.state in FINAL_STATES,
        "by_predicate": sorted((stats.get("instances_by_predicate") or {}).items()),
        "by_types": sorted((stats.get("instances_by_types") or {}).items()),
        "mentions_by_type": sorted((stats.get("mentions_by_type") or {}).items()),
        "entities_by_type": sorted((stats.get("entities_by_type") or {}).items()),
        "skipped": sorted((stats.get("skipped") or {}).items()),
        # Counted from stored rows: absent when the file was rejected (nothing stored).
        "stored_stats": "documents_covered" in stats,
        "report_counts": sorted((sub.report_counts or {}).items()),
        "report_truncated": sum((sub.report_counts or {}).values()) > len(sub.report or []),
    })


@login_required
@require_GET
def submission_status(request: HttpRequest, pk: int) -> JsonResponse:
    sub = _visible(request, pk, light=True)  # polled every few seconds by an open page
    return JsonResponse({
        "id": sub.pk, "state": sub.state, "final": sub.state in FINAL_STATES,
        "state_changed_at": sub.state_changed_at.isoformat(),
        "next_step": NEXT_STEP.get(sub.state, ""), "n_relations": sub.n_relations,
        "n_mentions": sub.n_mentions, "n_warnings": sub.n_warnings, "n_errors": sub.n_errors,
        "n_dropped": sub.n_dropped,
    })


@login_required
@require_GET
def submission_report(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    sub = _visible(request, pk)
    rows = sub.report or []
    if fmt == "json":
        body = json.dumps({"submission": sub.pk, "state": sub.state,
                           "counts": sub.report_counts, "problems": rows}, indent=1)
        resp = HttpResponse(body, content_type="application/json")
    else:
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
        writer.writerow(REPORT_COLUMNS)
        for row in rows:
            writer.writerow([csv_safe(str(row.get(c, "")).replace("\t", " "))
                             for c in REPORT_COLUMNS])
        resp = HttpResponse(buf.getvalue(), content_type="text/tab-separated-values")
    resp["Content-Disposition"] = f'attachment; filename="submission-{sub.pk}-report.{fmt}"'
    return resp


@login_required
@require_GET
def submission_dropped(request: HttpRequest, pk: int) -> HttpResponse:
    """Every line dropped by drop-invalid, with its code and message (TSV)."""
    sub = _visible(request, pk)
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(["line", "code", "message"])
    for line, code, message in sub.dropped or []:
        writer.writerow([line, code, csv_safe(str(message).replace("\t", " "))])
    resp = HttpResponse(buf.getvalue(), content_type="text/tab-separated-values")
    resp["Content-Disposition"] = f'attachment; filename="submission-{sub.pk}-dropped.tsv"'
    return resp


@login_required
@require_GET
def submission_file(request: HttpRequest, pk: int) -> HttpResponseBase:
    sub = _managed(request, pk)
    name = "kb.tsv.gz" if sub.compressed else "kb.tsv"
    try:
        fh = sub.file.open("rb")
    except FileNotFoundError:  # the media store lost it (a restore without media)
        # Django's 404 page would drop this message: say it, and tell the operators.
        logger.error("submission %s: stored file %s is missing from the media store",
                     sub.pk, sub.file.name)
        return HttpResponseNotFound(
            f"The stored file of submission {sub.pk} is missing from the server's storage. "
            "The operators have been told; its scores and report are unaffected.\n",
            content_type="text/plain; charset=utf-8")
    return FileResponse(fh, as_attachment=True, filename=f"submission-{sub.pk}-{name}")


@login_required
def submission_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    sub = _managed(request, pk)
    if request.method == "POST":
        try:
            withdraw(sub, by=request.user, wait=False)
        except SubmissionBusy as exc:
            messages.info(request, str(exc))
        except TransitionError:
            messages.info(request, "This submission is already withdrawn.")
        else:
            messages.success(request, f"Submission “{isolated(sub.name)}” was withdrawn.")
        return redirect("submission-detail", pk=sub.pk)
    return render(request, "submissions/withdraw.html", {"sub": sub})


def format_help(request: HttpRequest) -> HttpResponse:
    """The accepted format, predicates and every validation code (public page)."""
    codes = [(code, sev, hint) for code, (sev, hint) in CODES.items()]
    predicates = sorted(schema.SCHEMA_TABLE.items())
    return render(request, "submissions/format.html", {
        "codes": codes, "predicates": predicates,
        "unsupported": sorted(schema.UNSUPPORTED),
        "sentiment": sorted(schema.SENTIMENT),
        "folded": sorted(schema.FOLDED.items()),
        "upload_url": reverse("submission-new"),
        "corpora": Corpus.objects.order_by("tag"),
        "docred_corpora": Corpus.objects.filter(schema=DOCRED).order_by("tag"),
        "docred_relations": list(get_schema(DOCRED).relations.values()),
    })
