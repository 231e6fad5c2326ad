"""The production stack end to end, without Docker: docker-compose.yml's own commands.

No Docker engine runs here, so this test runs on the host what `docker compose up` runs
in containers: the `migrate`, `web` (gunicorn), `worker` and `beat` commands and their
environment, read out of docker-compose.yml (production mode, DEBUG off, a real
SECRET_KEY), behind Caddy started from deploy/Caddyfile in its local mode (internal
CA), against the local Postgres (a database of its own) and Redis. It then checks what
a user and an operator rely on: HTTPS through the proxy (with a verified certificate)
and the redirect to it, HSTS over HTTPS only, secure cookies and a CSRF-protected login,
/healthz and the worker's health check, hashed static files, an MTurk task page that
MTurk may frame, a Celery task run by that worker, and a beat tick.

What differs from the containers, and why: the service host names (postgres, redis,
web) become local addresses (the cache shares the test's Redis database), ports are
free ones, the beat schedule file and media go to a temporary folder, and everything
else comes from the compose file.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import sys
import uuid
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg2
import pytest
import redis
from celery import Celery

from tests import ROOT
from tests.deploy import compose, require_caddy
from tests.deploy.stack import Processes, free_port, request

pytestmark = pytest.mark.stack

VENV_BIN = Path(sys.executable).parent
# Run by `manage.py shell` in the stack's environment: an MTurk HIT whose task page the
# test opens, and a submission stuck in `uploaded` that only beat's re-drive moves on.
SEED = """
import json
from annotations.models import Backend
from submissions.models import State
from tests.annotations.interfaces.builders import relation_hit
from tests.factories import make_submission, make_user
hit = relation_hit(backend=Backend.MTURK, external_id="HIT-STACK-1")
stuck = make_submission(hit.corpus, [], owner=make_user("stack-owner"), name="stuck",
                        state=State.UPLOADED)
print("SEED " + json.dumps({"hit": hit.url_key, "submission": stuck.pk}))
"""
# The queue the app (as the web service configures it) sends a score recomputation to.
ROUTE = """
import os
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
django.setup()
from estimation.scoring import RECOMPUTE_TASK
from kbpo.celery import app
print(app.amqp.router.route({}, RECOMPUTE_TASK)["queue"].name)
"""


def _own_database(url: str) -> tuple[str, str]:
    """A fresh database beside the one DATABASE_URL names: (its URL, its name)."""
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'kbpo'}_stack_{uuid.uuid4().hex[:8]}"
    return urlunsplit(parts._replace(path="/" + name)), name


def _admin_connection(url: str):
    parts = urlsplit(url)
    conn = psycopg2.connect(host=parts.hostname or "127.0.0.1", port=parts.port or 5432,
                            user=parts.username or "postgres", password=parts.password,
                            dbname="postgres", connect_timeout=10)
    conn.autocommit = True
    return conn


def _ppid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^PPid:\s+(\d+)", status, re.M).group(1))


def _healthcheck_command(service: dict, replace: tuple[str, str] | None = None) -> list[str]:
    """A service's compose health check as a command line (CMD or CMD-SHELL form)."""
    kind, *args = service["healthcheck"]["test"]
    if replace:
        assert any(replace[0] in a for a in args), (replace, args)
        args = [a.replace(*replace) for a in args]
    return ["sh", "-c", args[0]] if kind == "CMD-SHELL" else args


