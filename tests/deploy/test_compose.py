"""docker-compose.yml and deploy/Caddyfile, read without Docker: what the stack declares."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests import ROOT
from tests.deploy import compose, require_caddy

DOTENV = {"SECRET_KEY": "s" * 64, "KBPO_HOSTNAME": "kbpo.example.org",
          "KBPO_TLS": "ops@example.org"}
APP_SERVICES = ("migrate", "web", "worker", "ingester", "scorer", "beat")


def test_interpolation_follows_compose() -> None:
    env = {"SET": "x", "EMPTY": ""}
    assert compose.interpolate("${SET:-d}|${EMPTY:-d}|${UNSET:-d}", env) == "x|d|d"
    assert compose.interpolate("${EMPTY-d}|${UNSET-d}|$${SET}", env) == "|d|${SET}"
    assert compose.interpolate("${SET:?need it}", env) == "x"
    with pytest.raises(compose.ComposeError, match=r"EMPTY.*need it"):
        compose.interpolate("${EMPTY:?need it}", env)
    assert compose.interpolate("${EMPTY?need it}", env) == ""


def test_the_stack_has_a_proxy_in_front_of_the_app() -> None:
    services = compose.load(DOTENV)["services"]
    assert set(services) == {"postgres", "redis", *APP_SERVICES, "caddy"}
    # The proxy is the only way in: nothing else publishes a port.
    assert [name for name, s in services.items() if s.get("ports")] == ["caddy"]
    assert services["caddy"]["ports"] == ["80:80", "443:443", "443:443/udp"]
    assert services["caddy"]["image"] == "caddy:2"
    assert services["caddy"]["depends_on"]["web"]["condition"] == "service_healthy"
    assert "caddy_data:/data" in services["caddy"]["volumes"]


def test_ports_follow_the_environment() -> None:
    caddy = compose.load({**DOTENV, "KBPO_HTTP_PORT": "8080",
                          "KBPO_HTTPS_PORT": "8443"})["services"]["caddy"]
    assert caddy["ports"] == ["8080:8080", "8443:8443", "8443:8443/udp"]
    env = compose.environment(caddy)
    assert (env["KBPO_HTTP_PORT"], env["KBPO_HTTPS_PORT"]) == ("8080", "8443")


@pytest.mark.parametrize("missing", ["SECRET_KEY", "KBPO_HOSTNAME", "KBPO_TLS"])
def test_required_settings_are_refused_when_missing(missing: str) -> None:
    with pytest.raises(compose.ComposeError, match=missing):
        compose.load({k: v for k, v in DOTENV.items() if k != missing})


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_run_in_production_behind_the_proxy(name: str) -> None:
    service = compose.load(DOTENV)["services"][name]
    env = compose.environment(service)
    assert service["env_file"] == ".env"  # every documented setting reaches the app
    assert env["KBPO_ENV"] == "production" and env["DEBUG"] == "0"
    assert env["KBPO_BEHIND_PROXY"] == "1"
    assert env["SECRET_KEY"] == DOTENV["SECRET_KEY"]
    assert env["KBPO_HOSTNAME"] == "kbpo.example.org" and env["KBPO_HTTPS_PORT"] == "443"
    assert env["DATABASE_URL"].startswith("postgres://kbpo:") and "@postgres:5432/" in env[
        "DATABASE_URL"]
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"


def test_the_scorer_alone_consumes_the_scoring_queue() -> None:
    """Every app service routes recomputations to one queue (KBPO_SCORING_QUEUE, from
    .env or `scoring`); the scorer consumes that queue alone, in one process; the worker
    consumes the default queue alone, named so it can never pick up another."""
    for dotenv, scoring, default in ((DOTENV, "scoring", "celery"),
                                     ({**DOTENV, "KBPO_SCORING_QUEUE": "s2",
                                       "CELERY_TASK_DEFAULT_QUEUE": "d2"}, "s2", "d2")):
        services = compose.load(dotenv)["services"]
        for name in APP_SERVICES:
            assert compose.environment(services[name])["KBPO_SCORING_QUEUE"] == scoring
        scorer, worker = (compose.command(services[n]) for n in ("scorer", "worker"))
        # At a lower priority than the web: a recomputation yields the cores to pages.
        assert scorer[:3] == ["nice", "-n", "10"]
        assert scorer[3:7] == ["celery", "-A", "kbpo", "worker"]
        assert compose.option(scorer, "-Q") == scoring
        assert compose.option(scorer, "--concurrency") == "1"
        assert compose.option(worker, "-Q") == default
        assert "scorer@" in " ".join(services["scorer"]["healthcheck"]["test"])


def test_the_ingester_alone_consumes_the_ingest_queue() -> None:
    """Ingestions go to their own queue (KBPO_INGEST_QUEUE, from .env or `ingest`),
    consumed by the ingester alone: hostile uploads never starve the default queue."""
    for dotenv, ingest in ((DOTENV, "ingest"), ({**DOTENV, "KBPO_INGEST_QUEUE": "i2"}, "i2")):
        services = compose.load(dotenv)["services"]
        for name in APP_SERVICES:
            assert compose.environment(services[name])["KBPO_INGEST_QUEUE"] == ingest
        ingester = compose.command(services["ingester"])
        assert ingester[:4] == ["celery", "-A", "kbpo", "worker"]
        assert compose.option(ingester, "-Q") == ingest
        assert compose.option(compose.command(services["worker"]), "-Q") != ingest
        assert compose.option(compose.command(services["scorer"]), "-Q") != ingest
        assert "ingester@" in " ".join(services["ingester"]["healthcheck"]["test"])


def test_caddy_proxies_to_the_web_command_and_mounts_the_repo_caddyfile() -> None:
    services = compose.load(DOTENV)["services"]
    web, caddy = services["web"], services["caddy"]
    bind = compose.option(compose.command(web), "--bind")
    assert bind == "0.0.0.0:8000" and web["expose"] == ["8000"]
    assert compose.environment(caddy)["KBPO_UPSTREAM"] == "web:" + bind.rsplit(":", 1)[1]
    config = compose.option(compose.command(caddy), "--config")
    assert compose.bind_mount_source(caddy, config) == compose.CADDYFILE
    assert "healthz" in " ".join(web["healthcheck"]["test"])


def test_the_image_default_command_is_the_web_command() -> None:
    """`docker run kbpo` serves exactly as the compose web service does."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert cmd is not None
    web = compose.load(DOTENV)["services"]["web"]
    assert json.loads(cmd.group(1)) == compose.command(web)


