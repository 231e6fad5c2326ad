"""Real Celery workers on Postgres/Redis: the whole loop, and workers killed mid-task."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from annotations.crowd import mturk, periodic, review
from annotations.crowd.tasks import pay_bonus_task, review_hit_task, sync_mturk_task
from annotations.models import (
    Assignment,
    AssignmentState,
    Bonus,
    CrowdWorker,
    Hit,
    HitState,
    PairLabel,
    Question,
    Response,
    SampleDraw,
)
from estimation import planning
from estimation.tasks import plan_submission_task
from kbpo.celery import app
from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus
from kbpo.demo.world import generate as demo_world
from submissions.models import State, Submission
from submissions.services import create_submission
from tests import ROOT
from tests.annotations.crowd.fake_mturk import FakeMTurk
from tests.annotations.crowd.helpers import small_world, system
from tests.factories import AFTER_CROWD, make_user

PUBLIC = "https://kbpo.example.org"


def wait_for(predicate, timeout: float = 90, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def state_of(sub: Submission) -> str:
    return Submission.objects.values_list("state", flat=True).get(pk=sub.pk)


@pytest.mark.worker
def test_demo_submission_goes_through_the_crowd(celery_worker_process, transactional_db,
                                                tmp_path: Path, settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    out = tmp_path / "world"
    demo_world.generate(out, docs=25, systems=2, seed=11)
    load_corpus("demo", out / "corpus.jsonl", workers=1)
    corpus = Corpus.objects.get(tag="demo")
    with open(out / "systems" / "sys01_baseline.kb", "rb") as fh:
        sub = create_submission(owner=make_user("researcher"), corpus=corpus, name="baseline",
                                file=fh, original_name="sys01_baseline.kb", compressed=False,
                                enforce_limits=False)
    # Ingestion and planning run on the worker process.
    wait_for(lambda: state_of(sub) in {State.ANNOTATING, State.FAILED, *AFTER_CROWD},
             what="annotating")
    assert state_of(sub) == State.ANNOTATING, Submission.objects.get(pk=sub.pk).error
    # The planner posts the HITs right after announcing `annotating`.
    wait_for(lambda: Hit.objects.filter(submission=sub).exists() and not Hit.objects.filter(
        submission=sub, state=HitState.PENDING).exists(), what="posted HITs")
    report = io.StringIO()
    crowd = {"gold": str(out / "gold.jsonl"), "workers": 20, "error_rate": 0.1, "seed": 5,
             "corpus": "demo"}
    call_command("simulate_crowd", **crowd, stdout=report)

    pairs = set(SampleDraw.objects.filter(submission=sub).values_list("instance__pair_id",
                                                                      flat=True))

    def settled_or_answer_again() -> bool:
        # `scoring` alone is no end state: the review on the worker may still reject a
        # spammer, and the recount then deletes labels a moment before it moves the
        # submission back to `annotating` (a busy machine widens that moment). Settled
        # means every assignment reviewed (a rejection commits with its recount mark),
        # no recount pending, every drawn pair labelled, and the submission past the
        # crowd, read in that order. Otherwise the crowd answers what was asked again.
        if (not Assignment.objects.filter(state=AssignmentState.SUBMITTED).exists()
                and not Question.objects.filter(recount_pending_since__isnull=False).exists()
                and PairLabel.objects.filter(pair_id__in=pairs).count() == len(pairs)
                and state_of(sub) in AFTER_CROWD):
            return True
        call_command("simulate_crowd", **crowd, stdout=io.StringIO())
        time.sleep(1)
        return False

    wait_for(settled_or_answer_again, timeout=240, what="a settled, scored submission")
    assert pairs and PairLabel.objects.filter(pair_id__in=pairs).count() == len(pairs)
    assert "accuracy against gold" in report.getvalue()
    wait_for(lambda: not Assignment.objects.filter(state=AssignmentState.SUBMITTED).exists(),
             what="approvals")
    # These HITs hold no control question (the world has no exhaustive gold), so no
    # work is rejected: disagreeing with the crowd alone never costs a worker their pay
    # (issue 41); the spammers' answers weigh less in the worker models instead.
    # Rejection on controls, and rejected answers no longer counting, are tested in
    # test_labels, test_controls, test_rejected_answers and test_collusion.
    assert set(Assignment.objects.values_list("state", flat=True)) == {
        AssignmentState.APPROVED}
    assert not Response.objects.filter(counted=False).exists()


class Blocker:
    """Make one fake MTurk operation act, then hang until released (a worker is
    killed while waiting for MTurk's answer)."""

    def __init__(self, fake: FakeMTurk, operation: str, act_first: bool = True) -> None:
        self.fake, self.name = fake, f"_op_{operation}"
        self.entered, self.release = threading.Event(), threading.Event()
        original = getattr(fake, self.name)

        def hang(params):
            result = original(params) if act_first else None
            self.entered.set()
            self.release.wait(60)
            return result if act_first else original(params)

        setattr(fake, self.name, hang)
        self.original = original

    def done(self) -> None:
        setattr(self.fake, self.name, self.original)
        self.release.set()


@pytest.fixture
def mturk_fake(monkeypatch, settings) -> Iterator[FakeMTurk]:
    env = {"AWS_ACCESS_KEY_ID": "AKIDKBPOTESTKEY", "AWS_SECRET_ACCESS_KEY": "not-a-secret",
           "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
           "AWS_EC2_METADATA_DISABLED": "true", "NO_PROXY": "127.0.0.1,localhost"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with FakeMTurk(balance="100.00") as fake:
        settings.KBPO_CROWD_BACKEND = "mturk"
        settings.MTURK_ENDPOINT_URL = fake.endpoint_url
        settings.KBPO_PUBLIC_URL = PUBLIC
        settings.KBPO_QUESTIONS_PER_HIT = 3
        settings.KBPO_REJECT_MIN_QUESTIONS = 0
        yield fake
    assert not fake.internal_errors


def start_worker(fake: FakeMTurk, queue: str | None = None,
                 **extra_env: str) -> tuple[subprocess.Popen, str]:
    """A solo-pool worker (the task runs in the process we kill) on its own queue."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    queue = queue or f"kbpo-crowd-kill-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, **extra_env, PYTHONPATH=str(ROOT), KBPO_CROWD_BACKEND="mturk",
               CELERY_TASK_DEFAULT_QUEUE=queue,
               MTURK_ENDPOINT_URL=fake.endpoint_url, KBPO_PUBLIC_URL=PUBLIC,
               KBPO_QUESTIONS_PER_HIT="3", KBPO_REJECT_MIN_QUESTIONS="0",
               DATABASE_URL=f"postgres://{db.get('USER') or 'postgres'}@"
                            f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/"
                            f"{connection.settings_dict['NAME']}")
    log = open(ROOT / "test-artifacts" / f"{queue}.log", "a")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbpo", "worker", "-Q", queue, "-P", "solo",
         "--without-gossip", "--without-mingle", "--loglevel", "INFO", "-n", f"{queue}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.log = log  # type: ignore[attr-defined]
    return proc, queue


def kill_worker_inside(fake: FakeMTurk, operation: str, task: object, args: list | None = None,
                       act_first: bool = True) -> None:
    """Run `task` on a fresh worker process and SIGKILL it inside an MTurk call."""
    block = Blocker(fake, operation, act_first=act_first)
    proc, queue = start_worker(fake)
    try:
        task.apply_async(args=args or [], queue=queue)  # type: ignore[attr-defined]
        assert block.entered.wait(90), f"the worker never reached {operation}"
        kill(proc)
    finally:
        block.done()
        if proc.poll() is None:
            kill(proc)


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=20)
    proc.log.close()  # type: ignore[attr-defined]


@pytest.mark.worker
def test_worker_killed_mid_task_loses_nothing_and_pays_once(
        celery_worker_process, transactional_db, mturk_fake: FakeMTurk, monkeypatch) -> None:
    fake = mturk_fake
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work"])

    # 1. Killed while MTurk creates the HIT (MTurk made it, we never heard back).
    kill_worker_inside(fake, "CreateHITWithHITType", plan_submission_task, args=[sub.pk])
    hit = Hit.objects.get(submission=sub)
    assert hit.state == HitState.PENDING and hit.request_token and not hit.external_id
    assert len(fake.hits) == 1
    planning.plan_submission(sub.pk)  # the task re-run
    hit.refresh_from_db()
    assert hit.state == HitState.POSTED and hit.external_id in fake.hits
    assert len(fake.hits) == 1

    # 2. Killed while syncing answers only MTurk saw: nothing lost, nothing doubled.
    truth = {"GPE": "per:place_of_birth", "PER": "per:spouse", "ORG": "per:employee_or_member_of"}
    items = list(hit.items.select_related("question__pair"))
    payload = {"answers": [{"question": i.question_id,
                            "choices": [truth[i.question.pair.object_type]]} for i in items]}
    import json

    for w in ("AWORKER1", "AWORKER2", "AWORKER3"):
        fake.worker_submits(hit.external_id, w, {"answers": json.dumps(payload)})
    kill_worker_inside(fake, "ListAssignmentsForHIT", sync_mturk_task, act_first=False)
    reviews: list[int] = []
    monkeypatch.setattr(review, "enqueue_review", reviews.append)
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        periodic.sync_all()  # the re-run
    finally:
        app.conf.task_always_eager = old
    assert Assignment.objects.filter(hit=hit).count() == 3
    assert PairLabel.objects.count() == 3
    hit.refresh_from_db()
    assert hit.state == HitState.COMPLETE and reviews == [hit.pk]

    # 3. Killed right after MTurk approved the first assignment: paid once each.
    kill_worker_inside(fake, "ApproveAssignment", review_hit_task, args=[hit.pk])
    assert Assignment.objects.filter(state=AssignmentState.APPROVED).count() == 0
    assert review.review_hit(hit.pk) == (3, 0)  # the re-run
    assert {fake.assignment_status(a) for a in fake.assignments} == {"Approved"}
    approved_calls = len(fake.calls_of("ApproveAssignment"))
    assert approved_calls == 4  # one repeat, refused by MTurk and recognised as done

    # 4. Killed right after MTurk paid a bonus: the re-run pays nothing more.
    a = Assignment.objects.order_by("pk").first()
    bonus = Bonus.objects.create(assignment=a, amount=Decimal("0.20"), reason="Great work",
                                 token="tmp")
    bonus.token = mturk.unique_request_token("bonus", bonus.pk)
    bonus.save()
    kill_worker_inside(fake, "SendBonus", pay_bonus_task, args=[bonus.pk])
    assert Bonus.objects.get(pk=bonus.pk).paid_at is None
    assert review.pay_bonus(bonus.pk) is True  # the re-run
    assert len(fake.bonuses) == 1 and Bonus.objects.get(pk=bonus.pk).paid_at is not None


def _active_pid(worker_name: str, task_id: str, not_pid: int | None = None,
                timeout: float = 60) -> int:
    """The pool process running `task_id` on the worker (asked by remote control)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.inspect(destination=[worker_name], timeout=1).active() or {}
        for task in replies.get(worker_name, []):
            if task["id"] == task_id and task.get("worker_pid") not in (None, not_pid):
                return int(task["worker_pid"])
    raise AssertionError(f"task {task_id} never ran on a pool process other than {not_pid}")


@pytest.mark.worker
def test_review_killed_with_sigkill_is_redelivered_and_pays_once(
        celery_worker_process, transactional_db) -> None:
    """The suite's own worker (prefork): a pool process killed with SIGKILL in the
    middle of a review; acks_late + reject_on_worker_lost requeue the task at once and
    another pool process finishes it. Nothing is paid twice."""
    import socket

    from django.db import transaction

    from tests.factories import make_hit

    corpus, pairs = small_world("k")
    hit = make_hit(corpus, [pairs["born"], pairs["wed"]], backend="local",
                   state=HitState.COMPLETE)
    for w in ("u1", "u2", "u3"):   # stored directly: no aggregation races the test
        person = CrowdWorker.objects.create(backend="local", external_id=w)
        a = Assignment.objects.create(hit=hit, worker=person, external_id=f"local-{w}")
        for item in hit.items.all():
            Response.objects.create(assignment=a, question_id=item.question_id,
                                    worker=person, choices=["no_relation"])
    worker = f"{celery_worker_process['queue']}@{socket.gethostname()}"
    with transaction.atomic():
        # Hold the assignments' row locks: the review blocks inside its first approval.
        list(Assignment.objects.select_for_update().filter(hit=hit))
        result = review_hit_task.apply_async(args=[hit.pk],
                                             queue=celery_worker_process["queue"])
        first = _active_pid(worker, result.id)
        os.kill(first, signal.SIGKILL)
        second = _active_pid(worker, result.id, not_pid=first)   # redelivered
        assert second != first
    wait_for(lambda: not Assignment.objects.filter(
        hit=hit, state=AssignmentState.SUBMITTED).exists(), what="the redelivered review")
    paid = list(Assignment.objects.filter(hit=hit).values_list("state", "paid"))
    assert paid == [(AssignmentState.APPROVED, Decimal("0.25"))] * 3
    assert "WorkerLostError" in celery_worker_process["log"].read_text()


@pytest.mark.worker
def test_whole_worker_killed_mid_sync_is_redelivered_after_the_visibility_timeout(
        celery_worker_process, transactional_db, mturk_fake: FakeMTurk) -> None:
    """SIGKILL of the whole worker (solo pool: no parent survives to requeue the task):
    the broker redelivers the unacknowledged sync after CELERY_VISIBILITY_TIMEOUT, and
    the next worker finishes it. Nothing lost, nothing doubled."""
    import json

    fake = mturk_fake
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    corpus, pairs = small_world("v")
    sub = system(corpus, pairs, ["born", "wed", "work"])
    planning.plan_submission(sub.pk)
    hit = Hit.objects.get(submission=sub)
    truth = {"GPE": "per:place_of_birth", "PER": "per:spouse",
             "ORG": "per:employee_or_member_of"}
    payload = {"answers": [{"question": i.question_id,
                            "choices": [truth[i.question.pair.object_type]]}
                           for i in hit.items.select_related("question__pair")]}
    for w in ("AWORKER1", "AWORKER2", "AWORKER3"):
        fake.worker_submits(hit.external_id, w, {"answers": json.dumps(payload)})
    short = {"CELERY_VISIBILITY_TIMEOUT": "2", "CELERY_UNACKED_RESTORE_INTERVAL": "1"}
    block = Blocker(fake, "ListAssignmentsForHIT", act_first=False)
    first, queue = start_worker(fake, **short)
    try:
        sync_mturk_task.apply_async(args=[[hit.pk]], queue=queue)
        assert block.entered.wait(90), "the worker never reached ListAssignmentsForHIT"
        kill(first)
    finally:
        block.done()
        if first.poll() is None:
            kill(first)
    assert not Assignment.objects.filter(hit=hit).exists()
    second, _ = start_worker(fake, queue=queue, **short)
    try:
        wait_for(lambda: Assignment.objects.filter(hit=hit).count() == 3
                 and PairLabel.objects.count() == 3, what="the redelivered sync")
    finally:
        kill(second)
    assert len(fake.calls_of("ListAssignmentsForHIT")) >= 2
    assert Assignment.objects.filter(hit=hit).count() == 3
