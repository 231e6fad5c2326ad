"""Project error handlers (kbpo/urls.py): JSON under /api/, Django's own pages elsewhere.

A script calling the API parses every answer as JSON; an unmatched /api/ URL or an
unhandled error used to answer an HTML page. The body has the shape DRF gives every
other API error: {"detail": "..."}.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def is_api(request: HttpRequest) -> bool:
    path = request.path_info
    return path == "/api" or path.startswith("/api/")


def _json(detail: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return _json("Bad request.", 400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return _json("You do not have permission to perform this action.", 403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        # The path is not echoed: it is the client's own, and may be hostile.
        return _json("Not found: no API endpoint or object at this address "
                     "(the endpoints are listed at /api/docs/).", 404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api(request):
        return _json("Server error: the request failed on our side and was logged; "
                     "try again later.", 500)
    return defaults.server_error(request)
