"""No lost update: labels committed while recomputations run on other connections.

Real threads with their own Postgres connections stand in for the web process (labels
arriving, `labels_changed` sent after commit) and two Celery workers (running the
queued recomputations). At the end, the newest run must have seen every label.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from unittest import mock

import pytest
from django.db import close_old_connections, connection

from annotations.models import PairLabel
from annotations.signals import labels_changed
from estimation import scoring
from estimation.models import ScoreRun, ScoringState
from submissions.models import MentionPair
from tests.scoring.scoring_world import build_world

N_LABELS = 30


@pytest.mark.django_db(transaction=True)
def test_labels_arriving_during_recomputes_are_never_lost() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres (concurrent connections)")
    world = build_world()
    born = world.pairs["born"]
    # Fresh pairs in the corpus, each about to receive one label.
    pairs = [MentionPair.objects.create(
        document=born.document, sentence=born.sentence, subject_begin=0, subject_end=1 + i,
        object_begin=200, object_end=201, subject_type="PER", object_type="GPE")
        for i in range(N_LABELS)]
    jobs: queue.Queue[int | None] = queue.Queue()
    slow_estimate = scoring.estimate

    def estimate_slowly(*args, **kwargs):
        time.sleep(0.05)  # widen the window in which labels arrive mid-run
        return slow_estimate(*args, **kwargs)

    def worker() -> None:
        try:
            while (corpus_id := jobs.get()) is not None:
                scoring.run_scheduled(corpus_id)
        finally:
            close_old_connections()
            connection.close()

    def producer() -> None:
        try:
            for pair in pairs:
                PairLabel.objects.create(pair=pair, predicates=["no_relation"], support=1,
                                         n_answers=3)
                labels_changed.send(sender=None, corpus_id=world.corpus.pk)
                time.sleep(0.01)
        finally:
            connection.close()

    with mock.patch.object(scoring, "_enqueue", lambda cid, countdown: jobs.put(cid)), \
            mock.patch.object(scoring, "estimate", estimate_slowly):
        workers = [threading.Thread(target=worker) for _ in range(2)]
        for t in workers:
            t.start()
        prod = threading.Thread(target=producer)
        prod.start()
        prod.join()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = ScoringState.objects.get(corpus=world.corpus)
            if state.up_to_date and not state.scheduled and state.lease_until is None \
                    and jobs.empty():
                break
            time.sleep(0.05)
        for _ in workers:
            jobs.put(None)
        for t in workers:
            t.join(timeout=30)

    state = ScoringState.objects.get(corpus=world.corpus)
    assert state.generation == N_LABELS
    assert state.scored_generation == N_LABELS, "a label change was never scored"
    runs = list(ScoreRun.objects.filter(corpus=world.corpus).order_by("started_at"))
    assert all(r.status == ScoreRun.Status.COMPLETE for r in runs)
    assert 1 <= len(runs) < N_LABELS  # debounced: fewer runs than label changes
    last = max(runs, key=lambda r: r.generation)
    assert last.n_labels == N_LABELS  # the newest run saw every label
    # The lease serialises runs: no two overlap in time.
    for a, b in itertools.pairwise(runs):
        assert a.finished_at <= b.started_at
