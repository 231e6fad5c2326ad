"""Leaderboard pages, the leaderboard API and CSV, and the submission evaluation report."""

from __future__ import annotations

import csv
import re
from collections import Counter
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers
from django.utils.dateparse import parse_datetime
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from kbpo.core.models import Corpus
from kbpo.core.security import csv_safe
from submissions.models import Submission

from . import leaderboard as lb
from . import report, report_progress, snapshot, stored_pages
from .api_reports import NOT_FOUND, IntervalSerializer, ViewerAPIView, visible_submission
from .models import METRICS, ScoringState

# --- Leaderboard pages ------------------------------------------------------------------


def _params(query: Any) -> tuple[str, str, str]:
    return (query.get("scheme", lb.default_scheme()), query.get("sort", "f1"),
            query.get("kind", "joint"))


@stored_pages.private_for_viewers
@require_safe
def leaderboard_index(request: HttpRequest) -> HttpResponse:
    """Every corpus with its number of ranked systems and its current leader."""
    entries = []
    for corpus in Corpus.objects.order_by("tag"):
        snap = snapshot.load(corpus.tag, "instance", "f1", "joint", "api")
        view = snapshot.visible(snap, request.user) if snap else None
        leader = None
        if view is not None and view.leader is not None:
            leader = {"name": view.leader.name, **view.snap.part[view.leader.i]["f1"]}
        entries.append({"corpus": corpus, "leader": leader,
                        "n_visible": len(view.rows) if view else 0,
                        "finished_at": _finished(snap)})
    return render(request, "estimation/index.html", {"entries": entries})


def _finished(snap: snapshot.Stored | None) -> datetime | None:
    if snap is None or not snap.head.get("run"):
        return None
    return parse_datetime(snap.head["run"]["finished_at"] or "")


def _stored(request: HttpRequest, tag: str, scheme: str, metric: str, kind: str,
            part: str) -> tuple[HttpResponse | None, stored_pages.Lookup | None]:
    """The viewer's stored body, or what to store it under once rendered."""
    viewer = stored_pages.viewer_class(request)
    if viewer is None:
        return None, None
    user_id = request.user.pk if viewer else None
    found = stored_pages.lookup(tag, scheme, metric, kind, part, viewer, user_id)
    if found is not None and found.body is not None:
        # Only HTML bodies carry markers (a CSV cell is not escaped: never filled in).
        body = stored_pages.fill(found.body, request) if viewer and part == "html" \
            else found.body
        return stored_pages.response(body, part), None
    return None, found


def _keep(found: stored_pages.Lookup | None, resp: HttpResponse, part: str) -> HttpResponse:
    if found is not None and resp.status_code == 200:
        body = resp.content.decode()
        if part != "html" or stored_pages.storable(body):
            stored_pages.store(found, part, body)
        patch_vary_headers(resp, ["Cookie"])
    return resp


@stored_pages.private_for_viewers
@require_safe
def leaderboard_page(request: HttpRequest, tag: str) -> HttpResponse:
    scheme, metric, kind = _params(request.GET)
    notice = ""
    try:
        lb.validate(scheme, metric, kind)
    except lb.BadParameter as exc:
        notice = f"{exc}. Showing the default ordering instead."
        scheme, metric, kind = lb.default_scheme(), "f1", "joint"
    found = None
    if not notice:
        served, found = _stored(request, tag, scheme, metric, kind, "html")
        if served is not None:
            return served
    # A logged-in viewer's body is stored with markers for the navigation and the
    # messages (stored_pages.SLOTS), then filled in for this request.
    slots = found is not None and found.viewer != ""
    resp = _keep(found, _render_page(request, tag, scheme, metric, kind, notice, slots), "html")
    if slots:
        resp.content = stored_pages.fill(resp.content, request)
    return resp


