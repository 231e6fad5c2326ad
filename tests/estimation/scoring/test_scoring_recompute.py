"""Recomputation: history rows, cost, scored transition + e-mail, debounce, generations."""

from __future__ import annotations

from decimal import Decimal
from unittest import mock

import numpy as np
import pytest
from django.core import mail

from annotations.models import Hit, HitState
from annotations.signals import labels_changed
from estimation import scoring
from estimation.core import estimate
from estimation.data import load_corpus_data
from estimation.models import ScoreRun, ScoringState, SystemScore
from estimation.tasks import redrive_scores
from submissions.models import State
from submissions.services import withdraw
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_hit


def _label_all(world: World) -> None:
    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["wed"], "per:spouse")
    label(world.pairs["work"], "per:employee_or_member_of", "per:holds_shares_in")


@pytest.mark.django_db
def test_recompute_writes_history_matching_the_core(world: World) -> None:
    _label_all(world)
    run = scoring.recompute(world.corpus, generation=7, trigger="test")
    assert run.status == ScoreRun.Status.COMPLETE and run.generation == 7
    assert run.n_systems == 2 and run.n_labels == 3 and run.n_draws == 4
    assert run.finished_at >= run.started_at and run.duration_s > 0
    rows = SystemScore.objects.filter(run=run)
    assert rows.count() == 2 * 4
    assert set(rows.values_list("scheme", flat=True)) == {
        "instance", "predicate", "entity", "entity_relation"}
    data = load_corpus_data(world.corpus)
    res = estimate(data.population, data.evidence(), schemes=["instance"])
    iv = res.results["instance"]["precision"]["joint"]
    for i, sub in enumerate(data.submissions):
        row = rows.get(submission=sub, scheme="instance")
        assert row.p_joint == pytest.approx(iv.estimate[i])
        assert row.p_joint_lo == pytest.approx(iv.lo[i])
        assert row.p_joint_hi == pytest.approx(iv.hi[i])
        assert row.draws == 2 and row.pending == 0 and row.labels_used == 2
    # Alpha is right twice, Beta once (place_of_death is wrong; work holds two relations).
    assert rows.get(submission=world.a, scheme="instance").p_simple == pytest.approx(1.0)
    assert rows.get(submission=world.b, scheme="instance").p_simple == pytest.approx(0.5)


@pytest.mark.django_db
def test_cost_counts_posted_and_completed_hits_of_the_submission(world: World) -> None:
    for state, cost in [(HitState.POSTED, "0.45"), (HitState.COMPLETE, "0.90"),
                        (HitState.PENDING, "5.00"), (HitState.CANCELLED, "7.00")]:
        hit = make_hit(world.corpus, [], state=state, submission=world.a)
        Hit.objects.filter(pk=hit.pk).update(cost_estimate=Decimal(cost))
    run = scoring.recompute(world.corpus)
    assert SystemScore.objects.get(run=run, submission=world.a,
                                   scheme="instance").cost_usd == Decimal("1.35")
    assert SystemScore.objects.get(run=run, submission=world.b,
                                   scheme="instance").cost_usd == Decimal("0")


@pytest.mark.django_db
def test_pending_draws_keep_a_submission_in_scoring(world: World) -> None:
    label(world.pairs["born"], "per:place_of_birth")  # "wed" still unlabelled
    run = scoring.recompute(world.corpus)
    world.a.refresh_from_db()
    assert world.a.state == State.SCORING
    row = SystemScore.objects.get(run=run, submission=world.a, scheme="instance")
    assert row.pending == 1 and row.draws == 1
    assert mail.outbox == []


@pytest.mark.django_db
def test_fully_labelled_submission_becomes_scored_and_owner_is_emailed(
        world: World, django_capture_on_commit_callbacks) -> None:
    _label_all(world)
    with django_capture_on_commit_callbacks(execute=True):
        run = scoring.recompute(world.corpus)
    world.a.refresh_from_db()
    world.b.refresh_from_db()
    assert world.a.state == State.SCORED
    assert world.b.state == State.ANNOTATING  # not in scoring: left alone
    assert "precision 1.000" in world.a.events.last().message
    assert len(mail.outbox) == 1
    msg = mail.outbox[0]
    # Plain text: a left-to-right name gets no invisible isolates (a name that could
    # reorder the rest would: tests/estimation/scoring/test_bidi_names.py).
    assert msg.to == ["ada@example.org"]
    assert msg.subject == "[KBPO] Alpha is scored"
    assert "your submission “Alpha” (#" in msg.body
    assert "\u2068" not in msg.subject + msg.body
    assert f"/submissions/{world.a.pk}/report/" in msg.body
    score = SystemScore.objects.get(run=run, submission=world.a, scheme="instance")
    assert f"{score.p_joint:.3f}" in msg.body and "90% interval" in msg.body
    # A later run does not e-mail again.
    with django_capture_on_commit_callbacks(execute=True):
        scoring.recompute(world.corpus)
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_label_changes_are_debounced_into_one_task(
        world: World, django_capture_on_commit_callbacks) -> None:
    with mock.patch.object(scoring, "_enqueue") as enqueue, \
            django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):
            labels_changed.send(sender=None, corpus_id=world.corpus.pk)
    state = ScoringState.objects.get(corpus=world.corpus)
    assert state.generation == 3 and state.scheduled
    assert enqueue.call_count == 1
    enqueue.assert_called_with(world.corpus.pk, scoring.debounce_seconds())

    out = scoring.run_scheduled(world.corpus.pk)
    assert out.status == "complete" and out.run.generation == 3
    state.refresh_from_db()
    assert state.scored_generation == 3 and not state.scheduled and state.lease_until is None
    assert scoring.run_scheduled(world.corpus.pk).status == "up to date"


