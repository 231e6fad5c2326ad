"""Issue 41, hostile use of the accounts: sign-ups and password resets are throttled
per address (and resets per account), the login lockout counts per account as well as
per address, every 429 says when to come back (Retry-After), and a new account (or a
changed address) must be confirmed before it may upload."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from kbpo.core.models import Profile

pytestmark = pytest.mark.django_db
PASSWORD = "correct-horse-battery-9"
WINDOW = 10**9  # fixed rate-limit windows no test straddles


@pytest.fixture(autouse=True)
def _windows(settings) -> None:
    settings.KBPO_REGISTER_RATE_WINDOW = WINDOW
    settings.KBPO_PASSWORD_RESET_RATE_WINDOW = WINDOW


def _register(client: Client, n: int, ip: str):
    return client.post(reverse("register"), {
        "username": f"puppet{n}", "email": f"puppet{n}@example.org",
        "password1": PASSWORD, "password2": PASSWORD}, REMOTE_ADDR=ip)


def test_registrations_from_one_address_are_throttled() -> None:
    codes = [_register(Client(), n, "203.0.113.7") for n in range(20)]
    created = User.objects.filter(username__startswith="puppet").count()
    assert created == 5 and [r.status_code for r in codes] == [302] * 5 + [429] * 15
    assert all(int(r["Retry-After"]) > 0 for r in codes[5:])
    assert "Too many sign-ups" in codes[-1].content.decode()
    # Another address is not affected.
    assert _register(Client(), 99, "203.0.113.8").status_code == 302


def test_password_resets_are_throttled_per_account_and_per_address(settings) -> None:
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    # Fifteen requests for one account, each from its own address: three mails.
    codes = [Client().post(reverse("password_reset"), {"email": "ada@example.org"},
                           REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(15)]
    assert codes == [302] * 15  # the same answer every time: no account is revealed
    assert len(mail.outbox) == 3
    # Fifteen from one address: five are served, the rest are a 429 with Retry-After.
    mail.outbox.clear()
    client = Client()
    answers = [client.post(reverse("password_reset"), {"email": f"x{n}@example.org"},
                           REMOTE_ADDR="192.0.2.50") for n in range(15)]
    assert [r.status_code for r in answers] == [302] * 5 + [429] * 10
    assert all(int(r["Retry-After"]) > 0 for r in answers[5:])


def test_login_lockout_counts_per_account_and_says_when(settings) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    # One failure from each of three addresses locks the account ...
    codes = [Client().post(reverse("login"), {"username": "ada", "password": "wrong"},
                           REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(3)]
    assert codes == [200, 200, 429]
    locked = Client().post(reverse("login"), {"username": "ada", "password": PASSWORD},
                           REMOTE_ADDR="198.51.100.77")  # ... even from a fresh address
    assert locked.status_code == 429
    assert locked["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    assert "Too many failed logins" in locked.content.decode()
    # Another account logs in from those addresses as usual.
    User.objects.create_user("grace", "grace@example.org", PASSWORD)
    assert Client().post(reverse("login"), {"username": "grace", "password": PASSWORD},
                         REMOTE_ADDR="198.51.100.0").status_code == 302


def _upload(client: Client):
    return client.post(reverse("submission-new"), {})


def test_a_new_account_uploads_only_after_confirming_its_address(client) -> None:
    assert _register(client, 1, "203.0.113.9").status_code == 302
    (message,) = mail.outbox
    assert message.to == ["puppet1@example.org"]
    assert 'id="confirm-email"' in client.get(reverse("profile")).content.decode()
    # Not yet: the web form and the API both refuse, saying why.
    page = _upload(client)
    assert page.status_code == 403 and "Confirm your e-mail address" in page.content.decode()
    user = User.objects.get(username="puppet1")
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user)
    api = Client().post("/api/submissions/", {}, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert (api.status_code, api.json()["code"]) == (403, "email_unconfirmed")
    # A forged or altered link confirms nothing.
    link = re.search(r"https?://[^/]+(/accounts/confirm/\S+)", message.body).group(1)
    assert client.get(link[:-3] + "abc/").status_code == 302
    assert not Profile.objects.get(user=user).email_confirmed
    # The mailed link does.
    assert client.get(link).status_code == 302
    assert Profile.objects.get(user=user).email_confirmed
    assert _upload(client).status_code == 400  # the form's own field errors now
    assert 'id="confirm-email"' not in client.get(reverse("profile")).content.decode()


def test_a_link_for_an_old_address_confirms_nothing(client) -> None:
    _register(client, 2, "203.0.113.10")
    link = re.search(r"(/accounts/confirm/\S+)", mail.outbox[0].body).group(1)
    User.objects.filter(username="puppet2").update(email="elsewhere@example.org")
    client.get(link)
    assert not Profile.objects.get(user__username="puppet2").email_confirmed


def test_a_changed_address_must_be_confirmed_again(client) -> None:
    """Confirming once and then moving to another address would make confirmation prove
    nothing: the new address gets its own link and uploads wait for it."""
    user = User.objects.create_user("moved", "moved@example.org", PASSWORD)
    client.force_login(user)
    profile = {"first_name": "", "last_name": "", "affiliation": "", "homepage": ""}
    client.post(reverse("profile"), {**profile, "email": "MOVED@example.org"})  # same one
    assert _upload(client).status_code == 400 and not mail.outbox
    client.post(reverse("profile"), {**profile, "email": "new@example.org"})
    (message,) = mail.outbox
    assert message.to == ["new@example.org"]
    assert _upload(client).status_code == 403
    link = re.search(r"(/accounts/confirm/\S+)", message.body).group(1)
    assert client.get(link).status_code == 302
    assert _upload(client).status_code == 400  # field errors, not the confirmation gate


def test_accounts_not_made_by_sign_up_may_upload(client, monkeypatch) -> None:
    User.objects.create_user("older", "older@example.org", PASSWORD)  # as before this
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command("createsuperuser", "--noinput", username="root", email="root@example.org")
    for name in ("older", "root"):
        c = Client()
        c.force_login(User.objects.get(username=name))
        assert _upload(c).status_code == 400  # field errors, not the confirmation gate


def test_resending_the_link_is_throttled(client, settings) -> None:
    _register(client, 3, "203.0.113.11")
    codes = [client.post(reverse("confirm-email-again")).status_code for _ in range(5)]
    assert codes == [302, 302, 302, 429, 429]
    assert len(mail.outbox) == 1 + 3
