"""End to end on a real Celery worker: upload → ingest → labels → recompute → leaderboard."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from annotations.signals import labels_changed
from estimation.models import ScoringState
from submissions.models import State, Submission
from submissions.services import transition
from tests.factories import make_user
from tests.scoring.scoring_demo import draw, exhaustive, label_from_gold, load_demo


def _wait(predicate, timeout: float = 90, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_upload_to_leaderboard_on_a_real_worker(celery_worker_process: dict,
                                                tmp_path: Path) -> None:
    owner = make_user("demo")
    # Uploads are committed, so ingestion runs on the worker.
    demo = load_demo(tmp_path / "world", owner, docs=20, systems=3, seed=5, tag="e2e",
                     ingest=False)
    subs = list(demo.submissions.values())
    _wait(lambda: all(Submission.objects.get(pk=s.pk).state == State.INGESTED for s in subs),
          what="ingestion on the worker")
    # What the crowd pipeline does: plan draws, label them, hand over to scoring.
    rng = np.random.default_rng(1)
    for sub in subs:
        sub.refresh_from_db()
        draw(sub, 30, rng)
        transition(sub, State.PLANNING, "test plan")
        transition(sub, State.ANNOTATING, "test questions")
    exhaustive(demo, 0.5, seed=1)
    label_from_gold(demo)
    for sub in subs:
        transition(sub, State.SCORING, "all drawn pairs labelled")
    labels_changed.send(sender=None, corpus_id=demo.corpus.pk)

    _wait(lambda: all(Submission.objects.get(pk=s.pk).state == State.SCORED for s in subs),
          what="the worker's recompute to score every submission")
    state = ScoringState.objects.get(corpus=demo.corpus)
    _wait(lambda: ScoringState.objects.get(pk=state.pk).up_to_date, what="scores up to date")
    data = Client().get(reverse("api-leaderboard", args=["e2e"])).json()
    assert sorted(s["name"] for s in data["systems"]) == sorted(demo.submissions)
    assert data["run"]["labels"] > 0 and data["run"]["exhaustive_documents"] == 10
    for s in data["systems"]:
        assert s["state"] == "scored" and not s["refining"]
        assert s["f1"]["lo"] <= s["f1"]["estimate"] <= s["f1"]["hi"]
    log = Path(celery_worker_process["log"]).read_text()
    assert "estimation.recompute_corpus" in log
