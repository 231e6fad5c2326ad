"""Middleware that must run before host validation and HTTPS redirects."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection
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
