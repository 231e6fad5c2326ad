"""Production configuration refuses unsafe settings; check --deploy is clean."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.django_db
def test_healthz_answers_plain_http_from_any_host(client, settings) -> None:
    settings.ALLOWED_HOSTS = ["kbpo.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    resp = client.get("/healthz", HTTP_HOST="127.0.0.1:8000")
    assert resp.status_code == 200 and resp.json() == {"status": "ok"}
    assert client.get("/", HTTP_HOST="127.0.0.1:8000").status_code == 400
