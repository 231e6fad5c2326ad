"""No lost update: labels committed while recomputations run on other connections.

Threads with their own Postgres connections stand in for the web process (labels
arriving, `labels_changed` sent after commit) and for Celery workers (running the
queued recomputations). Nothing here waits on the clock: the first test orders the
steps with events, the second lets threads race and checks only what must hold in
every interleaving.
"""

from __future__ import annotations

import itertools
import queue
import threading
from unittest import mock

import pytest
from django.db import close_old_connections, connection

from annotations.models import PairLabel
from annotations.signals import labels_changed
from estimation import scoring
from estimation.models import ScoreRun, ScoringState
from submissions.models import MentionPair
from tests.estimation.scoring.scoring_world import World, build_world

N_LABELS = 30
WAIT = 60  # seconds; only a bound for a hung thread, never part of a check


def _fresh_pairs(world: World, n: int) -> list[MentionPair]:
    born = world.pairs["born"]
    return [MentionPair.objects.create(
        document=born.document, sentence=born.sentence, subject_begin=0, subject_end=1 + i,
        object_begin=200, object_end=201, subject_type="PER", object_type="GPE")
        for i in range(n)]


def _add_label(world: World, pair: MentionPair) -> None:
    """A committed label, announced after the commit (as the crowd pipeline does)."""
    PairLabel.objects.create(pair=pair, predicates=["no_relation"], support=1, n_answers=3)
    labels_changed.send(sender=None, corpus_id=world.corpus.pk)


def _runs(world: World) -> list[ScoreRun]:
    return list(ScoreRun.objects.filter(corpus=world.corpus).order_by("started_at", "pk"))


def _assert_serial(runs: list[ScoreRun]) -> None:
    """The lease serialises runs: all complete, none overlapping another in time."""
    assert runs and all(r.status == ScoreRun.Status.COMPLETE for r in runs)
    for a, b in itertools.pairwise(runs):
        assert a.finished_at <= b.started_at


@pytest.mark.django_db(transaction=True)
def test_labels_committed_during_a_run_are_scored_by_the_next(needs_postgres: None,
                                                               settings) -> None:
    """The protocol step by step: a burst queues one run; labels that arrive while it
    computes queue exactly one more, which sees them all; a second worker backs off."""
    settings.KBPO_SCORE_SCHEMES = ["instance"]  # one `estimate` call per run
    world = build_world()
    pairs = _fresh_pairs(world, 2 * 10)
    labels_before = PairLabel.objects.filter(pair__document__corpus=world.corpus).count()
    state = ScoringState.objects.get_or_create(corpus=world.corpus)[0]
    g0 = state.generation
    jobs: list[int] = []
    inside, release = threading.Event(), threading.Event()
    real_estimate = scoring.estimate

    def estimate_when_released(*args, **kwargs):
        if threading.current_thread().name == "worker-1" and not inside.is_set():
            inside.set()  # the run has read its generation and loaded the data
            assert release.wait(WAIT), "the test never released the run"
        return real_estimate(*args, **kwargs)

    outcome: dict[str, object] = {}

    def worker_1() -> None:
        try:
            outcome["first"] = scoring.run_scheduled(world.corpus.pk)
        except BaseException as exc:  # reported by the main thread
            outcome["first"] = exc
        finally:
            inside.set()
            close_old_connections()
            connection.close()

    with mock.patch.object(scoring, "_enqueue", lambda cid, countdown: jobs.append(cid)), \
            mock.patch.object(scoring, "estimate", estimate_when_released):
        # 1. A burst of ten labels queues one task (debounced and deduplicated).
        for pair in pairs[:10]:
            _add_label(world, pair)
        assert jobs == [world.corpus.pk]
        jobs.clear()
        # 2. A worker starts that run and is held inside the computation.
        first = threading.Thread(target=worker_1, name="worker-1")
        first.start()
        assert inside.wait(WAIT)
        assert "first" not in outcome, outcome
        # 3. Ten more labels commit meanwhile: one more task is queued, not ten.
        for pair in pairs[10:]:
            _add_label(world, pair)
        assert jobs == [world.corpus.pk]
        # 4. A second worker picks that task up while the lease is held: it backs off
        #    and queues itself again instead of computing concurrently.
        assert scoring.run_scheduled(jobs.pop()).status == "busy"
        assert jobs == [world.corpus.pk]
        release.set()
        first.join(WAIT)
        assert not first.is_alive()
        run1 = outcome["first"]
        assert not isinstance(run1, BaseException), run1
        assert run1.status == "complete"
        assert run1.run.generation == g0 + 10
        assert run1.run.n_labels == labels_before + 10  # it loaded before labels 11–20
        # 5. The queued task runs and sees every label; any further task finds nothing new.
        outcomes = [scoring.run_scheduled(jobs.pop(0)) for _ in range(len(jobs))]
        assert [o.status for o in outcomes] == ["complete"]
        assert outcomes[0].run.generation == g0 + 20
        assert outcomes[0].run.n_labels == labels_before + 20
        assert jobs == []  # nothing left queued
    state.refresh_from_db()
    assert state.generation == state.scored_generation == g0 + 20
    assert not state.scheduled and state.lease_until is None
    runs = _runs(world)
    assert len(runs) == 2  # twenty label changes, two runs
    _assert_serial(runs)