def _render_page(request: HttpRequest, tag: str, scheme: str, metric: str, kind: str,
                 notice: str, slots: bool = False) -> HttpResponse:
    snap = snapshot.load(tag, scheme, metric, kind, "html")
    if snap is None:  # no such corpus (404) or no scores yet
        corpus = get_object_or_404(Corpus, tag=tag)
        state = ScoringState.objects.filter(corpus=corpus).first()
        recomputing = bool(state and not state.up_to_date)
        context: dict[str, Any] = {"board": {"run": None}, "n_rows": 0}
    else:
        corpus, recomputing = snap.corpus, not snap.up_to_date
        view = snapshot.visible(snap, request.user)
        context = {
            "board": {"run": snap.head["run"]}, "n_rows": len(view.rows),
            "finished_at": _finished(snap),
            # Stored, escaped when rendered (estimation/snapshot.py).
            "table_open": mark_safe(snap.head["open"]),
            "table_close": mark_safe(snap.head["close"]),
            "rows_html": mark_safe(snapshot.rows_html(view))}
    board_html = render_to_string("estimation/_board.html", {
        "corpus": corpus, "recomputing": recomputing, **context}, request)
    draw_scheme = (snap.head["run"] or {}).get("draw_scheme") if snap is not None else None
    draw_scheme = draw_scheme or settings.KBPO_SAMPLING_SCHEME
    return render(request, "estimation/leaderboard.html", {
        "corpus": corpus, "board_html": mark_safe(board_html),  # our own escaped rendering
        "notice": notice, "scheme": scheme, "metric": metric, "kind": kind,
        "draw_scheme": draw_scheme,
        "reweighted_note": lb.REWEIGHTED_NOTE.format(draw=lb.BOARD_SCHEMES.get(
            draw_scheme, draw_scheme)) if lb.reweighted(scheme, draw_scheme) else "",
        "schemes": lb.offered_schemes(), "kinds": lb.KINDS,
        **(stored_pages.slotted(("nav", "messages")) if slots else {}),
    }, status=400 if notice else 200)


@stored_pages.private_for_viewers
@require_safe
def leaderboard_csv(request: HttpRequest, tag: str) -> HttpResponse:
    scheme, metric, kind = _params(request.GET)
    try:
        lb.validate(scheme, metric, kind)
    except lb.BadParameter as exc:
        get_object_or_404(Corpus, tag=tag)
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain; charset=utf-8")
    served, found = _stored(request, tag, scheme, metric, kind, "csv")
    if served is None:
        served = _keep(found, _render_csv(request, tag, scheme, metric, kind), "csv")
    served["Content-Disposition"] = (
        f'attachment; filename="leaderboard-{tag}-{scheme}-{kind}.csv"')
    return served


def _render_csv(request: HttpRequest, tag: str, scheme: str, metric: str,
                kind: str) -> HttpResponse:
    snap = snapshot.load(tag, scheme, metric, kind, "csv")
    if snap is None:
        get_object_or_404(Corpus, tag=tag)
        body = ",".join(snapshot.CSV_HEADER) + "\r\n"
    else:
        body = snapshot.csv_text(snapshot.visible(snap, request.user))
    return HttpResponse(body, content_type="text/csv; charset=utf-8")


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.6f}"


def _cell(text: str) -> str:
    return str(csv_safe(text))  # spreadsheets run cells starting with = + - @


# --- Leaderboard API --------------------------------------------------------------------


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    submission = serializers.IntegerField()
    name = serializers.CharField()
    owner = serializers.CharField(allow_null=True)
    baseline = serializers.BooleanField()
    public = serializers.BooleanField()
    state = serializers.CharField()
    refining = serializers.BooleanField(
        help_text="Draws still unlabelled or not yet scored: the numbers will move.")
    leader = serializers.BooleanField()
    tied_with_leader = serializers.BooleanField(
        help_text="Its interval overlaps the leader's (sorted metric).")
    paper_url = serializers.CharField(allow_null=True)
    method = serializers.CharField(allow_null=True)
    labels_used = serializers.IntegerField()
    draws = serializers.IntegerField()
    pending_draws = serializers.IntegerField()
    cost_usd = serializers.CharField()
    precision = IntervalSerializer()
    recall = IntervalSerializer()
    f1 = IntervalSerializer()


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    finished_at = serializers.DateTimeField()
    labels = serializers.IntegerField()
    draws = serializers.IntegerField()
    systems = serializers.IntegerField()
    exhaustive_documents = serializers.IntegerField()
    duration_s = serializers.FloatField()
    draw_scheme = serializers.CharField()
    generation = serializers.IntegerField(
        help_text="The label generation the run reflects (its draw scheme, computed live).")
    scheme_generation = serializers.IntegerField(
        help_text="The label generation this scheme's scores reflect: older than "
                  "`generation` while a reweighted scheme is being recomputed.")
    updating = serializers.BooleanField(
        help_text="true: this scheme's scores are from an earlier label generation than "
                  "the draw scheme's and are being recomputed.")


