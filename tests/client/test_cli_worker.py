"""`kbpo submit --wait` against a server whose validation runs in a separate Celery
worker: the upload answers 201 `uploaded`, and the client learns of the rejection by
polling, then prints the validation errors and exits 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from submissions.models import State, Submission
from tests import ROOT
from tests.factories import make_corpus, make_user

pytestmark = pytest.mark.worker

KB = ("run_1\n"
      ":E1\ttype\tPER\n"
      ":E1\tmention\t\"Ada Byron\"\tD1:0-8\n"
      ":E1\tper:favourite_colour\t\"Ada\"\tD1:0-2\t1.0\n")


def test_rejection_found_by_polling_prints_the_errors(celery_worker_process, live_server,
                                                      tmp_path: Path) -> None:
    make_corpus("t")
    token = Token.objects.create(user=make_user("ada"))
    kb = tmp_path / "kb.tsv"
    kb.write_text(KB)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBPO_")}
    env.update(PYTHONPATH=str(ROOT / "client" / "src"), KBPO_URL=live_server.url,
               KBPO_TOKEN=token.key, KBPO_CONFIG_DIR=str(tmp_path / "config"))
    done = subprocess.run(
        [sys.executable, "-m", "kbpo_client", "submit", str(kb), "--corpus", "t", "--name",
         "x", "--wait", "--poll", "0.2", "--timeout", "90"],
        capture_output=True, text=True, env=env, timeout=120)
    sub = Submission.objects.get(name="x")
    assert sub.state == State.REJECTED
    assert done.returncode == 1, done.stdout + done.stderr
    # Answered before validation ran: the worker decided, the client polled.
    assert f"Submission {sub.pk} uploaded (uploaded)" in done.stdout
    assert "state rejected" in done.stdout
    assert "line 4: UNKNOWN_PREDICATE" in done.stderr
    assert f"Submission {sub.pk} was rejected" in done.stderr
