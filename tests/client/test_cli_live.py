"""The `kbpo` client (client/) run as its own process against a live server: log in,
submit a file that is rejected and one that is scored while it waits, then status, list,
scores, compare and report; the exit statuses a script relies on.

The client runs from its source folder (PYTHONPATH=client/src), so the suite needs no
install step for it; its libraries are pinned in requirements-dev.txt as in
client/pyproject.toml. Celery runs inline in the live server's thread (no worker)."""

from __future__ import annotations

import json
import os
import pty
import queue
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from annotations.models import PairLabel, SampleDraw
from estimation import scoring
from submissions.models import State, Submission
from tests import ROOT
from tests.estimation.scoring.scoring_demo import draw, label_from_gold, scored_demo

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-passphrase-for-grace-42"
FIRST = "first\x1b[2J"  # a name holding a terminal escape sequence (clear the screen)
WAIT = 120  # seconds: a bound on waiting for the client, never the check itself


@pytest.fixture
def world(tmp_path: Path, settings, no_planning) -> dict:
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = User.objects.create_user("demo-systems")
    demo, rng = scored_demo(tmp_path / "world", owner, docs=20, systems=3, draws=40)
    User.objects.create_user("grace", "grace@example.org", PASSWORD)
    kbs = sorted((demo.out / "systems").glob("*.kb"))
    files = {}
    for i, kb in enumerate(kbs[:2]):  # two of the world's systems, as grace's own runs
        files[f"mine{i}"] = tmp_path / f"mine{i}.kb"
        files[f"mine{i}"].write_text(f"grace_run_{i}\n" + kb.read_text().split("\n", 1)[1])
    files["mine2"] = tmp_path / "mine2.kb"
    files["mine2"].write_text("grace_run_2\n" + kbs[2].read_text().split("\n", 1)[1])
    lines = kbs[2].read_text().splitlines()
    subject = next(ln.split("\t")[0] for ln in lines if "\ttype\tPER" in ln)
    files["bad"] = tmp_path / "bad.kb"
    files["bad"].write_text("\n".join([*lines, f"{subject}\tper:favourite_colour\t"
                                       f"\"blue\"\tD:0-3\t1.0"]) + "\n")
    return {"demo": demo, "rng": rng, "files": files}


def _drain(fd: int, into: list[bytes]) -> None:
    """Read a pseudo-terminal until its last writer closes it."""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        into.append(chunk)
    os.close(fd)


