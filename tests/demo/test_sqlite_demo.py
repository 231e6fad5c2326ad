"""`make demo` runs on SQLite with Celery eager, not on the suite's Postgres: run a small
demo that way in a subprocess and open every page a newcomer is sent to.

Postgres-only SQL in a request path (json_agg, = ANY, COPY) passes every other test and
breaks the README's first command; this is the test that sees it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from kbpo.demo.world import generate as demo_world

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
django.setup()
from django.test import Client
from submissions.models import Submission

out = {}
subs = list(Submission.objects.filter(corpus__tag="demo").order_by("pk"))
a, b = subs[0].pk, subs[1].pk
anon = Client(HTTP_HOST="127.0.0.1")
pages = ["/", "/leaderboard/", "/leaderboard/demo/", "/leaderboard/demo/?sort=precision",
         "/leaderboard/demo/leaderboard.csv", "/api/leaderboard/demo/",
         f"/leaderboard/demo/compare/?a={a}&b={b}", f"/api/compare/demo/?a={a}&b={b}",
         f"/submissions/{a}/report/", f"/submissions/{a}/report/progress.json",
         f"/submissions/{a}/report/predicates.csv", f"/api/submissions/{a}/scores/",
         "/annotate/try/relation/"]
for url in pages:
    out["anon " + url] = anon.get(url).status_code
from django.contrib.auth import get_user_model
admin = Client(HTTP_HOST="127.0.0.1")
operator = get_user_model().objects.get(username="admin")
assert operator.check_password("kbpo-demo-password")
admin.force_login(operator)  # django-axes wants a request for login(): the form's job
for url in ["/leaderboard/demo/", f"/submissions/{a}/report/", "/operator/", "/admin/",
            "/exhaustive/demo/"]:
    out["admin " + url] = admin.get(url).status_code
body = anon.get("/leaderboard/demo/leaderboard.csv").content.decode()
out["csv rows"] = body.count("\n") - 1
print("PROBE " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sqlite_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """`manage.py demo` run once, small, on its own SQLite file (as `make demo` runs it)."""
    tmp_path = tmp_path_factory.mktemp("sqlite-demo")
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE",
                        "KBPO_PUBLIC_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    # Small, with two correction replicates (the fewest that run that path on SQLite).
    env["KBPO_SOFT_LABEL_BOOTSTRAP"] = "2"
    # The demo's systems are sampled for a ±0.1 interval, not ±0.05: 68 draws each instead
    # of 271, and its eager crowd answers in ~9 s instead of ~40 s. The pages, the crowd
    # and the scoring run the same code at either size. Later commands (serve_demo,
    # submit) plan at the default: an upload's few ±0.1 HITs could be answered and
    # scored by the live crowd before the test sees it `annotating`.
    demo = subprocess.run(
        [sys.executable, "manage.py", "demo", "--docs", "25", "--systems", "2",
         "--out", str(tmp_path / "demo")],
        cwd=ROOT, env={**env, "KBPO_TARGET_HALFWIDTH": "0.1"}, capture_output=True,
        text=True, timeout=900)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "The demo is ready." in demo.stdout
    assert "MISSED is expected now and then" in demo.stdout
    return tmp_path, env


@pytest.mark.slow
def test_make_demo_site_works_on_sqlite(sqlite_demo: tuple[Path, dict[str, str]]) -> None:
    _, env = sqlite_demo

    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    line = next(x for x in probe.stdout.splitlines() if x.startswith("PROBE "))
    got = json.loads(line[len("PROBE "):])
    broken = {url: code for url, code in got.items() if url != "csv rows" and code != 200}
    assert not broken, f"pages that do not answer 200 on SQLite: {broken}"
    assert got["csv rows"] == 2  # both demo systems are on the board


def _ctrl_c_default() -> None:
    """SIGINT's default action in the server: a suite started in the background (`cmd &`
    in a script) ignores SIGINT, children inherit that, and Python then installs no
    KeyboardInterrupt handler; the server never saw the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _state(db: Path, name: str) -> str | None:
    with closing(sqlite3.connect(db, timeout=30)) as con:
        row = con.execute("SELECT state FROM submissions_submission WHERE name = ?",
                          (name,)).fetchone()
    return row[0] if row else None


@pytest.mark.slow
def test_a_new_upload_is_scored_while_serve_demo_runs(
        sqlite_demo: tuple[Path, dict[str, str]]) -> None:
    """The product's promise on `make demo`'s own stack (SQLite, eager Celery): with
    serve_demo running, an upload the demo never saw is labelled by its crowd and scored
    with no other command; Ctrl-C stops the server and the crowd. The crowd works twenty
    times faster than the demo's pace here (--crowd-pace 0.05)."""
    tmp_path, env = sqlite_demo
    # The same world with two more systems: the first two are the demo's, the last two new.
    more = tmp_path / "more"
    demo_world.generate(more, docs=25, systems=4, seed=2017)
    assert (more / "corpus.jsonl").read_bytes() == (tmp_path / "demo" / "corpus.jsonl"
                                                    ).read_bytes()
    new_kb = sorted((more / "systems").glob("*.kb"))[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve_demo", f"127.0.0.1:{port}", "--noreload",
         "--world", str(tmp_path / "demo"), "--crowd-pace", "0.05"],
        cwd=ROOT, env={**env, "PYTHONFAULTHANDLER": "1"}, stdout=log,
        stderr=subprocess.STDOUT, preexec_fn=_ctrl_c_default)
    try:
        submit = subprocess.run(
            [sys.executable, "manage.py", "submit", str(new_kb), "--user", "demo",
             "--corpus", "demo", "--name", "unseen"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert submit.returncode == 0, submit.stderr[-3000:]
        assert _state(tmp_path / "db.sqlite3", "unseen") == "annotating", submit.stdout
        deadline = time.monotonic() + 300
        while _state(tmp_path / "db.sqlite3", "unseen") != "scored":
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-3000:]
            time.sleep(1)
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # Still up: every thread's stack into the log (PYTHONFAULTHANDLER), then fail
            # with it, so that a server that ignores Ctrl-C says where it waits.
            server.send_signal(signal.SIGABRT)
            server.wait(timeout=30)
            log.close()
            pytest.fail("serve_demo did not stop within 30 s of Ctrl-C:\n"
                        + (tmp_path / "serve.log").read_text()[-6000:])
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            log.close()
    assert server.returncode is not None
    text = (tmp_path / "serve.log").read_text()
    assert "A simulated crowd of 20 workers answers new HITs of corpus 'demo'" in text
    assert "Traceback" not in text, text[-3000:]
