"""The client address behind trusted proxies, fixed-window rate limits, lockout after
failed logins (site and admin), API throttles, a Content-Security-Policy on every page,
and spreadsheet-safe CSV cells."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from kbpo.core.security import client_ip, csv_safe, peek, take
from tests.factories import make_corpus, make_submission

PASSWORD = "correct-horse-battery-9"


@pytest.fixture
def ada(db) -> User:
    return User.objects.create_user("ada", "ada@example.org", PASSWORD)


def login(client: Client, url: str, password: str, ip: str, username: str = "ada"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=ip)


WINDOW = 10**9  # one fixed window for the whole test: it never straddles two


def test_take_allows_exactly_the_limit_and_peek_agrees() -> None:
    key = "test-take-limit"
    verdicts = []
    for _ in range(4):
        verdicts.append((peek(key, 3, WINDOW).allowed, take(key, 3, WINDOW).allowed))
    # Before each take: may it pass? Then: did it?
    assert verdicts == [(True, True), (True, True), (True, True), (False, False)]
    refused = take(key, 3, WINDOW)
    assert not refused.allowed and 0 < refused.retry_after <= WINDOW
    assert take("test-take-other", 3, WINDOW).allowed  # keys count apart
    assert all(take(key, 0, WINDOW).allowed for _ in range(3))  # 0: no limit


@pytest.mark.parametrize(("proxies", "forwarded", "remote", "expected"), [
    (0, "", "198.51.100.7", "198.51.100.7"),
    (0, "203.0.113.5", "198.51.100.7", "198.51.100.7"),   # no proxy: a header is a lie
    (1, "203.0.113.5", "10.0.0.1", "203.0.113.5"),          # what our proxy saw
    (1, "6.6.6.6, 203.0.113.5", "10.0.0.1", "203.0.113.5"),  # the client wrote the first
    (2, "6.6.6.6, 203.0.113.5, 10.0.0.2", "10.0.0.1", "203.0.113.5"),
    (2, "10.0.0.2", "10.0.0.1", "10.0.0.1"),                # fewer hops than proxies
    (1, "not-an-address", "10.0.0.1", "10.0.0.1"),
    (0, "", "", None),
])
def test_client_ip_trusts_only_the_configured_proxies(
        settings, proxies: int, forwarded: str, remote: str, expected: str | None) -> None:
    settings.KBPO_TRUSTED_PROXY_COUNT = proxies
    meta = {"REMOTE_ADDR": remote}
    if forwarded:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_ip(RequestFactory().get("/", **meta)) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_repeated_failed_logins_lock_the_address_out(client, ada, settings, url) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    ada.is_staff = True
    ada.save()
    codes = [login(client, url, "wrong", "198.51.100.5", username=name).status_code
             for name in ("ada", "ada", "grace")]   # other usernames count too (spraying)
    assert codes == [200, 200, 429]
    locked = login(client, url, PASSWORD, "198.51.100.5")   # even the right password
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address is not affected, and a success there works as usual (for another
    # account: ada's own failures lock ada out everywhere, tests/core/test_hostile_accounts).
    User.objects.create_user("bob", "bob@example.org", PASSWORD, is_staff=True)
    other = Client()
    assert login(other, url, PASSWORD, "198.51.100.6", username="bob").status_code == 302
    assert "_auth_user_id" in other.session


@pytest.mark.django_db
def test_guessed_api_tokens_are_throttled(ada, settings) -> None:
    settings.KBPO_TOKEN_FAILURE_LIMIT = 3
    settings.KBPO_TOKEN_FAILURE_WINDOW = 10**9   # a fixed window no test run straddles
    token = Token.objects.create(user=ada)
    api = Client()

    def get(key: str, ip: str):
        return api.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}", REMOTE_ADDR=ip)

    assert [get(f"guess{i:035d}", "203.0.113.9").status_code for i in range(4)] == [
        401, 401, 401, 429]
    refused = get(token.key, "203.0.113.9")      # the address stays locked for the window
    assert refused.status_code == 429 and "Too many invalid API tokens" in refused.json()[
        "detail"]
    assert int(refused["Retry-After"]) > 0
    assert get(token.key, "203.0.113.10").status_code == 200


@pytest.mark.django_db
def test_api_request_rates_are_limited(ada, monkeypatch) -> None:
    # DRF binds the rates when it is imported; the settings' values are the defaults.
    monkeypatch.setattr(AnonRateThrottle, "rate", "3/min", raising=False)
    monkeypatch.setattr(UserRateThrottle, "rate", "4/min", raising=False)
    make_corpus("t")
    anon = Client()
    assert [anon.get("/api/leaderboard/t/").status_code for _ in range(4)] == [
        200, 200, 200, 429]
    token = Token.objects.create(user=ada)
    user = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert [user.get("/api/submissions/").status_code for _ in range(5)] == [
        200, 200, 200, 200, 429]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/accounts/register/",
                                  "/admin/login/", "/annotate/", "/leaderboard/t/",
                                  "/submissions/format/", "/no-such-page/"])
def test_every_page_sends_a_content_security_policy(client, path) -> None:
    make_corpus("t")
    response = client.get(path)
    assert response.status_code in (200, 404), path
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    assert "unsafe-inline" not in csp.split("style-src-attr")[0]   # no inline scripts


@pytest.mark.django_db
def test_api_docs_run_under_the_sites_own_policy(client) -> None:
    """Swagger UI comes from our static files and its start-up script from a URL: the
    page adds nothing to the policy and holds no inline script or style element."""
    page = client.get("/api/docs/")
    assert page["Content-Security-Policy"] == client.get("/")["Content-Security-Policy"]
    html = page.content.decode()
    assert "<style" not in html and "http" not in html.replace("http-equiv", "")
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert len(scripts) == 3 and all('src="/' in attrs and not body.strip()
                                     for attrs, body in scripts)
    start = client.get("/api/docs/?script=")
    assert start.status_code == 200 and "SwaggerUIBundle(" in start.content.decode()
    assert start["Content-Type"].startswith("application/javascript")


@pytest.mark.django_db
def test_built_once_policy_is_django_csps_and_follows_the_settings(client, settings) -> None:
    """kbpo.core.middleware.CSPMiddleware caches the settings' policy: the header is
    django-csp's own string, a changed setting is followed, a nonce or a per-view
    override still goes through django-csp."""
    from csp.utils import build_policy

    make_corpus("t")
    assert client.get("/leaderboard/t/")["Content-Security-Policy"] == build_policy()
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    assert client.get("/leaderboard/t/")["Content-Security-Policy"] == "default-src 'none'"
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {
        "DIRECTIVES": {"default-src": ["'self'"], "report-uri": "/csp"}}
    resp = client.get("/leaderboard/t/")
    assert resp["Content-Security-Policy-Report-Only"] == build_policy(report_only=True)
    assert "default-src 'self'" in resp["Content-Security-Policy-Report-Only"]


@pytest.mark.parametrize("cell,safe", [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("-0.25", "-0.25"), ("+3", "+3"), ("Alpha", "Alpha"), ("", ""),
    (-0.5, -0.5), (None, None)])
def test_csv_safe(cell, safe) -> None:
    assert csv_safe(cell) == safe


@pytest.mark.django_db
def test_csv_downloads_neutralise_formulas(client) -> None:
    corpus = make_corpus("t")
    owner = User.objects.create_user("@evil", "e@example.org", PASSWORD)
    sub = make_submission(corpus, [], name="-2+3+cmd|' /C calc'!A0", owner=owner)
    sub.report = [{"line": 3, "code": "BAD_PREDICATE", "severity": "error",
                   "message": "=HYPERLINK(\"http://x\")", "hint": "@SUM(A1)"}]
    sub.public = True
    sub.save()
    client.force_login(owner)
    tsv = client.get(f"/submissions/{sub.pk}/report.tsv").content.decode()
    cells = [c for row in csv.reader(io.StringIO(tsv), delimiter="\t") for c in row]
    assert "'=HYPERLINK(\"http://x\")" in cells and "'@SUM(A1)" in cells
    assert not any(c[:1] in "=+-@" and not c.lstrip("-+").replace(".", "").isdigit()
                   for c in cells)


def _settings_in(env: dict[str, str], expr: str) -> str:
    import os
    import subprocess
    import sys

    from tests import ROOT

    base = {k: v for k, v in os.environ.items()
            if k not in {"DEBUG", "SECRET_KEY", "KBPO_ENV", "CACHE_URL", "CELERY_BROKER_URL"}}
    code = ("import django; django.setup(); from django.conf import settings; "
            f"print({expr})")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120,
                         env={**base, "DJANGO_SETTINGS_MODULE": "kbpo.settings", **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_production_shares_its_cache_in_redis() -> None:
    key = "k" * 20 + "-production-secret-for-the-settings-test-only-0123456789"
    prod = {"KBPO_ENV": "production", "SECRET_KEY": key}
    show = "settings.CACHES['default']['BACKEND'], settings.CACHES['default'].get('LOCATION')"
    assert _settings_in({**prod, "CELERY_BROKER_URL": "redis://redis:6379/0"}, show) == \
        "django.core.cache.backends.redis.RedisCache redis://redis:6379/0"
    assert _settings_in({**prod, "CACHE_URL": "redis://cache:6379/2"}, show) == \
        "django.core.cache.backends.redis.RedisCache redis://cache:6379/2"
    assert _settings_in({}, show) == "django.core.cache.backends.locmem.LocMemCache None"


@pytest.mark.django_db
def test_limits_hold_across_processes_with_the_redis_cache(settings) -> None:
    """Two processes (as two gunicorn workers) count against one limit in Redis."""
    import os
    import uuid

    broker = os.environ.get("CELERY_BROKER_URL", "")
    if not broker.startswith("redis"):
        pytest.skip("no Redis configured (CELERY_BROKER_URL)")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": broker, "KEY_PREFIX": "kbpo"}}
    from kbpo.core import security

    key = f"test-{uuid.uuid4().hex}"
    other = _settings_in(
        {"CACHE_URL": broker},
        f"[__import__('kbpo.core.security').core.security.take('{key}', 3, 10**9).allowed "
        "for _ in range(2)]")
    assert other == "[True, True]"
    assert security.take(key, 3, 10**9).allowed is True
    assert security.take(key, 3, 10**9).allowed is False
