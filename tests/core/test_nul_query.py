"""A NUL in a query string is a 400 everywhere, not a database error."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_admin_filter_with_nul_is_400(client) -> None:
    admin = make_user("root", staff=True)
    User.objects.filter(pk=admin.pk).update(is_superuser=True)
    client.force_login(admin)
    ok = client.get("/admin/submissions/submission/?state__exact=ingested")
    assert ok.status_code == 200
    bad = client.get("/admin/submissions/submission/?state__exact=%00")
    assert bad.status_code == 400
    assert "state__exact holds a NUL" in bad.content.decode()


def test_public_pages_refuse_nul_and_keep_security_headers(client) -> None:
    resp = client.get("/leaderboard/?sort=%00")
    assert resp.status_code == 400
    assert resp["Content-Type"].startswith("text/plain")
    assert resp.headers.get("X-Content-Type-Options") == "nosniff"
    # An escaped percent sign followed by zeros is not a NUL.
    plain = client.get("/leaderboard/").status_code
    assert client.get("/leaderboard/?x=%2500").status_code == plain


def test_api_names_the_parameter_in_json(client) -> None:
    client.force_login(make_user("ada"))
    resp = client.get("/api/corpora/none/sentences/?doc=D1%00&offset=1")
    assert resp.status_code == 400
    assert list(resp.json()) == ["doc"] and "NUL" in resp.json()["doc"]
