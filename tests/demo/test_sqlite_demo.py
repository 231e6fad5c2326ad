"""`make demo` runs on SQLite with Celery eager, not on the suite's Postgres: run a small
demo that way in a subprocess and open every page a newcomer is sent to.

Postgres-only SQL in a request path (json_agg, = ANY, COPY) passes every other test and
breaks the README's first command; this is the test that sees it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow
def test_make_demo_site_works_on_sqlite(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    # Small, with two correction replicates (the fewest that run that path on SQLite).
    env["KBPO_SOFT_LABEL_BOOTSTRAP"] = "2"
    demo = subprocess.run(
        [sys.executable, "manage.py", "demo", "--docs", "25", "--systems", "2",
         "--out", str(tmp_path / "demo")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "The demo is ready." in demo.stdout

    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    line = next(x for x in probe.stdout.splitlines() if x.startswith("PROBE "))
    got = json.loads(line[len("PROBE "):])
    broken = {url: code for url, code in got.items() if url != "csv rows" and code != 200}
    assert not broken, f"pages that do not answer 200 on SQLite: {broken}"
    assert got["csv rows"] == 2  # both demo systems are on the board
