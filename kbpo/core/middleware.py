"""Middleware: the health check (before host validation and HTTPS redirects), NUL in
query strings refused, and the Content-Security-Policy header with its policy built once."""

from __future__ import annotations

from collections.abc import Callable

import csp.middleware as _csp
import csp.utils as _csp_utils
from csp.utils import DIRECTIVES_T
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from kbpo.core import csrf_mask

# CSRF tokens masked as Django does, faster (kbpo/core/csrf_mask.py): before any request.
csrf_mask.install()

HEALTH_PATH = "/healthz"


class HealthCheckMiddleware:
    """Answer `/healthz` for container health checks.

    It sits first so that the probe (plain HTTP to 127.0.0.1) is neither redirected to
    HTTPS nor refused by ALLOWED_HOSTS; it reveals nothing but "ok" or "unavailable".
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != HEALTH_PATH:
            return self.get_response(request)
        try:
            connection.ensure_connection()
        except Exception:
            return JsonResponse({"status": "unavailable"}, status=503)
        return JsonResponse({"status": "ok"})


class RejectNulMiddleware:
    """A NUL in the query string is a 400 for every view.

    Postgres cannot store or compare a string holding NUL, so a NUL reaching a filter
    (the admin's list filters take any parameter) would be a 500. Forms and the API
    check their own fields; this covers the query parameters no form declares.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "%00" not in request.META.get("QUERY_STRING", ""):
            return self.get_response(request)
        names = sorted({k for k, values in request.GET.lists()
                        if "\x00" in k or any("\x00" in v for v in values)})
        why = "holds a NUL character (%00): remove it and try again."
        if request.path.startswith("/api/"):
            return JsonResponse({name.replace("\x00", "%00"): f"The value {why}"
                                 for name in names}, status=400)
        listed = ", ".join(n.replace("\x00", "%00") for n in names)
        return HttpResponseBadRequest(f"The query parameter {listed} {why}",
                                      content_type="text/plain; charset=utf-8")


# The settings' own policies (no per-view override, no nonce), built once; cleared when a
# test changes the settings.
_BUILT: dict[bool, str] = {}


def build_policy(config: DIRECTIVES_T | None = None, update: DIRECTIVES_T | None = None,
                 replace: DIRECTIVES_T | None = None, nonce: str | None = None,
                 report_only: bool = False) -> str:
    """django-csp's `build_policy`, with the settings' own policy built once.

    django-csp's middleware rebuilds both header strings (the policy and the report-only
    one) from the settings on every response (≈0.1 ms), though without a per-view
    override or a nonce they are the same string each time. That case is answered from
    `_BUILT`; anything else (csp_update/csp_replace/csp_exempt on a view, a nonce)
    builds as django-csp does.
    """
    if config is None and update is None and replace is None and nonce is None:
        built = _BUILT.get(report_only)
        if built is None:
            built = _BUILT[report_only] = _csp_utils.build_policy(report_only=report_only)
        return built
    return _csp_utils.build_policy(config=config, update=update, replace=replace,
                                   nonce=nonce, report_only=report_only)


# django-csp's middleware (below, unchanged: its exemptions, excluded prefixes and nonce
# checks) calls the `build_policy` of its own module; it gets this one.
_csp.build_policy = build_policy


class CSPMiddleware(_csp.CSPMiddleware):
    """django-csp's middleware, its policies built once (`build_policy`)."""


@receiver(setting_changed)
def _forget_csp(**kwargs: object) -> None:
    if str(kwargs.get("setting", "")).startswith("CONTENT_SECURITY_POLICY"):
        _BUILT.clear()