@pytest.mark.django_db(transaction=True)
def test_racing_labels_and_workers_never_lose_an_update(needs_postgres: None) -> None:
    """Free-running threads: whatever the interleaving, the newest run saw every label,
    runs never overlapped, and no run happened without a label change to score."""
    world = build_world()
    pairs = _fresh_pairs(world, N_LABELS)
    labels_before = PairLabel.objects.filter(pair__document__corpus=world.corpus).count()
    g0 = ScoringState.objects.get_or_create(corpus=world.corpus)[0].generation
    # Recompute tasks (a corpus id) and their follow-ups (the reweighted schemes:
    # ("follow-up", id)), as a broker would hold them.
    jobs: queue.Queue[int | tuple[str, int] | None] = queue.Queue()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while (job := jobs.get()) is not None:
                try:
                    if isinstance(job, tuple):
                        scoring.run_follow_up(job[1])
                    else:
                        scoring.run_scheduled(job)
                except BaseException as exc:
                    errors.append(exc)
                finally:
                    jobs.task_done()
            jobs.task_done()
        finally:
            close_old_connections()
            connection.close()

    def producer() -> None:
        try:
            for pair in pairs:
                _add_label(world, pair)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    with mock.patch.object(scoring, "_enqueue", lambda cid, countdown: jobs.put(cid)), \
            mock.patch.object(scoring, "_enqueue_follow_up",
                              lambda cid, countdown: jobs.put(("follow-up", cid))):
        workers = [threading.Thread(target=worker) for _ in range(2)]
        for t in workers:
            t.start()
        prod = threading.Thread(target=producer)
        prod.start()
        prod.join(WAIT)
        # Every queued task, including those queued by the runs themselves, is done:
        # a worker queues the follow-up before it marks its own task done.
        jobs.join()
        for _ in workers:
            jobs.put(None)
        for t in workers:
            t.join(WAIT)
    assert not errors, errors
    assert not prod.is_alive() and not any(t.is_alive() for t in workers)
    state = ScoringState.objects.get(corpus=world.corpus)
    assert state.generation == g0 + N_LABELS
    assert state.scored_generation == g0 + N_LABELS, "a label change was never scored"
    assert not state.scheduled and state.lease_until is None
    runs = _runs(world)
    _assert_serial(runs)
    assert len(runs) <= N_LABELS  # each run scores at least one new label change
    # The newest stored run saw every label. Its generation may be below the last one:
    # a run can load a label committed before its `labels_changed` bumped the
    # generation, and the run for that later generation then finds nothing new and
    # stores nothing (`scoring._unchanged`); scored_generation above still counts it.
    newest = runs[-1]
    assert newest.generation == max(r.generation for r in runs) <= g0 + N_LABELS
    assert newest.n_labels == labels_before + N_LABELS
    # Its follow-up ran too: no scheme of it is left behind the labels it scored.
    assert not scoring.behind(newest)