@pytest.mark.django_db
def test_a_second_run_waits_for_the_lease(world: World,
                                          django_capture_on_commit_callbacks) -> None:
    scoring.request_recompute(world.corpus.pk)
    state = ScoringState.objects.get(corpus=world.corpus)
    from django.utils import timezone

    state.lease_until = timezone.now() + timezone.timedelta(minutes=5)
    state.scheduled = False
    state.save()
    with mock.patch.object(scoring, "_enqueue") as enqueue, \
            django_capture_on_commit_callbacks(execute=True):
        assert scoring.run_scheduled(world.corpus.pk).status == "busy"
    assert enqueue.call_count == 1
    assert ScoreRun.objects.count() == 0


@pytest.mark.django_db
def test_labels_arriving_during_a_run_schedule_the_next_one(
        world: World, django_capture_on_commit_callbacks) -> None:
    """The run read generation g; a label announced mid-run must trigger run g+1."""
    scoring.request_recompute(world.corpus.pk)
    real_load = scoring.load_corpus_data

    def load_then_new_label(corpus, **kwargs):
        data = real_load(corpus, **kwargs)
        label(world.pairs["born"], "per:place_of_birth")
        scoring.request_recompute(corpus.pk, "mid-run label")
        return data

    with mock.patch.object(scoring, "load_corpus_data", load_then_new_label), \
            mock.patch.object(scoring, "_enqueue") as enqueue, \
            django_capture_on_commit_callbacks(execute=True):
        out = scoring.run_scheduled(world.corpus.pk)
    assert out.run.generation == 1 and out.run.n_labels == 0
    state = ScoringState.objects.get(corpus=world.corpus)
    assert state.generation == 2 and state.scored_generation == 1 and state.scheduled
    assert enqueue.call_count == 1  # exactly one follow-up
    with django_capture_on_commit_callbacks(execute=True):
        nxt = scoring.run_scheduled(world.corpus.pk)
    assert nxt.run.generation == 2 and nxt.run.n_labels == 1


@pytest.mark.django_db
def test_withdrawal_recomputes_without_the_system_and_keeps_its_labels(
        world: World, django_capture_on_commit_callbacks) -> None:
    _label_all(world)
    first = scoring.recompute(world.corpus)
    with django_capture_on_commit_callbacks(execute=True):
        withdraw(world.b, reason="test")
    latest = scoring.latest_run(world.corpus)
    assert latest.pk != first.pk and latest.n_systems == 1
    assert latest.n_labels == first.n_labels  # Beta's labels are still reused
    assert not SystemScore.objects.filter(run=latest, submission=world.b).exists()


@pytest.mark.django_db
def test_failed_run_is_recorded_and_redriven(world: World,
                                             django_capture_on_commit_callbacks) -> None:
    scoring.request_recompute(world.corpus.pk)
    with mock.patch.object(scoring, "estimate", side_effect=RuntimeError("boom")), \
            pytest.raises(RuntimeError):
        scoring.run_scheduled(world.corpus.pk)
    run = ScoreRun.objects.get()
    assert run.status == ScoreRun.Status.FAILED and "boom" in run.error
    state = ScoringState.objects.get(corpus=world.corpus)
    assert state.lease_until is None and not state.up_to_date and not state.scheduled
    with mock.patch.object(scoring, "_enqueue") as enqueue:
        assert redrive_scores() == 1
    enqueue.assert_called_once_with(world.corpus.pk, 0)
    assert ScoringState.objects.get(corpus=world.corpus).scheduled
    with mock.patch.object(scoring, "_enqueue"):
        assert redrive_scores() == 0  # queued now: nothing to re-drive


@pytest.mark.django_db
def test_empty_corpus_recomputes_cleanly(db) -> None:
    from tests.factories import make_corpus

    corpus = make_corpus("empty")
    run = scoring.recompute(corpus)
    assert run.status == ScoreRun.Status.COMPLETE and run.n_systems == 0
    assert not np.isnan(run.duration_s)
