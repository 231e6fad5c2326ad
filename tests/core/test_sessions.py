"""Login sessions: in the database alone without Redis; with Redis (CACHE_URL), read
from it and written through to the database, and still ended by logging out."""

from __future__ import annotations

import os
import runpy
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests import ROOT

PASSWORD = "correct-horse-battery-9"


def engine_for(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name in ("CACHE_URL", "KBPO_ENV", "CELERY_BROKER_URL", "DEBUG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "kbpo" / "settings.py"))["SESSION_ENGINE"]


def test_session_engine_follows_the_shared_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    db, cached = "kbpo.core.sessions.db", "kbpo.core.sessions.cached_db"
    assert engine_for(monkeypatch) == db  # make demo: no Redis
    assert engine_for(monkeypatch, CELERY_BROKER_URL="redis://127.0.0.1:6379/0") == db
    assert engine_for(monkeypatch, CACHE_URL="redis://127.0.0.1:6379/1") == cached
    # Production falls back to the broker's Redis for the cache, and so for sessions.
    assert engine_for(monkeypatch, KBPO_ENV="production", DEBUG="0", SECRET_KEY="k" * 60,
                      CELERY_BROKER_URL="redis://redis:6379/0") == cached


@pytest.fixture
def redis_sessions(settings: object) -> Iterator[None]:
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if not broker.startswith("redis"):
        pytest.skip("needs Redis (CELERY_BROKER_URL)")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": broker, "KEY_PREFIX": f"kbpo-test-{os.getpid()}"}}
    settings.SESSION_ENGINE = "kbpo.core.sessions.cached_db"
    yield


def session_queries(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as q:
        resp = client.get(url)
    assert resp.status_code == 200
    # The session table read directly, or through its prepared statement (kbpo.core.sessions).
    return [x["sql"] for x in q.captured_queries
            if ("django_session" in x["sql"] and not x["sql"].startswith("PREPARE"))
            or x["sql"].startswith(("EXECUTE kbpo_session_read",
                                    "EXECUTE kbpo_session_user_read"))]


@pytest.mark.django_db
def test_cached_sessions_log_in_read_from_redis_and_log_out(redis_sessions: None) -> None:
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    client = Client()
    resp = client.post(reverse("login"), {"username": "ada", "password": PASSWORD})
    assert resp.status_code == 302
    key = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    # Signed in, and the session comes from Redis: no session query.
    assert session_queries(client, reverse("profile")) == []
    # Without its cache entry (Redis restarted) the session is read back from the table.
    cache.delete(f"django.contrib.sessions.cached_db{key}")
    assert len(session_queries(client, reverse("profile"))) == 1
    assert session_queries(client, reverse("profile")) == []
    # Logging out ends the session everywhere: the old cookie is no longer a login.
    stolen = Client()
    stolen.cookies[django_settings.SESSION_COOKIE_NAME] = key
    assert stolen.get(reverse("profile")).status_code == 200
    client.post(reverse("logout"))
    assert stolen.get(reverse("profile")).status_code == 302
    assert client.get(reverse("profile")).status_code == 302


@pytest.mark.django_db
def test_cached_sessions_keep_the_login_lockout(redis_sessions: None,
                                                settings: object) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    client = Client()
    for _ in range(3):
        client.post(reverse("login"), {"username": "ada", "password": "wrong"})
    resp = client.post(reverse("login"), {"username": "ada", "password": PASSWORD})
    assert resp.status_code == 429
    assert client.get(reverse("profile")).status_code == 302


# --- The session and user reads as prepared statements (kbpo/core/sessions, backends) ---


def signed_in(client: Client) -> bool:
    return client.get(reverse("profile")).status_code == 200


@pytest.fixture
def ada_client() -> tuple[User, Client]:
    user = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    client = Client()
    assert client.post(reverse("login"), {"username": "ada", "password": PASSWORD}
                       ).status_code == 302
    return user, client


@pytest.mark.django_db
def test_signed_in_request_reads_session_and_user_prepared(
        ada_client: tuple[User, Client]) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are Postgres's")
    user, client = ada_client
    with CaptureQueriesContext(connection) as q:
        assert client.get(reverse("profile")).status_code == 200
    sql = [x["sql"] for x in q.captured_queries]
    assert any(s.startswith("EXECUTE kbpo_session_read") for s in sql), sql
    assert any(s.startswith("EXECUTE kbpo_auth_user") for s in sql), sql
    assert not any("FROM \"django_session\"" in s for s in sql), sql
    assert not any(s.startswith("SELECT") and "FROM \"auth_user\" WHERE \"auth_user\".\"id\""
                   in s for s in sql), sql
    # The session's user is known now: its row comes with the session, in one statement.
    reads, page = prepared_reads(client)
    assert "EXECUTE kbpo_session_user_read" in reads, reads
    assert "EXECUTE kbpo_auth_user" not in reads and "EXECUTE kbpo_session_read" not in reads
    assert "ada" in page
    # The joined row is live: a deactivation behind the ORM's back ends the login at once.
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert not signed_in(client)


@pytest.mark.django_db
def test_user_row_is_read_live_on_every_request(ada_client: tuple[User, Client]) -> None:
    user, client = ada_client
    assert signed_in(client)
    # Deactivated behind the ORM's back (no signal): the next request is not signed in.
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert not signed_in(client)
    User.objects.filter(pk=user.pk).update(is_active=True)
    assert signed_in(client)
    # Staff rights come and go with the row: the operator link in the navigation.
    assert "Operator" not in client.get(reverse("profile")).content.decode()
    User.objects.filter(pk=user.pk).update(is_staff=True)
    assert "Operator" in client.get(reverse("profile")).content.decode()
    # A password changed elsewhere ends this session (Django's session hash check).
    other = User.objects.get(pk=user.pk)
    other.set_password("another-horse-battery-7")
    other.save()
    assert not signed_in(client)


@pytest.mark.django_db
def test_expired_unknown_and_deleted_sessions_are_not_logins(
        ada_client: tuple[User, Client]) -> None:
    from django.contrib.sessions.models import Session
    from django.utils import timezone

    user, client = ada_client
    key = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    forged = Client()
    wrong = key[:-1] + ("a" if key[-1] != "a" else "b")
    forged.cookies[django_settings.SESSION_COOKIE_NAME] = wrong
    assert not signed_in(forged)
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - timezone.timedelta(seconds=1))
    assert not signed_in(client)
    # A signed-in session whose user is gone.
    fresh = Client()
    fresh.force_login(user)
    user.delete()
    assert not signed_in(fresh)


@pytest.mark.django_db
def test_sessions_signed_in_through_djangos_backend_stay_signed_in() -> None:
    """Sessions from before the prepared backend name Django's ModelBackend; they stay
    logins (and are checked against the live row like any other)."""
    from django.contrib.auth import BACKEND_SESSION_KEY
    from django.utils.module_loading import import_string

    user = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    key = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    store = import_string(django_settings.SESSION_ENGINE + ".SessionStore")
    assert store(key).load()[BACKEND_SESSION_KEY] == "kbpo.core.backends.PreparedModelBackend"
    assert signed_in(client)
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert not signed_in(client)


@pytest.mark.django_db
def test_decoded_text_is_kept_only_when_its_signature_checks_out() -> None:
    """The same stored text decodes to the same data as Django's store, a fresh dict
    each time; a tampered text is refused every time and never kept."""
    from django.contrib.sessions.backends.db import SessionStore as DjangoStore

    from kbpo.core.sessions import _DECODED
    from kbpo.core.sessions.db import SessionStore

    ours = SessionStore()
    text = ours.encode({"_auth_user_id": "7", "cart": [1, 2]})
    first = ours.decode(text)
    assert first == {"_auth_user_id": "7", "cart": [1, 2]}
    assert (ours.key_salt, text) in _DECODED
    first["cart"].append(3)  # the caller's copy: the next decode is unchanged
    again = ours.decode(text)
    assert again == {"_auth_user_id": "7", "cart": [1, 2]} and again is not first
    # Django's own store (another salt) reads what it wrote the same way.
    theirs = DjangoStore()
    assert theirs.decode(theirs.encode({"a": 1})) == {"a": 1}
    # Tampered: the payload changed under the old signature.
    head, _, tail = text.partition(":")
    forged = head[:-2] + ("AA" if head[-2:] != "AA" else "BB") + ":" + tail
    for _ in range(2):
        assert ours.decode(forged) == {}
    assert (ours.key_salt, forged) not in _DECODED


# --- The user row read in the session's statement (kbpo/core/sessions, backends) ---


def prepared_reads(client: Client) -> tuple[list[str], str]:
    with CaptureQueriesContext(connection) as q:
        page = client.get(reverse("profile"))
    assert page.status_code == 200
    return ([x["sql"].split(" (")[0] for x in q.captured_queries
             if x["sql"].startswith("EXECUTE")], page.content.decode())


@pytest.mark.django_db
def test_a_wrong_remembered_user_costs_a_read_never_a_wrong_login(
        ada_client: tuple[User, Client], needs_postgres: None) -> None:
    from kbpo.core.sessions import _USER_OF

    _, client = ada_client
    bob = User.objects.create_user("bob", "bob@example.org", PASSWORD, is_staff=True)
    key = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    _USER_OF.keep(key, bob.pk)  # as if this key had named bob
    reads, page = prepared_reads(client)
    assert "EXECUTE kbpo_session_user_read" in reads  # bob's row came along, unused
    assert "EXECUTE kbpo_auth_user" in reads  # ada's read on its own
    assert "ada" in page and "bob" not in page and "Operator" not in page
    reads, _ = prepared_reads(client)  # the key's user is learnt again
    assert "EXECUTE kbpo_auth_user" not in reads


@pytest.mark.django_db
def test_a_row_read_with_a_session_is_never_used_by_a_later_request(
        ada_client: tuple[User, Client]) -> None:
    from kbpo.core.backends import read_with_session, user_columns
    from kbpo.core.sessions import _USER_OF

    user, client = ada_client
    _USER_OF.forget()  # this key unknown: its read fetches no user row
    _, attnames, _ = user_columns()
    stale = User.objects.get(pk=user.pk)
    stale.is_staff = True
    # Left by something before the request (another request's, or a shell's, read).
    read_with_session(user.pk, tuple(getattr(stale, a) for a in attnames))
    _, page = prepared_reads(client)
    assert "Operator" not in page  # the live row (not staff), not the stale one