class LeaderboardSerializer(serializers.Serializer):
    corpus = serializers.CharField()
    scheme = serializers.CharField()
    sort = serializers.CharField()
    kind = serializers.CharField()
    reweighted = serializers.BooleanField(
        help_text="true: the scheme's figures are reweighted from the draw scheme's draws.")
    reliable = serializers.BooleanField(
        help_text="false for reweighted figures: not headline figures; their intervals can "
                  "miss more often than they say and are not corrected for a biased crowd.")
    confidence = serializers.FloatField(allow_null=True)
    run = RunSerializer(allow_null=True)
    systems = LeaderboardRowSerializer(many=True)


class LeaderboardAPIView(ViewerAPIView):
    """Public leaderboard of one corpus; private systems only for their owner and staff."""

    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="leaderboard_retrieve",
        parameters=[
            OpenApiParameter("scheme", OpenApiTypes.STR, enum=list(lb.BOARD_SCHEMES),
                             default="instance", description="Sampling scheme of the scores."),
            OpenApiParameter("sort", OpenApiTypes.STR, enum=list(METRICS), default="f1"),
            OpenApiParameter("kind", OpenApiTypes.STR, enum=list(lb.KINDS), default="joint",
                             description="joint (all labels) or simple (own draws only)."),
        ],
        responses={200: LeaderboardSerializer})
    def get(self, request: Request, tag: str) -> Response:
        scheme, metric, kind = _params(request.query_params)
        error: lb.BadParameter | None = None
        try:
            lb.validate(scheme, metric, kind)
        except lb.BadParameter as exc:
            error = exc
        found = None
        if error is None and _plain_json(request):  # an anonymous visitor's stored body, as for
            # the page: found only for a corpus that exists, so it is looked up first.
            served, found = _stored(request._request, tag, scheme, metric, kind, "api")
            if served is not None:
                return served
        corpus = Corpus.objects.filter(tag=tag).first()
        if corpus is None:
            return Response({"detail": f"No corpus with tag {tag!r}."}, status=404)
        if error is not None:
            return Response({error.name: [str(error)]}, status=400)
        snap = snapshot.load(tag, scheme, metric, kind, "api")
        if snap is None:
            return Response(lb.board_dict(lb.build(corpus, request.user, scheme, metric, kind)))
        data = snapshot.api_dict(snapshot.visible(snap, request.user))
        if found is None:
            return Response(data)
        body = JSONRenderer().render(data, "application/json", {"request": request})
        return _keep(found, HttpResponse(body, content_type="application/json"), "api")


def _plain_json(request: Request) -> bool:
    """Anonymous, and asking for plain JSON (not the browsable API, no indent)."""
    return (not request.user.is_authenticated
            and request.META.get("HTTP_ACCEPT", "*/*") in ("*/*", "application/json")
            and "format" not in request.query_params)


# --- Submission evaluation report -------------------------------------------------------


def _visible(request: HttpRequest, pk: int) -> Submission:
    sub = visible_submission(pk, request.user)
    if sub is None:
        raise Http404("No such submission.")
    return sub


_PAGE = re.compile(r"[1-9][0-9]{0,3}")


@stored_pages.private_for_viewers
@require_safe
def submission_evaluation(request: HttpRequest, pk: int) -> HttpResponse:
    scheme = request.GET.get("scheme", settings.KBPO_SAMPLING_SCHEME)
    if scheme not in lb.BOARD_SCHEMES:
        scheme = settings.KBPO_SAMPLING_SCHEME
    verdict = request.GET.get("verdict", "all")
    if verdict not in report.VERDICTS:
        verdict = "all"
    page_no = request.GET.get("page") or "1"
    # The stored body for this query (estimation/stored_pages.py), shared by everyone
    # who may see the report; odd page values render afresh and are not stored.
    view = f"{scheme}|{verdict}|{page_no}" if _PAGE.fullmatch(page_no) else None
    found = stored_pages.report_lookup(pk, view) if view is not None else None
    if found is not None:
        if not report_progress.may_see(request.user, found.owner_id, found.public):
            raise Http404("No such submission.")
        if found.body is not None:
            return stored_pages.response(stored_pages.fill(found.body, request, found.since),
                                         "html")
    resp, shown, since = _render_report(request, pk, scheme, verdict, found is not None)
    if found is not None and view is not None:
        body = resp.content.decode()
        # Only pages that exist are kept (a page past the end shows the last one):
        # what is stored is bounded by the submission's own samples.
        if shown == int(page_no) and stored_pages.storable(body):
            stored_pages.store_report(pk, view, found.key, body)
        resp.content = stored_pages.fill(resp.content, request, since)
        patch_vary_headers(resp, ["Cookie"])
    return resp