@pytest.fixture
def kbpo(live_server, tmp_path: Path):
    """Run `kbpo ARGS...` as a separate process against the live server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBPO_")}
    env.update(PYTHONPATH=str(ROOT / "client" / "src"), KBPO_URL=live_server.url,
               KBPO_CONFIG_DIR=str(tmp_path / "config"), COLUMNS="200")

    def run(*args: str, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kbpo_client", *args], input=stdin,
                              capture_output=True, text=True, env={**env, **extra},
                              timeout=WAIT)

    run.env = env
    return run


def test_login_submit_wait_and_read_the_results(kbpo, world: dict, tmp_path: Path) -> None:
    files, demo = world["files"], world["demo"]
    # Nothing works before logging in, and it says how to.
    before = kbpo("list")
    assert before.returncode == 3 and "kbpo login --user NAME" in before.stderr

    # login: a wrong password is refused (exit 3); the right one stores grace's token.
    wrong = kbpo("login", "--user", "grace", "--password-stdin", stdin="nope\n")
    assert wrong.returncode == 3 and "HTTP 401" in wrong.stderr
    assert "Wrong username or password" in wrong.stderr
    done = kbpo("login", "--user", "grace", "--password-stdin", stdin=PASSWORD + "\n")
    assert done.returncode == 0, done.stderr
    stored = tmp_path / "config" / "credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    key = Token.objects.get(user__username="grace").key
    url = kbpo.env["KBPO_URL"]
    assert json.loads(stored.read_text())["servers"][url] == {"current": "grace",
                                                              "tokens": {"grace": key}}
    # KBPO_TOKEN overrides the stored token.
    bogus = kbpo("list", KBPO_TOKEN="0" * 40)
    assert bogus.returncode == 3 and "HTTP 401" in bogus.stderr

    # A file with an error: exit 1, the error printed with its line and code.
    bad = kbpo("submit", str(files["bad"]), "--corpus", "demo", "--name", "bad", "--wait")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    n_lines = len(files["bad"].read_text().splitlines())
    assert f"line {n_lines}: UNKNOWN_PREDICATE" in bad.stderr
    assert Submission.objects.get(name="bad").state == State.REJECTED

    # An accepted file nobody labels: --timeout passes, exit 2.
    slow = kbpo("submit", str(files["mine0"]), "--corpus", "demo", "--name", FIRST,
                "--wait", "--timeout", "1", "--poll", "0.2")
    assert slow.returncode == 2, slow.stdout + slow.stderr
    assert "Timed out after 1 s" in slow.stderr
    first = Submission.objects.get(name=FIRST)
    assert f"Submission {first.pk} uploaded" in slow.stdout

    # On a terminal the progress line is rewritten in place (rich's status line).
    master, slave = pty.openpty()
    shown: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(master, shown), daemon=True)
    reader.start()
    tty = subprocess.run(
        [sys.executable, "-m", "kbpo_client", "submit", str(files["mine2"]), "--corpus",
         "demo", "--name", "third", "--wait", "--timeout", "1", "--poll", "0.2"],
        stdout=slave, stderr=subprocess.PIPE, text=True, env={**kbpo.env, "TERM": "xterm"},
        timeout=WAIT)
    os.close(slave)
    reader.join(timeout=WAIT)
    screen = b"".join(shown).decode()
    assert tty.returncode == 2, screen + tty.stderr
    assert "\r" in screen and "state ingested · open questions 0" in screen
    # The status line is gone at exit; its last text stays, as a line of its own.
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)  # cursor moves, line clears
    assert plain.rstrip().splitlines()[-1].strip() == (
        "state ingested · open questions 0 · spend $0.00 of $100.00")
    assert "Timed out after 1 s" in tty.stderr

    # Waiting while the crowd labels: a progress line per change, then the scores.
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbpo_client", "submit", str(files["mine1"]), "--corpus",
         "demo", "--name", "second", "--public", "--wait", "--poll", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kbpo.env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()

    def line_with(text: str) -> str:
        while True:
            line = lines.get(timeout=WAIT)
            if text in line:
                return line

    try:
        line_with("uploaded")
        second = Submission.objects.get(name="second")
        assert "spend $" in line_with("state ")
        Submission.objects.filter(pk=second.pk).update(state=State.SCORING)
        draw(second, 120, world["rng"])
        pairs = sorted(set(SampleDraw.objects.filter(submission=second)
                           .values_list("instance__pair_id", flat=True)))
        label_from_gold(demo, set(pairs[: len(pairs) // 2]))
        # Part of the pairs labelled (some already were, from other systems' draws): the
        # client shows that share, and nothing changes until it has.
        k = PairLabel.objects.filter(pair_id__in=pairs).count()
        assert 0 < k < len(pairs)
        partial = line_with(f"labelled {k}/{len(pairs)} pairs ({100 * k // len(pairs)}%)")
        assert partial.startswith("state scoring · labelled ")
        label_from_gold(demo)
        scoring.recompute(demo.corpus)
        assert f"labelled {len(pairs)}/{len(pairs)} pairs (100%)" in line_with("state scored")
        proc.wait(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read()
    second.refresh_from_db()
    assert second.state == State.SCORED

    # status, list, scores (table and JSON), compare, report.
    status = kbpo("status", str(second.pk))
    assert status.returncode == 0 and "State: scored" in status.stdout
    listed = kbpo("list")
    assert listed.returncode == 0
    assert f"{second.pk} " in listed.stdout and "second" in listed.stdout
    # A name's terminal escape sequence is shown, never sent to the terminal.
    assert f"{first.pk} " in listed.stdout and "first\\x1b[2J" in listed.stdout
    assert "\x1b" not in listed.stdout

    scores = kbpo("scores", str(second.pk))
    assert scores.returncode == 0, scores.stderr
    api = kbpo("scores", str(second.pk), "--json")
    body = json.loads(api.stdout)
    inst = next(s for s in body["schemes"] if s["scheme"] == "instance")
    p = inst["precision"]["joint"]
    shown = next(ln for ln in scores.stdout.splitlines() if "precision" in ln)
    # The interval's ends rounded outward (to within float noise): the printed interval
    # contains the computed one.
    lo, hi = (float(x) for x in shown.split("[")[1].split("]")[0].split(","))
    assert lo - 1e-9 <= p["lo"] < lo + 0.001 and hi - 0.001 < p["hi"] <= hi + 1e-9
    assert f"{p['estimate']:.3f}" in shown

    other = next(iter(demo.submissions.values()))
    cmp = kbpo("compare", str(second.pk), str(other.pk))
    assert cmp.returncode == 0, cmp.stderr
    assert "A − B" in cmp.stdout and all(m in cmp.stdout for m in ("precision", "recall", "f1"))

    out = tmp_path / "report.json"
    rep = kbpo("report", str(second.pk), "-o", str(out))
    assert rep.returncode == 0, rep.stderr
    report = json.loads(out.read_text())
    assert report["submission"]["state"] == "scored"
    assert report["scores"] == body
    drawn = SampleDraw.objects.filter(submission=second).values("instance").distinct()
    assert len(report["samples"]) == drawn.count() > 50  # more than one page
    assert set(report["history"]) == {"instance", "predicate", "entity", "entity_relation"}


def test_usage_errors_are_exit_3_and_name_the_option(kbpo, tmp_path: Path) -> None:
    missing = kbpo("submit", str(tmp_path / "kb.tsv"), "--name", "x")
    assert missing.returncode == 3 and "--corpus" in missing.stderr
    timeout = kbpo("submit", str(tmp_path / "kb.tsv"), "--corpus", "c", "--name", "x",
                   "--timeout", "5")
    assert timeout.returncode == 3 and "--timeout only goes with --wait" in timeout.stderr
    nourl = kbpo("scores", "1", KBPO_URL="")
    assert nourl.returncode == 3 and "KBPO_URL" in nourl.stderr
    gone = kbpo("scores", "1", KBPO_URL="http://127.0.0.1:9")  # nothing listens there
    assert gone.returncode == 3 and "Cannot reach http://127.0.0.1:9" in gone.stderr
    # A password for a plain-HTTP address that is not this machine: warned first.
    remote = kbpo("login", "--user", "ada", "--password-stdin", stdin="pw\n",
                  KBPO_URL="http://127.0.0.2:9")
    assert remote.returncode == 3 and "is plain HTTP" in remote.stderr
    assert "plain HTTP" not in kbpo("login", "--user", "ada", "--password-stdin",
                                    stdin="pw\n").stderr  # the live server: localhost
