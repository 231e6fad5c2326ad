"""Production configuration refuses unsafe settings; check --deploy is clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests import ROOT

GOOD_KEY = "k" * 20 + "-production-secret-for-the-settings-test-only-0123456789"


def run_check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if k not in {"DEBUG", "SECRET_KEY", "KBPO_ENV", "DJANGO_SETTINGS_MODULE"}}
    return subprocess.run([sys.executable, "manage.py", "check", *args], cwd=ROOT,
                          env={**base, **env}, capture_output=True, text=True, timeout=120)


def test_production_refuses_default_secret_key() -> None:
    r = run_check({"KBPO_ENV": "production", "DEBUG": "0"})
    assert r.returncode != 0 and "SECRET_KEY" in r.stderr


def test_production_refuses_debug() -> None:
    r = run_check({"KBPO_ENV": "production", "DEBUG": "1", "SECRET_KEY": GOOD_KEY})
    assert r.returncode != 0 and "DEBUG" in r.stderr


def test_production_check_deploy_is_clean() -> None:
    r = run_check({"KBPO_ENV": "production", "SECRET_KEY": GOOD_KEY,
                   "ALLOWED_HOSTS": "kbpo.example.org"}, "--deploy", "--fail-level", "WARNING")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout


def test_bad_crowd_backend_is_refused() -> None:
    r = run_check({"KBPO_CROWD_BACKEND": "mechanical"})
    assert r.returncode != 0 and "KBPO_CROWD_BACKEND" in r.stderr


def test_unknown_label_aggregation_is_refused() -> None:
    r = run_check({"KBPO_LABEL_AGGREGATION": "dawid_skene"})
    assert r.returncode != 0 and "KBPO_LABEL_AGGREGATION must be lopsided" in r.stderr


@pytest.mark.django_db
def test_healthz_answers_plain_http_from_any_host(client, settings) -> None:
    settings.ALLOWED_HOSTS = ["kbpo.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    resp = client.get("/healthz", HTTP_HOST="127.0.0.1:8000")
    assert resp.status_code == 200 and resp.json() == {"status": "ok"}
    assert client.get("/", HTTP_HOST="127.0.0.1:8000").status_code == 400


# --- Behind the TLS proxy (KBPO_HOSTNAME, KBPO_BEHIND_PROXY; docs/operators/deployment.md) -------

PROXY_KEYS = ["ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "KBPO_PUBLIC_URL", "SECURE_HSTS_SECONDS",
              "SECURE_PROXY_SSL_HEADER"]


def settings_under(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Import the settings module in a fresh interpreter under `env` (on top of a clean
    base) and print the proxy-related values as JSON."""
    base = {k: v for k, v in os.environ.items()
            if k not in {"DEBUG", "SECRET_KEY", "KBPO_ENV", "DJANGO_SETTINGS_MODULE",
                         "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "KBPO_PUBLIC_URL",
                         "KBPO_HOSTNAME", "KBPO_HTTPS_PORT", "KBPO_BEHIND_PROXY",
                         "SECURE_HSTS_SECONDS"}}
    code = ("import json\nfrom kbpo import settings as s\n"
            f"print(json.dumps({{k: getattr(s, k, None) for k in {PROXY_KEYS!r}}}))")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def proxy_settings(env: dict[str, str]) -> dict:
    r = settings_under(env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


PROD = {"KBPO_ENV": "production", "SECRET_KEY": GOOD_KEY}


def test_the_public_site_follows_kbpo_hostname() -> None:
    assert proxy_settings({**PROD, "KBPO_HOSTNAME": "KBPO.example.org"}) == {
        "ALLOWED_HOSTS": ["kbpo.example.org"],
        "CSRF_TRUSTED_ORIGINS": ["https://kbpo.example.org"],
        "KBPO_PUBLIC_URL": "https://kbpo.example.org",
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_PROXY_SSL_HEADER": None}


def test_local_mode_names_its_port_and_sends_no_hsts() -> None:
    # Empty values, as a copied env.example leaves them, count as unset.
    got = proxy_settings({**PROD, "KBPO_HOSTNAME": "localhost", "KBPO_HTTPS_PORT": "8443",
                          "ALLOWED_HOSTS": "", "CSRF_TRUSTED_ORIGINS": "",
                          "KBPO_PUBLIC_URL": ""})
    assert got["ALLOWED_HOSTS"] == ["localhost"]
    assert got["CSRF_TRUSTED_ORIGINS"] == ["https://localhost:8443"]
    assert got["KBPO_PUBLIC_URL"] == "https://localhost:8443"
    # HSTS would pin every http://localhost:<port> of the operator's browser for a year.
    assert got["SECURE_HSTS_SECONDS"] == 0
    got = proxy_settings({**PROD, "KBPO_HOSTNAME": "localhost", "SECURE_HSTS_SECONDS": "60"})
    assert got["SECURE_HSTS_SECONDS"] == 60


def test_explicit_values_win_over_kbpo_hostname() -> None:
    got = proxy_settings({**PROD, "KBPO_HOSTNAME": "kbpo.example.org",
                          "ALLOWED_HOSTS": "kbpo.example.org,www.kbpo.example.org",
                          "CSRF_TRUSTED_ORIGINS": "https://www.kbpo.example.org",
                          "KBPO_PUBLIC_URL": "https://tasks.example.org"})
    assert got["ALLOWED_HOSTS"] == ["kbpo.example.org", "www.kbpo.example.org"]
    assert got["CSRF_TRUSTED_ORIGINS"] == ["https://www.kbpo.example.org"]
    assert got["KBPO_PUBLIC_URL"] == "https://tasks.example.org"


def test_without_kbpo_hostname_nothing_changes() -> None:
    assert proxy_settings({}) == {
        "ALLOWED_HOSTS": ["localhost", "127.0.0.1", "[::1]", "testserver"],
        "CSRF_TRUSTED_ORIGINS": [], "KBPO_PUBLIC_URL": "http://localhost:8000",
        "SECURE_HSTS_SECONDS": None,  # development: Django's default, no HSTS
        "SECURE_PROXY_SSL_HEADER": None}


def test_the_forwarded_scheme_is_trusted_only_behind_the_proxy() -> None:
    assert proxy_settings({**PROD, "KBPO_BEHIND_PROXY": "1"})["SECURE_PROXY_SSL_HEADER"] == [
        "HTTP_X_FORWARDED_PROTO", "https"]
    assert proxy_settings({**PROD, "KBPO_BEHIND_PROXY": "0"})["SECURE_PROXY_SSL_HEADER"] is None


@pytest.mark.parametrize("bad", ["https://kbpo.example.org", "kbpo.example.org:443",
                                 "kbpo.example.org/app", "kbpo example.org"])
def test_a_malformed_hostname_is_refused(bad: str) -> None:
    r = settings_under({**PROD, "KBPO_HOSTNAME": bad})
    assert r.returncode != 0
    assert "KBPO_HOSTNAME must be a bare host name" in r.stderr and repr(bad) in r.stderr


def test_the_compose_configuration_passes_check_deploy() -> None:
    r = run_check({**PROD, "KBPO_HOSTNAME": "kbpo.example.org", "KBPO_BEHIND_PROXY": "1"},
                  "--deploy", "--fail-level", "WARNING")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.django_db
def test_a_forged_forwarded_scheme_is_ignored_without_the_proxy(client, settings) -> None:
    """A client talking to gunicorn directly cannot claim HTTPS; through the proxy
    (SECURE_PROXY_SSL_HEADER set, as KBPO_BEHIND_PROXY=1 does) the header counts."""
    settings.ALLOWED_HOSTS = ["kbpo.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 600
    direct = client.get("/", HTTP_HOST="kbpo.example.org", HTTP_X_FORWARDED_PROTO="https")
    assert direct.status_code == 301 and direct["Location"] == "https://kbpo.example.org/"
    assert "Strict-Transport-Security" not in direct
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = client.get("/", HTTP_HOST="kbpo.example.org", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"].startswith("max-age=600")