def _render_report(request: HttpRequest, pk: int, scheme: str, verdict: str,
                   slots: bool) -> tuple[HttpResponse, int, datetime | None]:
    """The report as rendered, the samples page it shows and when its run finished."""
    sub = _visible(request, pk)
    run, scores = report.latest_scores(sub)
    if run is not None and scheme not in scores:
        # A scheme the run did not store (KBPO_SCORE_SCHEMES narrower than the four):
        # shown as an unknown one is, with the draw scheme's scores, which every run has.
        scheme = run.draw_scheme if run.draw_scheme in scores else next(iter(scores))
    paginator = Paginator(report.sample_queryset(sub, verdict), 20)
    page = paginator.get_page(request.GET.get("page"))
    score_rows = []
    for s in lb.BOARD_SCHEMES:
        if s in scores:
            sc = scores[s]
            score_rows.append({"scheme": s, "label": lb.BOARD_SCHEMES[s],
                               "reweighted": lb.reweighted(s, sc.run.draw_scheme),
                               "generation": sc.reflects(),
                               "updating": sc.reflects() < sc.run.generation, "metrics": [
                {"name": lb.METRIC_LABELS[m], "joint": sc.interval(m, "joint"),
                 "simple": sc.interval(m, "simple"), "correction": sc.correction(m)}
                for m in METRICS]})
    main = scores.get(scheme)
    confidence = run.confidence if run else settings.KBPO_CONFIDENCE
    return render(request, "estimation/report.html", {
        "crowd": report.crowd(sub, confidence, scores, run),
        "sub": sub, "run": run, "scores": score_rows, "main": main,
        "progress": report.progress(sub), "spend": report.spend(sub),
        "history": report.history(sub, scheme), "scheme": scheme,
        "scheme_label": lb.BOARD_SCHEMES[scheme], "schemes": lb.BOARD_SCHEMES,
        "reweighted_note": lb.REWEIGHTED_NOTE.format(draw=lb.BOARD_SCHEMES.get(
            run.draw_scheme, run.draw_scheme))
        if run is not None and lb.reweighted(scheme, run.draw_scheme) else "",
        "predicates": report.per_predicate(sub, confidence, scores), "page": page,
        "samples": report.samples(list(page.object_list)), "verdict": verdict,
        "verdicts": report.verdict_counts(sub),
        # In the body every visitor shares: the submission page listing the lines
        # themselves is for signed-in users only.
        "dropped_codes": sorted(Counter(p.get("code") for p in sub.report or []
                                        if p.get("severity") == "dropped").items()),
        "confidence_pct": round(100 * confidence),
        **(stored_pages.slotted(("nav", "messages", "since")) if slots else {}),
    }), page.number, run.finished_at if run else None


@stored_pages.private_for_viewers
@require_safe
def submission_evaluation_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Small JSON polled by the report page: progress, state and the newest run
    (stored under the report's key: estimation/report_progress.py)."""
    body = report_progress.progress_json(pk, request.user)
    if body is None:  # JSON like the body its pollers parse, not the HTML error page
        return JsonResponse({"detail": NOT_FOUND}, status=404)
    return HttpResponse(body, content_type="application/json")


@stored_pages.private_for_viewers
@require_safe
def submission_predicates_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Per-predicate precision and recall of a submission, as on its report."""
    sub = _visible(request, pk)
    run, scores = report.latest_scores(sub)
    confidence = run.confidence if run else settings.KBPO_CONFIDENCE
    resp = HttpResponse(content_type="text/csv; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="predicates-{sub.pk}.csv"'
    writer = csv.writer(resp)
    # `label` last: readers that index the columns keep working.
    writer.writerow(["predicate", "instances", "draws", "labelled", "correct", "precision",
                     "precision_lo", "precision_hi", "exhaustive", "found", "recall",
                     "recall_lo", "recall_hi", "label"])
    for p in report.per_predicate(sub, confidence, scores):
        writer.writerow([_cell(p.predicate), p.instances, p.draws, p.labelled, p.correct,
                         _num(p.precision), *snapshot.csv_ends(p.lo, p.hi), p.exhaustive,
                         p.found, _num(p.recall), *snapshot.csv_ends(p.r_lo, p.r_hi),
                         _cell(p.label)])
    return resp
