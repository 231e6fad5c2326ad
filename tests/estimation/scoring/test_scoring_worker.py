"""End to end on a real Celery worker: upload → ingest → plan → crowd → recompute → leaderboard."""

from __future__ import annotations

import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotations.signals import labels_changed
from estimation.models import ScoringState
from submissions.models import State, Submission
from tests.estimation.scoring.scoring_demo import exhaustive, load_demo
from tests.factories import make_user


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
    # Ingestion and then the crowd planner run on the worker.
    busy = {State.UPLOADED, State.VALIDATING, State.INGESTED, State.PLANNING}
    _wait(lambda: all(Submission.objects.get(pk=s.pk).state not in busy for s in subs),
          timeout=120, what="ingestion and planning on the worker")
    assert {Submission.objects.get(pk=s.pk).state for s in subs} <= {
        State.ANNOTATING, State.SCORING, State.SCORED}
    exhaustive(demo, 0.5, seed=1)
    labels_changed.send(sender=None, corpus_id=demo.corpus.pk)

    # The simulated crowd answers through the intake; aggregation and recompute run on
    # the worker, so answer again until ties are resolved and everything is scored.
    def crowd_round() -> bool:
        call_command("simulate_crowd", gold=str(demo.out / "gold.jsonl"), corpus="e2e",
                     seed=3, stdout=StringIO())
        return all(Submission.objects.get(pk=s.pk).state == State.SCORED for s in subs)

    _wait(crowd_round, timeout=180, what="the crowd, aggregation and recompute on the worker")
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
