"""A fully labelled submission whose joint precision interval came out wider than the
planner promised gets more draws before it is scored (planning.top_up), once per round,
at most KBPO_TOP_UP_ROUNDS times; a round whose draws all land on labelled pairs is
scored again at once."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import override_settings

from annotations.models import PairLabel, SampleDraw
from estimation import planning, scoring
from estimation.core.adaptive import top_up_size
from estimation.models import ScoringState, SystemScore
from submissions.models import RelationInstance, State, Submission, SubmissionEvent
from tests.estimation.scoring.test_incremental import PREDS
from tests.estimation.scoring.test_incremental import World as RandomWorld


def test_the_top_up_size_follows_the_variance_and_stops_at_the_target() -> None:
    # Twice the target half-width after 100 draws: four times the variance, 300 more.
    assert top_up_size(100, 0.10, 0.05) == 301
    assert top_up_size(100, 0.05, 0.05) == 0  # as narrow as planned
    assert top_up_size(100, float("nan"), 0.05) == 0
    assert top_up_size(0, 0.2, 0.05) == 0  # nothing drawn: nothing to scale


def _labelled_world() -> RandomWorld:
    world = RandomWorld()
    world.label(10_000)  # every drawn pair: 12 draws each leave wide intervals
    return world


@pytest.mark.django_db
@override_settings(KBPO_TARGET_HALFWIDTH=0.05, KBPO_TOP_UP_SLACK=0.1, KBPO_TOP_UP_ROUNDS=2)
def test_a_wide_interval_sends_a_top_up_instead_of_scoring(
        django_capture_on_commit_callbacks) -> None:
    """Sent once the run has released the corpus's lease: the top-up re-plans the
    submission, which asks for a recompute (inside the run it found the lease taken,
    and with eager tasks re-queued itself for ever)."""
    world = _labelled_world()
    with mock.patch.object(scoring, "enqueue_top_up") as send, \
            django_capture_on_commit_callbacks(execute=False):
        run = scoring.run_scheduled(world.corpus.pk, force=True).run
    assert run is not None and run.top_ups
    assert not ScoringState.objects.get(corpus=world.corpus).lease_until
    sent = {c.args[0]: c.args[1:] for c in send.call_args_list}
    assert sent == {pk: tuple(rest) for pk, *rest in run.top_ups}
    assert sent, "12 draws cannot give ±0.055"
    for sub in Submission.objects.filter(corpus=world.corpus):
        score = SystemScore.objects.get(run=run, submission=sub, scheme="instance")
        if sub.pk in sent:
            round_, extra, halfwidth = sent[sub.pk]
            assert sub.state == State.SCORING and round_ == 0
            assert halfwidth > 0.055 and extra == top_up_size(12, halfwidth, 0.05)
            # The published interval carries the correction too: never narrower.
            assert score.p_joint_hi - score.p_joint_lo >= 2 * halfwidth - 1e-12
        else:
            assert sub.state == State.SCORED
    with override_settings(KBPO_TOP_UP_ROUNDS=0):
        assert scoring.recompute(world.corpus, full=True).top_ups == []
    assert set(Submission.objects.filter(corpus=world.corpus)
               .values_list("state", flat=True)) == {State.SCORED}


@pytest.mark.django_db
@override_settings(KBPO_TARGET_HALFWIDTH=0.05)
def test_a_top_up_draws_once_per_round_and_asks_the_crowd() -> None:
    world = _labelled_world()
    sub = world.subs[0]
    outcome = planning.top_up(sub.pk, 0, 30, 0.2)
    assert outcome.outcome in ("annotating", "held") and outcome.draws == 30
    sub.refresh_from_db()
    assert sub.state == State.ANNOTATING and sub.top_ups == 1
    draws = list(SampleDraw.objects.filter(submission=sub).order_by("index")
                 .values_list("index", flat=True))
    assert draws == list(range(42))  # 12 planned, 30 more, numbered on
    event = SubmissionEvent.objects.filter(submission=sub).latest("pk")
    assert "±0.200, wider than the ±0.050 target: 30 more draws" in event.message
    assert outcome.new_questions > 0
    # The same round again (a re-sent message), or after the submission moved on: nothing.
    assert planning.top_up(sub.pk, 0, 30, 0.2).outcome == "skipped"
    assert SampleDraw.objects.filter(submission=sub).count() == 42


@pytest.mark.django_db
def test_a_top_up_on_labelled_pairs_only_goes_straight_back_to_scoring(
        django_capture_on_commit_callbacks) -> None:
    world = _labelled_world()
    sub = world.subs[1]
    index = {p.pk: k for k, p in enumerate(world.pairs)}
    mine = set(RelationInstance.objects.filter(submission=sub).values_list("pair_id", flat=True))
    have = set(PairLabel.objects.values_list("pair_id", flat=True))
    PairLabel.objects.bulk_create(
        PairLabel(pair_id=p, n_answers=3, support=1.0,
                  predicates=[PREDS[world.truth[index[p]]]] if world.truth[index[p]] >= 0
                  else ["no_relation"]) for p in mine - have)
    with django_capture_on_commit_callbacks() as committed:
        outcome = planning.top_up(sub.pk, 0, 20, 0.1)
    with mock.patch.object(planning.labels_changed, "send") as announce, \
            mock.patch.object(scoring, "_enqueue"):
        for callback in committed:
            callback()
    assert outcome.outcome == "scoring" and outcome.new_questions == 0
    sub.refresh_from_db()
    assert sub.state == State.SCORING and sub.top_ups == 1
    assert announce.call_args.kwargs["corpus_id"] == world.corpus.pk
    assert "all already labelled" in SubmissionEvent.objects.filter(
        submission=sub).latest("pk").message


@pytest.mark.django_db
@override_settings(KBPO_TOP_UP_ROUNDS=1)
def test_no_top_up_past_the_rounds_or_the_draw_cap() -> None:
    world = _labelled_world()
    sub = world.subs[2]
    assert scoring.top_up_wanted(sub, 12, 0.2) > 0
    assert scoring.top_up_wanted(sub, 12, float("nan")) == 0
    assert scoring.top_up_wanted(sub, planning.MAX_DRAWS, 0.2) == 0
    assert scoring.top_up_wanted(sub, planning.MAX_DRAWS - 5, 0.2) == 5
    Submission.objects.filter(pk=sub.pk).update(top_ups=1)
    sub.refresh_from_db()
    assert scoring.top_up_wanted(sub, 12, 0.2) == 0


@pytest.mark.django_db
def test_a_submission_left_waiting_in_scoring_is_re_driven(
        django_capture_on_commit_callbacks) -> None:
    """A lost top-up message (or a run that failed before marking it scored) must not
    leave a submission in scoring for ever: the periodic re-drive queues a recompute."""
    world = _labelled_world()
    scoring.recompute(world.corpus)
    from django.utils import timezone

    ScoringState.objects.filter(corpus=world.corpus).update(
        scheduled=False, scored_generation=0, generation=0)
    Submission.objects.filter(pk=world.subs[0].pk).update(
        state=State.SCORING, state_changed_at=timezone.now() - scoring.STALE_QUEUE * 2)
    with mock.patch.object(scoring, "_enqueue") as queued, \
            django_capture_on_commit_callbacks(execute=True):
        assert scoring.redrive_scores() >= 1
    assert world.corpus.pk in {c.args[0] for c in queued.call_args_list}
