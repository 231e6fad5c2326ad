"""Every /api/ answer is JSON, errors included; other paths keep Django's pages."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import make_corpus

UNMATCHED = ["/api/submissions/abc/scores/", "/api/submissions/-1/scores/",
             "/api/leaderboard/a.b/", "/api/nothing-here/", "/api/", "/api",
             "/api/compare/t/extra/", "/api/submissions/1/scores/%E2%80%AE/"]


def _detail(resp, status: int) -> str:  # type: ignore[no-untyped-def]
    assert resp.status_code == status, (resp.status_code, resp.content[:200])
    assert resp["Content-Type"] == "application/json"
    body = json.loads(resp.content)
    assert set(body) == {"detail"} and isinstance(body["detail"], str)
    return body["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", UNMATCHED)
def test_an_unmatched_api_url_answers_json_404(client: Client, url: str) -> None:
    assert "Not found" in _detail(client.get(url), 404)


@pytest.mark.django_db
def test_a_page_404_keeps_djangos_html_page(client: Client) -> None:
    resp = client.get("/leaderboard/a.b/")
    assert resp.status_code == 404 and resp["Content-Type"].startswith("text/html")
    assert "<h1>Not Found</h1>" in resp.content.decode()


@pytest.mark.django_db
def test_a_method_the_api_does_not_take_answers_json_405(client: Client) -> None:
    make_corpus("t")
    for url in (reverse("api-leaderboard", args=["t"]), reverse("api-compare", args=["t"])):
        assert "not allowed" in _detail(client.post(url), 405)
        assert "not allowed" in _detail(client.delete(url), 405)


@pytest.mark.django_db
@pytest.mark.urls("tests.core.urls_raising")
def test_an_unhandled_error_answers_json_500_under_api_only() -> None:
    client = Client(raise_request_exception=False)
    assert "Server error" in _detail(client.get("/api/fails/"), 500)
    page = client.get("/fails/")
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")
    assert "<h1>Server Error (500)</h1>" in page.content.decode()
    assert "permission" in _detail(client.get("/api/denied/"), 403)
    page = client.get("/denied/")
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


@pytest.mark.django_db
def test_a_suspicious_request_answers_json_400_under_api() -> None:
    client = Client(raise_request_exception=False)
    # A Host header outside ALLOWED_HOSTS is Django's SuspiciousOperation: handler400.
    assert _detail(client.get("/api/nothing-here/", HTTP_HOST="evil.example"), 400)
    page = client.get("/leaderboard/", HTTP_HOST="evil.example")
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")
