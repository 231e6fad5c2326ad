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
    db, cached = "django.contrib.sessions.backends.db", "django.contrib.sessions.backends.cached_db"
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
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    yield


def session_queries(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as q:
        resp = client.get(url)
    assert resp.status_code == 200
    return [x["sql"] for x in q.captured_queries if "django_session" in x["sql"]]


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
