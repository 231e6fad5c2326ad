"""A batch of label changes inside `jobs.coalesced()` recomputes once, with the same
final scores as recomputing after every change (eager mode, as in `manage.py demo`)."""

from __future__ import annotations

import pytest

from annotations.signals import labels_changed
from estimation.models import ScoreRun, SystemScore
from kbpo.core import jobs
from submissions.models import Submission
from tests.estimation.scoring.scoring_world import World, build_world, label

LABELS = [("born", "per:place_of_birth"), ("wed", "per:spouse"),
          ("work", "per:employee_or_member_of")]
FIELDS = [f.name for f in SystemScore._meta.fields
          if f.name not in ("id", "run", "submission", "scheme")]


def _feed(world: World, capture) -> None:
    for key, predicate in LABELS:
        with capture(execute=True):
            label(world.pairs[key], predicate)
            labels_changed.send(sender=None, corpus_id=world.corpus.pk)


def _final(world: World) -> dict:
    run = ScoreRun.objects.filter(corpus=world.corpus).order_by("-id").first()
    return {(s.submission.name, s.scheme): [getattr(s, f) for f in FIELDS]
            for s in SystemScore.objects.filter(run=run).select_related("submission")}


@pytest.mark.django_db
def test_coalesced_labels_recompute_once_with_identical_scores(
        django_capture_on_commit_callbacks) -> None:
    each = build_world("each")
    batch = build_world("batch")
    _feed(each, django_capture_on_commit_callbacks)
    with jobs.coalesced():
        _feed(batch, django_capture_on_commit_callbacks)
        assert not ScoreRun.objects.filter(corpus=batch.corpus).exists()  # held
    assert ScoreRun.objects.filter(corpus=each.corpus).count() == len(LABELS)
    assert ScoreRun.objects.filter(corpus=batch.corpus).count() == 1
    final_each, final_batch = _final(each), _final(batch)
    assert final_each and final_each == final_batch
    states = lambda w: sorted(Submission.objects.filter(corpus=w.corpus)  # noqa: E731
                              .values_list("name", "state"))
    assert states(each) == states(batch)


@pytest.mark.django_db
def test_held_sends_go_out_when_the_block_raises(django_capture_on_commit_callbacks) -> None:
    world = build_world("t")
    with pytest.raises(RuntimeError), jobs.coalesced():
        _feed(world, django_capture_on_commit_callbacks)
        raise RuntimeError("batch failed half-way")
    assert ScoreRun.objects.filter(corpus=world.corpus).count() == 1
