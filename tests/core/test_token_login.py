"""POST /api/auth/token/: the API token for a username and password, throttled, and the
same answer for an unknown username as for a wrong password."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

URL = "/api/auth/token/"
PASSWORD = "correct-horse-battery-9"


@pytest.fixture
def ada(db) -> User:
    return User.objects.create_user("ada", "ada@example.org", PASSWORD)


def post(client: Client, ip: str = "198.51.100.7", **body: str):
    return client.post(URL, body, content_type="application/json", REMOTE_ADDR=ip)


@pytest.mark.django_db
def test_password_gives_the_accounts_token_and_the_token_works(client, ada) -> None:
    answer = post(client, username="ada", password=PASSWORD)
    assert answer.status_code == 200
    key = answer.json()["token"]
    assert answer.json()["username"] == "ada"
    assert Token.objects.get(user=ada).key == key
    # A second login (another machine) gets the same token: the first keeps working.
    assert post(client, username="ada", password=PASSWORD).json()["token"] == key
    listed = Client().get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}")
    assert listed.status_code == 200


@pytest.mark.django_db
def test_the_token_page_and_the_endpoint_share_one_token(client, ada) -> None:
    page = Token.objects.create(user=ada)
    assert post(client, username="ada", password=PASSWORD).json()["token"] == page.key


@pytest.mark.django_db
def test_unknown_username_and_wrong_password_are_answered_alike(client, ada) -> None:
    wrong = post(client, username="ada", password="not-it")
    unknown = post(client, username="nobody-here", password="not-it")
    inactive = User.objects.create_user("bob", password=PASSWORD, is_active=False)
    blocked = post(client, username=inactive.username, password=PASSWORD)
    bodies = [(r.status_code, r.json(), r["WWW-Authenticate"]) for r in (wrong, unknown, blocked)]
    assert bodies[0] == bodies[1] == bodies[2]
    assert bodies[0][0] == 401 and "Wrong username or password" in bodies[0][1]["detail"]
    assert not Token.objects.exists()


@pytest.mark.django_db
def test_missing_field_is_named(client) -> None:
    answer = post(client, username="ada")
    assert answer.status_code == 400 and list(answer.json()) == ["password"]
    form = client.post(URL, {"password": "x"}, REMOTE_ADDR="198.51.100.7")  # form-encoded
    assert form.status_code == 400 and list(form.json()) == ["username"]


@pytest.mark.django_db
def test_attempts_per_address_are_throttled(client, ada, settings) -> None:
    settings.KBPO_TOKEN_LOGIN_RATE_PER_IP = 3
    # One fixed window for the whole test: with the default 60 s, four password checks
    # on a busy machine straddled two windows and the fourth was let through.
    settings.KBPO_TOKEN_LOGIN_RATE_WINDOW = 10**9
    codes = [post(client, username="ada", password=PASSWORD).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = post(client, username="ada", password=PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "login attempts from your address" in refused.json()["detail"]
    # Another address is not affected.
    assert post(client, ip="198.51.100.8", username="ada", password=PASSWORD).status_code == 200


@pytest.mark.django_db
def test_failures_per_username_are_throttled_whether_or_not_it_exists(client, ada,
                                                                      settings) -> None:
    settings.KBPO_TOKEN_LOGIN_FAILURES_PER_USER = 2
    for name in ("ada", "nobody-here"):
        codes = [post(client, ip=f"203.0.113.{i}", username=name, password="guess").status_code
                 for i in range(3)]
        assert codes == [401, 401, 429], name
    # Once a username is held back even its right password waits (from any address).
    held = post(client, ip="203.0.113.50", username="ada", password=PASSWORD)
    assert held.status_code == 429 and "for this username" in held.json()["detail"]
    assert post(client, ip="203.0.113.51", username="grace", password="x").status_code == 401


@pytest.mark.django_db
def test_axes_lockout_is_answered_as_json(client, ada, settings) -> None:
    """django-axes' per-address lockout (shared with the site's login) applies, and the
    API answers it with JSON, not the login page's HTML."""
    settings.AXES_FAILURE_LIMIT = 2
    codes = [post(client, username=f"user{i}", password="guess").status_code for i in range(2)]
    assert codes == [401, 429]
    locked = post(client, username="ada", password=PASSWORD)
    assert locked.status_code == 429 and locked.json()["code"] == "locked_out"
    assert locked["Content-Type"] == "application/json"
    assert not Token.objects.exists()