def test_the_compose_stack_serves_https_runs_tasks_and_ticks(tmp_path: Path) -> None:
    caddy_bin = require_caddy()
    db_url = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if not db_url.startswith("postgres") or not broker.startswith("redis"):
        pytest.skip("the stack needs Postgres and Redis (DATABASE_URL, CELERY_BROKER_URL)")
    ports = set()
    while len(ports) < 4:
        ports.add(free_port())
    http_port, https_port, web_port, admin_port = sorted(ports)
    queue = f"kbpo-stack-{uuid.uuid4().hex[:10]}"
    # What an operator's .env holds, for this test.
    dotenv = {
        "SECRET_KEY": secrets.token_urlsafe(64),
        "KBPO_HOSTNAME": "localhost",
        "KBPO_TLS": "internal",
        "KBPO_HTTP_PORT": str(http_port),
        "KBPO_HTTPS_PORT": str(https_port),
        # localhost gets no HSTS by default; ask for it, to see it sent over HTTPS only.
        "SECURE_HSTS_SECONDS": "600",
        # A beat entry due every second; its task fails a submission stuck in
        # `uploaded` at once (no re-queue allowed), which nothing else would do.
        "KBPO_SUBMISSION_REDRIVE_INTERVAL": "1",
        "KBPO_SUBMISSION_REDRIVE_AFTER": "0",
        "KBPO_SUBMISSION_MAX_ATTEMPTS": "0",
        # This run's worker, scorer and beat only, whatever else shares the broker.
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "KBPO_SCORING_QUEUE": f"{queue}-scoring",
        "KBPO_INGEST_QUEUE": f"{queue}-ingest",
        "STATIC_ROOT": str(tmp_path / "static"),
    }
    services = compose.load(dotenv)["services"]
    stack_db_url, stack_db = _own_database(db_url)
    base = {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8",
            "HOSTNAME": socket.gethostname(),  # Docker sets it; the worker health check uses it
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",  # as the Dockerfile
            # In the stack gunicorn sees Caddy at another container's address, outside its
            # default forwarded-allow-ips (127.0.0.1), so Django alone decides from
            # X-Forwarded-Proto (KBPO_BEHIND_PROXY). Here Caddy connects from 127.0.0.1:
            # keep gunicorn out of it the same way.
            "FORWARDED_ALLOW_IPS": "192.0.2.1"}

    def app_env(name: str) -> dict[str, str]:
        declared = compose.environment(services[name])
        assert services[name]["env_file"] == ".env"
        assert urlsplit(declared["DATABASE_URL"]).hostname == "postgres"
        assert urlsplit(declared["CELERY_BROKER_URL"]).hostname == "redis"
        assert urlsplit(declared["CACHE_URL"]).hostname == "redis"
        # The shared cache (rate limits, login sessions) in this run's own Redis database.
        return {**base, **dotenv, **declared, "DATABASE_URL": stack_db_url,
                "CELERY_BROKER_URL": broker, "CACHE_URL": broker,
                "MEDIA_ROOT": str(tmp_path / "media")}

    def on_path(cmd: list[str], env: dict[str, str]) -> list[str]:
        # `nice -n N program …` (the scorer): the system's nice runs the project's program.
        program = cmd[3:] if cmd[:2] == ["nice", "-n"] else cmd
        assert program is cmd or shutil.which("nice", path=env["PATH"]), "no nice on PATH"
        exe = shutil.which(program[0], path=env["PATH"])
        assert exe and Path(exe).parent == VENV_BIN, f"{program[0]} is not the project's: {exe}"
        return cmd

    commands = {name: compose.command(services[name]) for name in
                ("migrate", "web", "worker", "ingester", "scorer", "beat", "caddy")}
    web_cmd = compose.replace_option(commands["web"], "--bind", f"127.0.0.1:{web_port}")
    beat_cmd = compose.replace_option(commands["beat"], "--schedule",
                                      str(tmp_path / "celerybeat-schedule"))
    caddy_cmd = compose.replace_option(
        [caddy_bin, *commands["caddy"][1:]], "--config",
        str(compose.bind_mount_source(services["caddy"], compose.option(commands["caddy"],
                                                                        "--config"))))
    upstream = compose.environment(services["caddy"])["KBPO_UPSTREAM"]
    assert upstream == "web:" + compose.option(commands["web"], "--bind").rsplit(":", 1)[1]
    caddy_home = tmp_path / "caddy"
    caddy_env = {"PATH": base["PATH"], "HOME": str(caddy_home),
                 "XDG_DATA_HOME": str(caddy_home / "data"),  # the image's /data volume
                 "XDG_CONFIG_HOME": str(caddy_home / "config"),
                 **compose.environment(services["caddy"]),
                 "KBPO_UPSTREAM": f"127.0.0.1:{web_port}",
                 "KBPO_CADDY_ADMIN": f"127.0.0.1:{admin_port}"}
    root_ca = caddy_home / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"

    logdir = ROOT / "test-artifacts" / "stack"
    logdir.mkdir(parents=True, exist_ok=True)
    procs = Processes(logdir)
    # Not the current app: the rest of the session keeps sending through kbpo's own.
    client = Celery("stack-test", broker=broker, backend=broker, set_as_current=False)
    admin = _admin_connection(db_url)
    admin.cursor().execute(f'CREATE DATABASE "{stack_db}"')
    try:
        env = app_env("web")
        # The image collects static files at build time (Dockerfile), in production mode.
        procs.run("collectstatic", on_path(["python", "manage.py", "collectstatic",
                                            "--noinput"], env), env)
        procs.run("migrate", on_path(commands["migrate"], app_env("migrate")),
                  app_env("migrate"))
        # The operator's first steps (docs/operators/deployment.md), then this test's data.
        procs.run("createsuperuser", ["python", "manage.py", "createsuperuser", "--noinput",
                                      "--username", "ops", "--email", "ops@example.org"],
                  {**env, "DJANGO_SUPERUSER_PASSWORD": "stack-test-Passw0rd!"})
        seed_out = procs.run("seed", ["python", "manage.py", "shell", "-c", SEED], env)
        seed = json.loads(seed_out.split("SEED ", 1)[1].splitlines()[0])

        worker = procs.start("worker", on_path(commands["worker"], app_env("worker")),
                             app_env("worker"))
        scorer = procs.start("scorer", on_path(commands["scorer"], app_env("scorer")),
                             app_env("scorer"))
        ingester = procs.start("ingester", on_path(commands["ingester"],
                                                   app_env("ingester")), app_env("ingester"))
        procs.start("beat", on_path(beat_cmd, app_env("beat")), app_env("beat"))
        procs.start("web", on_path(web_cmd, env), env)
        procs.start("caddy", caddy_cmd, caddy_env)

        # Health checks: the compose file's own, for web (plain HTTP to 127.0.0.1, a host
        # name ALLOWED_HOSTS does not list) and for the worker (celery inspect ping).
        web_probe = _healthcheck_command(services["web"], ("127.0.0.1:8000",
                                                            f"127.0.0.1:{web_port}"))
        procs.wait_for("the web health check",
                       lambda: procs.succeeds("web-healthcheck", web_probe, env) is not None)

        def https(path: str, **kw: object):
            return request("https", "localhost", https_port, path, cafile=root_ca, **kw)

        def healthz_over_https():
            reply = https("/healthz") if root_ca.exists() else None
            return reply if reply and reply.status == 200 else None

        health = procs.wait_for("HTTPS through Caddy", healthz_over_https)
        assert json.loads(health.body) == {"status": "ok"}

        # Plain HTTP is redirected to the same URL over HTTPS, port included, no HSTS.
        plain = request("http", "localhost", http_port, "/accounts/login/?next=/annotate/")
        assert plain.status == 308
        assert plain.headers["Location"] == (
            f"https://localhost:{https_port}/accounts/login/?next=/annotate/")
        assert "Strict-Transport-Security" not in plain.headers

        # Pages over HTTPS: Django sees HTTPS (HSTS, no redirect loop), refuses framing.
        home = https("/")
        assert home.status == 200, home.text[:2000]
        assert home.headers["Strict-Transport-Security"] == (
            "max-age=600; includeSubDomains; preload")
        assert home.headers["X-Frame-Options"] == "DENY"

        # Log in through the proxy: secure cookies, CSRF check passes over HTTPS.
        login = https("/accounts/login/")
        assert login.status == 200
        csrf_cookie = login.cookies()["csrftoken"]
        assert "Secure" in csrf_cookie
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        origin = f"https://localhost:{https_port}"
        posted = https("/accounts/login/", method="POST", body=urlencode(
            {"csrfmiddlewaretoken": token, "username": "ops",
             "password": "stack-test-Passw0rd!"}).encode(), headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": csrf_cookie.split(";", 1)[0], "Origin": origin,
            "Referer": origin + "/accounts/login/"})
        assert posted.status == 302, posted.text[:2000]
        session = posted.cookies()["sessionid"]
        assert "Secure" in session and "HttpOnly" in session
        admin_page = https("/admin/", headers={"Cookie": session.split(";", 1)[0]})
        assert admin_page.status == 200 and "Site administration" in admin_page.text

        # The MTurk task page over HTTPS: MTurk may frame it; its hashed script is served.
        task = https(f"/annotate/hit/{seed['hit']}/?" + urlencode(
            {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "HIT-STACK-1"}))
        assert task.status == 200, task.text[:2000]
        assert "X-Frame-Options" not in task.headers
        assert ("frame-ancestors 'self' https://www.mturk.com https://workersandbox.mturk.com"
                in task.headers["Content-Security-Policy"])
        script = re.search(r'src="(/static/js/annotate-relation\.[0-9a-f]{12}\.js)"', task.text)
        assert script, "the task page should load its script under a hashed name"
        static = https(script.group(1))
        assert static.status == 200 and b"function" in static.body
        assert "immutable" in static.headers["Cache-Control"]

        # A task sent to the broker is run by the worker started above (a pool child).
        ping_token = uuid.uuid4().hex
        result = client.send_task("kbpo.ping", args=[ping_token], queue=queue).get(timeout=90)
        assert result["token"] == ping_token
        assert _ppid(result["pid"]) == worker.pid
        worker_probe = _healthcheck_command(services["worker"])
        procs.wait_for("the worker health check",
                       lambda: "pong" in (procs.succeeds("worker-healthcheck", worker_probe,
                                                         app_env("worker")) or ""))
        # The scoring queue is the scorer's alone (one pool child), and the app routes
        # recomputations there: a few sends, each must be run by the scorer.
        scoring = f"{queue}-scoring"
        for _ in range(3):
            ping_token = uuid.uuid4().hex
            result = client.send_task("kbpo.ping", args=[ping_token],
                                      queue=scoring).get(timeout=90)
            assert result["token"] == ping_token
            assert _ppid(result["pid"]) == scorer.pid
        routed = procs.run("route", ["python", "-c", ROUTE], app_env("web"))
        assert routed.strip().splitlines()[-1] == scoring
        # Likewise the ingest queue is the ingester's.
        ingest = f"{queue}-ingest"
        ping_token = uuid.uuid4().hex
        result = client.send_task("kbpo.ping", args=[ping_token], queue=ingest).get(timeout=90)
        assert result["token"] == ping_token
        assert _ppid(result["pid"]) == ingester.pid
        ingester_probe = _healthcheck_command(services["ingester"])
        procs.wait_for("the ingester health check",
                       lambda: "pong" in (procs.succeeds("ingester-healthcheck",
                                                         ingester_probe,
                                                         app_env("ingester")) or ""))
        scorer_probe = _healthcheck_command(services["scorer"])
        procs.wait_for("the scorer health check",
                       lambda: "pong" in (procs.succeeds("scorer-healthcheck", scorer_probe,
                                                         app_env("scorer")) or ""))

        # A beat tick: beat sends the re-drive, the worker runs it, the database shows it.
        def stuck_state() -> str | None:
            with psycopg2.connect(stack_db_url) as conn, conn.cursor() as cur:
                cur.execute("SELECT state FROM submissions_submission WHERE id = %s",
                            [seed["submission"]])
                state = cur.fetchone()[0]
            conn.close()
            return state if state != "uploaded" else None

        assert procs.wait_for("beat's re-drive of the stuck submission", stuck_state) == "failed"
        assert "Sending due task submissions-redrive-stuck" in procs.log("beat").read_text()
        procs.check_alive()
    finally:
        try:
            procs.stop_all()
        finally:
            client.close()
            admin.cursor().execute(f'DROP DATABASE IF EXISTS "{stack_db}" WITH (FORCE)')
            admin.close()
            # The run's queue and its bindings (task results expire on their own).
            with redis.Redis.from_url(broker) as r:
                for q in (queue, f"{queue}-scoring", f"{queue}-ingest"):
                    r.delete(q, f"_kombu.binding.{q}", f"_kombu.binding_permanent.{q}")