def test_the_image_runs_one_openblas_thread_per_process() -> None:
    """Every service runs several processes, or shares the cores with them: OpenBLAS's
    own threads would only spin beside the scorer's sparse sums (docs/internals/deployment.md)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    env = re.search(r"^ENV ((?:.*\\\n)*.*)$", dockerfile, re.M)
    assert env is not None
    pairs = dict(p.split("=", 1) for p in env.group(1).replace("\\\n", " ").split())
    assert pairs.get("OPENBLAS_NUM_THREADS") == "1"


def adapt(**env: str) -> dict:
    caddy = require_caddy()
    proc = subprocess.run([caddy, "adapt", "--config", str(compose.CADDYFILE),
                           "--adapter", "caddyfile"], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", ""), **env}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_caddyfile_with_automatic_certificates() -> None:
    config = adapt(KBPO_HOSTNAME="kbpo.example.org", KBPO_TLS="ops@example.org")
    server = config["apps"]["http"]["servers"]["srv0"]
    assert server["listen"] == [":443"] and config["apps"]["http"]["http_port"] == 80
    assert server["routes"][0]["match"] == [{"host": ["kbpo.example.org"]}]
    handlers = json.dumps(server["routes"][0]["handle"])
    assert '"handler": "reverse_proxy", "upstreams": [{"dial": "web:8000"}]' in handlers
    (policy,) = config["apps"]["tls"]["automation"]["policies"]
    assert policy["subjects"] == ["kbpo.example.org"]
    assert {i["module"] for i in policy["issuers"]} == {"acme", "zerossl"}
    assert {i["email"] for i in policy["issuers"]} == {"ops@example.org"}
    assert config["admin"]["listen"] == "localhost:2019"


def test_caddyfile_local_mode_uses_the_internal_ca_on_other_ports() -> None:
    config = adapt(KBPO_HOSTNAME="localhost", KBPO_TLS="internal", KBPO_HTTP_PORT="8080",
                   KBPO_HTTPS_PORT="8443", KBPO_UPSTREAM="127.0.0.1:9000",
                   KBPO_CADDY_ADMIN="off")
    http = config["apps"]["http"]
    assert http["http_port"] == 8080 and http["servers"]["srv0"]["listen"] == [":8443"]
    assert "127.0.0.1:9000" in json.dumps(http["servers"]["srv0"]["routes"])
    (policy,) = config["apps"]["tls"]["automation"]["policies"]
    assert policy["issuers"] == [{"module": "internal"}]
    # The local CA is never installed into the trust store of the machine Caddy runs on.
    assert config["apps"]["pki"]["certificate_authorities"]["local"]["install_trust"] is False
    assert config["admin"]["disabled"] is True



def env_example() -> dict[str, str]:
    """docs/env.example's active lines as Compose reads them."""
    lines = (ROOT / "docs" / "env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_env_example_holds_every_required_variable() -> None:
    example = env_example()
    with pytest.raises(compose.ComposeError, match="SECRET_KEY"):
        compose.load(example)  # left empty on purpose: the operator must generate one
    services = compose.load({**example, "SECRET_KEY": "s" * 64})["services"]
    assert compose.environment(services["caddy"])["KBPO_TLS"] == "ops@example.org"


def test_every_deployment_variable_is_documented() -> None:
    # docs/reference/settings.md lists every setting.
    documented = "".join((ROOT / "docs" / page).read_text()
                         for page in ("reference/settings.md",))
    names = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / "docs" / "env.example")
                           .read_text(), re.M))
    caddy_config = "".join(line for line in compose.CADDYFILE.read_text().splitlines(True)
                           if not line.lstrip().startswith("#"))
    names |= set(re.findall(r"\{\$([A-Z][A-Z0-9_]+)", caddy_config))
    names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]+)", compose.COMPOSE_FILE.read_text()))
    assert {"SECRET_KEY", "KBPO_TLS", "KBPO_CADDY_ADMIN", "POSTGRES_PASSWORD"} <= names
    assert [n for n in sorted(names) if f"`{n}`" not in documented] == []


def test_the_image_compiles_the_estimators_loops_at_build_time(tmp_path) -> None:
    """The Dockerfile's build step compiles the estimators' loops ahead of time (with a C
    compiler it installs and removes in the same step), as make does: run here, it
    builds a module that records the source it was built from."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    step = re.search(r"^RUN (.*?)(?=^\S|\Z)", dockerfile[dockerfile.index("COPY . ."):],
                     re.M | re.S)
    assert step is not None
    commands = [c.strip(" \\\n") for c in step.group(1).split("&&")]
    build = commands.index("python -m estimation.core.build_kernels")
    assert any("apt-get install" in c and "gcc" in c for c in commands[:build])
    assert any("apt-get purge" in c and "gcc" in c for c in commands[build:])
    proc = subprocess.run([sys.executable, "-m", "estimation.core.build_kernels", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    built = list(tmp_path.glob("_kernels_aot.*"))
    assert len(built) == 1
    check = ("import sys; sys.path.insert(0, sys.argv[1]); import _kernels_aot; "
             "from estimation.core.build_kernels import source_digest; "
             "assert _kernels_aot.digest() == source_digest()")
    proc = subprocess.run([sys.executable, "-c", check, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
