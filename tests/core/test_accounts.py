"""Accounts: register, log in and out, password reset by mail, profile, API token."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

PASSWORD = "correct-horse-battery-9"


@pytest.fixture
def user(db) -> User:
    return User.objects.create_user("ada", "ada@example.org", PASSWORD)


@pytest.mark.django_db
def test_register_logs_in_and_stores_affiliation(client: Client) -> None:
    resp = client.post(reverse("register"), {
        "username": "grace", "email": "grace@example.org", "affiliation": "Navy Lab",
        "password1": PASSWORD, "password2": PASSWORD})
    assert resp.status_code == 302
    user = User.objects.get(username="grace")
    assert user.profile.affiliation == "Navy Lab"
    assert client.get(reverse("profile")).status_code == 200


@pytest.mark.django_db
def test_register_errors_name_the_field(client: Client, user: User) -> None:
    resp = client.post(reverse("register"), {
        "username": "x", "email": "ADA@example.org", "password1": "a", "password2": "b"})
    assert resp.status_code == 200
    form = resp.context["form"]
    assert "email" in form.errors and "password2" in form.errors


def test_login_logout(client: Client, user: User) -> None:
    resp = client.post(reverse("login"), {"username": "ada", "password": PASSWORD})
    assert resp.status_code == 302
    assert b"Log out" in client.get(reverse("home")).content
    client.post(reverse("logout"))
    assert client.get(reverse("profile")).status_code == 302


def test_password_reset_by_console_mail(client: Client, user: User) -> None:
    client.post(reverse("password_reset"), {"email": "ada@example.org"})
    assert len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/accounts/reset/\S+)", mail.outbox[0].body).group(1)
    resp = client.get(link, follow=True)
    new = "another-Secret-42x"
    client.post(resp.redirect_chain[-1][0], {"new_password1": new, "new_password2": new})
    user.refresh_from_db()
    assert user.check_password(new)


def test_profile_requires_login_and_saves(client: Client, user: User) -> None:
    assert client.get(reverse("profile")).status_code == 302
    client.force_login(user)
    resp = client.post(reverse("profile"), {
        "first_name": "Ada", "last_name": "Byron", "email": "ada@example.org",
        "affiliation": "Analytical Engines", "homepage": "not a url"})
    assert resp.status_code == 200 and "homepage" in resp.context["form"].errors
    client.post(reverse("profile"), {
        "first_name": "Ada", "last_name": "Byron", "email": "ada@example.org",
        "affiliation": "Analytical Engines", "homepage": "https://example.org"})
    user.refresh_from_db()
    assert user.profile.affiliation == "Analytical Engines" and user.last_name == "Byron"


def test_api_token_create_shows_once_and_revoke(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get(reverse("api-token-create")).status_code == 405  # POST only
    client.post(reverse("api-token-create"))
    key = Token.objects.get(user=user).key
    assert key.encode() in client.get(reverse("api-token")).content
    assert key.encode() not in client.get(reverse("api-token")).content  # shown once
    client.post(reverse("api-token-create"))
    assert Token.objects.get(user=user).key != key  # replaced
    client.post(reverse("api-token-revoke"))
    assert not Token.objects.filter(user=user).exists()


def test_token_pages_need_csrf(user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(reverse("api-token-create")).status_code == 403


@pytest.mark.django_db
def test_home_and_api_docs_render(client: Client) -> None:
    resp = client.get(reverse("home"))
    assert resp.status_code == 200 and b"Evaluate your knowledge base" in resp.content
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert client.get(reverse("api-schema")).status_code in (200, 401, 403)
