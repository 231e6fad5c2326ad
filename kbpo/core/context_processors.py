"""Values every template can use."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def site(request: HttpRequest) -> dict[str, object]:
    return {
        "site_name": "KBPO",
        "crowd_backend": settings.KBPO_CROWD_BACKEND,
        "environment": settings.KBPO_ENV,
    }
