"""Middleware: the health check (before host validation and HTTPS redirects), and the
Content-Security-Policy header with its policy built once."""

from __future__ import annotations

from collections.abc import Callable

import csp.middleware as _csp
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse

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


def _csp_policies() -> tuple[str, str]:
    from csp.utils import build_policy

    return build_policy(), build_policy(report_only=True)


class CSPMiddleware(_csp.CSPMiddleware):
    """django-csp's middleware, with the settings' policies built once.

    django-csp rebuilds both header strings (the policy and the report-only one) from
    the settings on every response, though without a per-view override or a nonce they
    are the same string each time. That case is answered from a cache (cleared when a
    test changes the settings); anything else — a view's csp_update/csp_replace/
    csp_exempt, a nonce, the debug pages — goes through django-csp unchanged.
    """

    _built: tuple[str, str] | None = None
    _PER_RESPONSE = ("_csp_config", "_csp_update", "_csp_replace",
                     "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if (getattr(request, "_csp_nonce", None) is not None or settings.DEBUG
                or any(getattr(response, a, None) is not None for a in self._PER_RESPONSE)):
            return super().process_response(request, response)
        if CSPMiddleware._built is None:
            CSPMiddleware._built = _csp_policies()
        for header, policy, exempt, setting in (
                (_csp.HEADER, CSPMiddleware._built[0], "_csp_exempt", "CONTENT_SECURITY_POLICY"),
                (_csp.HEADER_REPORT_ONLY, CSPMiddleware._built[1], "_csp_exempt_ro",
                 "CONTENT_SECURITY_POLICY_REPORT_ONLY")):
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if (policy and header not in response and getattr(response, exempt, False) is False
                    and not request.path_info.startswith(tuple(prefixes))):
                response[header] = policy
        # As django-csp: a nonce asked for after the header is written is an error.
        request.csp_nonce = _csp.CheckableLazyObject(self._csp_nonce_post_response)
        return response


@receiver(setting_changed)
def _forget_csp(**kwargs: object) -> None:
    if str(kwargs.get("setting", "")).startswith("CONTENT_SECURITY_POLICY"):
        CSPMiddleware._built = None
