"""KBPO_SCORING_QUEUE routes score recomputations, and KBPO_INGEST_QUEUE ingestions, and
only them, to their own queues (docker-compose.yml's `scorer` and `ingester` consume
them; tests/deploy checks that side)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from estimation.scoring import RECOMPUTE_TASK
from tests import ROOT

INGEST_TASK = "submissions.ingest"
OTHER_TASKS = ["kbpo.ping", "submissions.redrive_stuck", "annotations.worker_quality"]


def routes_under(env: dict[str, str]) -> dict[str, str]:
    """The queue each task is sent to, by the app a fresh interpreter configures under
    ``env`` (the settings are read once, at import)."""
    base = {k: v for k, v in os.environ.items()
            if k not in {"KBPO_SCORING_QUEUE", "KBPO_INGEST_QUEUE",
                         "CELERY_TASK_DEFAULT_QUEUE"}}
    names = [RECOMPUTE_TASK, INGEST_TASK, *OTHER_TASKS]
    code = ("import json, django\ndjango.setup()\nfrom kbpo.celery import app\n"
            f"print(json.dumps({{n: app.amqp.router.route({{}}, n)['queue'].name "
            f"for n in {names!r}}}))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                       env={**base, "DJANGO_SETTINGS_MODULE": "kbpo.settings", **env},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_recomputations_go_to_the_scoring_queue_when_one_is_named() -> None:
    routes = routes_under({"KBPO_SCORING_QUEUE": "scoring", "CELERY_TASK_DEFAULT_QUEUE": "jobs"})
    assert routes == {RECOMPUTE_TASK: "scoring", INGEST_TASK: "jobs",
                      **{n: "jobs" for n in OTHER_TASKS}}


def test_ingestions_go_to_the_ingest_queue_when_one_is_named() -> None:
    routes = routes_under({"KBPO_INGEST_QUEUE": "ingest", "KBPO_SCORING_QUEUE": "scoring",
                           "CELERY_TASK_DEFAULT_QUEUE": "jobs"})
    assert routes == {RECOMPUTE_TASK: "scoring", INGEST_TASK: "ingest",
                      **{n: "jobs" for n in OTHER_TASKS}}


def test_without_a_scoring_queue_everything_goes_to_the_default_queue() -> None:
    for env in ({}, {"KBPO_SCORING_QUEUE": "  ", "KBPO_INGEST_QUEUE": " "}):
        routes = routes_under({**env, "CELERY_TASK_DEFAULT_QUEUE": "jobs"})
        assert set(routes.values()) == {"jobs"}, routes
