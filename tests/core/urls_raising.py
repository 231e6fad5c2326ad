"""The project's URLs and handlers, plus views that fail, to test the 500 and 403
handlers (no project view under /api/ lets either escape)."""

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import path

from kbpo.urls import handler400, handler403, handler404, handler500  # noqa: F401
from kbpo.urls import urlpatterns as project_urls


def fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("an unhandled error, as a bug would raise")


def denied(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied


urlpatterns = [path("api/fails/", fails), path("fails/", fails),
               path("api/denied/", denied), path("denied/", denied), *project_urls]
