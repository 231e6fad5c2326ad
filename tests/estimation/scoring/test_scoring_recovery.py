"""Recovery of score recomputations: a short lease renewed while the run lives, a busy
delivery that comes back when the lease would end, and a run killed with its worker
re-driven soon after a worker is back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from unittest import mock

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from estimation import scoring
from estimation.models import ScoreRun, ScoringState
from tests.conftest import celery_conf
from tests.estimation.scoring.scoring_world import World, label

WAIT = 60


def _wait_for(what: str, check: Callable[[], object], timeout: float = WAIT) -> object:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)  # polling a condition; the clock only bounds it
    return result


@pytest.mark.django_db
def test_a_busy_delivery_comes_back_when_the_lease_would_end(
        world: World, django_capture_on_commit_callbacks) -> None:
    """It re-queued itself every debounce (2 s): 784 times while a killed run's
    30-minute lease ran out. Now once, for when the lease ends."""
    scoring.request_recompute(world.corpus.pk)
    ScoringState.objects.filter(corpus=world.corpus).update(
        lease_until=timezone.now() + timezone.timedelta(seconds=45), scheduled=False)
    with mock.patch.object(scoring, "_enqueue") as enqueue, \
            django_capture_on_commit_callbacks(execute=True):
        assert scoring.run_scheduled(world.corpus.pk).status == "busy"
    ((corpus_id, countdown),) = (c.args for c in enqueue.call_args_list)
    assert corpus_id == world.corpus.pk and 44 < countdown <= 46.5


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_the_run_lives(needs_postgres: None, world: World,
                                                  settings) -> None:
    """A short lease (a killed run's expires soon) must not expire under a live run
    that takes longer: a second delivery then still finds it busy."""
    settings.KBPO_SCORE_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    inside, release = threading.Event(), threading.Event()
    real_estimate = scoring.estimate

    def held_estimate(*args, **kwargs):  # type: ignore[no-untyped-def]
        inside.set()
        assert release.wait(WAIT), "the test never released the run"
        return real_estimate(*args, **kwargs)

    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(scoring.run_scheduled(world.corpus.pk).status)
        except Exception as exc:
            outcome.append(exc)
        finally:
            connections.close_all()

    with mock.patch.object(scoring, "estimate", held_estimate), \
            mock.patch.object(scoring, "_enqueue"):
        label(world.pairs["born"], "per:place_of_birth")
        scoring.request_recompute(world.corpus.pk)
        thread = threading.Thread(target=run)
        thread.start()
        try:
            assert inside.wait(WAIT)
            first = ScoringState.objects.get(corpus=world.corpus).lease_until
            # Three leases later it is still held, its end moved on.
            _wait_for("renewals", lambda: (
                ScoringState.objects.get(corpus=world.corpus).lease_until
                > first + timezone.timedelta(seconds=1.8)))
            assert scoring.run_scheduled(world.corpus.pk).status == "busy"
        finally:
            release.set()
            thread.join(WAIT)
    assert outcome == ["complete"]
    state = ScoringState.objects.get(corpus=world.corpus)
    assert state.lease_until is None and state.up_to_date
    assert ScoreRun.objects.filter(status=ScoreRun.Status.COMPLETE).count() == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_recompute_whose_worker_is_killed_completes_once_a_worker_is_back(
        needs_postgres: None, killable_workers: Callable[..., object], world: World) -> None:
    """kill -9 of the worker mid-run left a 30-minute lease: scores froze for half an
    hour. The run is held mid-way deterministically: the test locks the score table it
    writes; the worker is killed while it waits there, holding the lease."""
    workers = killable_workers(KBPO_SCORE_LEASE_SECONDS="3",
                               KBPO_REDRIVE_ON_WORKER_START="1")
    first = workers.start()
    locked, unlock = threading.Event(), threading.Event()

    def hold_the_score_table() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("LOCK TABLE estimation_scorerun IN ACCESS EXCLUSIVE MODE")
                locked.set()
                unlock.wait(WAIT * 2)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_score_table)
    holder.start()
    try:
        assert locked.wait(WAIT)
        with celery_conf(task_default_queue=workers.queue, task_always_eager=False):
            label(world.pairs["born"], "per:place_of_birth")
            scoring.request_recompute(world.corpus.pk)

        def run_waits_on_the_table() -> bool:
            state = ScoringState.objects.get(corpus=world.corpus)
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted "
                               "AND relation = 'estimation_scorerun'::regclass")
                waiting = cursor.fetchone()[0]
            return state.lease_until is not None and waiting > 0

        _wait_for("the run to hold the lease, waiting on the table", run_waits_on_the_table)
        workers.kill(first)
    finally:
        unlock.set()
        holder.join(WAIT)
    state = ScoringState.objects.get(corpus=world.corpus)
    assert not state.up_to_date and not ScoreRun.objects.exists()
    back = time.monotonic()
    workers.start()

    def scored() -> bool:
        return ScoringState.objects.get(corpus=world.corpus).up_to_date

    _wait_for("the re-driven recompute", scored, 120)
    took = time.monotonic() - back
    print(f"recompute re-driven and done {took:.1f} s after the worker was back")
    assert ScoreRun.objects.filter(status=ScoreRun.Status.COMPLETE).count() == 1
    assert ScoringState.objects.get(corpus=world.corpus).lease_until is None
