"""The compare page (/leaderboard/<tag>/compare/) and its API (/api/compare/<tag>/)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from kbpo.core import security
from kbpo.core.models import Corpus

from . import leaderboard as lb
from . import stored_pages
from .api_reports import IntervalSerializer, ViewerAPIView
from .compare import CompareError, CompareThrottled, comparable, difference, parse_id, pick
from .models import METRICS


def _admit(request: HttpRequest | Request) -> None:
    """Count one fresh comparison against the client's address (the page and the API
    share it), refusing it over KBPO_COMPARE_RATE_PER_IP per window."""
    verdict = security.take(f"compare-ip:{security.client_ip(request) or 'unknown'}",
                            settings.KBPO_COMPARE_RATE_PER_IP,
                            settings.KBPO_COMPARE_RATE_WINDOW)
    if not verdict.allowed:
        raise CompareThrottled(verdict.retry_after)


def _run(request: HttpRequest | Request, user: object, corpus: Corpus,
         params: Any) -> dict[str, Any]:
    scheme = params.get("scheme", "instance")
    if scheme not in lb.BOARD_SCHEMES:
        raise CompareError("scheme", str(lb.BadParameter("scheme", scheme,
                                                          list(lb.BOARD_SCHEMES))))
    a, b = pick(corpus, user, parse_id(params.get("a"), "a"), parse_id(params.get("b"), "b"))
    return difference(corpus, a, b, scheme, settings.KBPO_SAMPLING_SCHEME,
                      float(settings.KBPO_CONFIDENCE), admit=lambda: _admit(request))


def _retry_after(resp: HttpResponse, exc: CompareError) -> HttpResponse:
    if isinstance(exc, CompareThrottled):
        resp["Retry-After"] = str(exc.retry_after)
    return resp


@stored_pages.private_for_viewers
@require_safe
def compare_page(request: HttpRequest, tag: str) -> HttpResponse:
    corpus = get_object_or_404(Corpus, tag=tag)
    systems = comparable(corpus, request.user)
    result, error, status, refused = None, "", 200, None
    if "a" in request.GET or "b" in request.GET:
        try:
            result = _run(request, request.user, corpus, request.GET)
        except CompareError as exc:
            error, status, refused = str(exc), exc.status, exc
    rows = []
    if result:
        for m in METRICS:
            d = result["difference"][m]
            rows.append({"metric": lb.METRIC_LABELS[m], "a": result["a"][m],
                         "b": result["b"][m], "d": d})
    resp = render(request, "estimation/compare.html", {
        "corpus": corpus, "systems": systems, "result": result, "rows": rows,
        "error": error, "schemes": lb.BOARD_SCHEMES,
        "scheme": request.GET.get("scheme", "instance"),
        "a": request.GET.get("a", ""), "b": request.GET.get("b", ""),
        "confidence_pct": round(100 * float(settings.KBPO_CONFIDENCE)),
    }, status=status)
    return _retry_after(resp, refused) if refused is not None else resp


class DiffSerializer(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True, help_text="A − B; null when either "
                                      "is not estimable (the interval still bounds it).")
    lo = serializers.FloatField()
    hi = serializers.FloatField()
    sd = serializers.FloatField(allow_null=True, help_text="Standard error of the "
                                "difference, using the covariance of the two estimates.")
    sd_if_independent = serializers.FloatField(allow_null=True, help_text="What it would "
                                               "be if the estimates were independent.")
    better = serializers.ChoiceField(choices=["a", "b"], allow_null=True, help_text=(
        "Which is better: only when the interval excludes 0, else null."))


class CompareSystemSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    name = serializers.CharField()
    precision = IntervalSerializer()
    recall = IntervalSerializer()
    f1 = IntervalSerializer()


class DiffsSerializer(serializers.Serializer):
    precision = DiffSerializer()
    recall = DiffSerializer()
    f1 = DiffSerializer()


class CompareSerializer(serializers.Serializer):
    corpus = serializers.CharField()
    scheme = serializers.CharField()
    reweighted = serializers.BooleanField(
        help_text="true: the scheme's figures are reweighted from the draw scheme's draws.")
    reliable = serializers.BooleanField(
        help_text="false for reweighted figures: not headline figures; their intervals "
                  "(and so the difference's) can miss more often than they say.")
    confidence = serializers.FloatField()
    a = CompareSystemSerializer()
    b = CompareSystemSerializer()
    difference = DiffsSerializer()


class CompareAPIView(ViewerAPIView):
    """Two systems you may see, their joint scores and the difference with its interval."""

    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="compare_systems",
        summary="Difference in joint P, R and F1 between two systems (paired interval)",
        parameters=[OpenApiParameter("a", OpenApiTypes.INT, required=True),
                    OpenApiParameter("b", OpenApiTypes.INT, required=True),
                    OpenApiParameter("scheme", OpenApiTypes.STR, enum=list(lb.BOARD_SCHEMES),
                                     default="instance")],
        responses={200: CompareSerializer,
                   400: OpenApiResponse(description="A parameter is missing or invalid; "
                                                    "the body names it."),
                   404: OpenApiResponse(description="No such corpus, or a submission you "
                                                    "may not see."),
                   503: OpenApiResponse(description="Labels newer than the leaderboard wait "
                                                    "to be scored; the comparison uses the "
                                                    "leaderboard's labels: retry shortly.")})
    def get(self, request: Request, tag: str) -> Response:
        corpus = Corpus.objects.filter(tag=tag).first()
        if corpus is None:
            return Response({"detail": f"No corpus with tag {tag!r}."}, status=404)
        try:
            data = _run(request, request.user, corpus, request.query_params)
        except CompareThrottled as exc:
            # DRF's shape for its own throttles: {"detail": ...} with Retry-After.
            return _retry_after(Response({"detail": str(exc)}, status=429), exc)
        except CompareError as exc:
            return Response({exc.field: [str(exc)]}, status=exc.status)
        return Response(CompareSerializer(data).data)
