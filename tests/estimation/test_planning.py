"""Planning: sample once, questions per unlabelled pair, HITs under the budget, states."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pytest
from django.utils import timezone

from annotations.crowd import budget
from annotations.models import (
    Hit,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    SampleDraw,
    SubmissionBudget,
)
from annotations.signals import labels_changed
from estimation import planning
from submissions.models import State
from submissions.services import submission_ingested
from tests.annotations.crowd.helpers import answer, small_world, system
from tests.factories import AFTER_CROWD, Submission

# Celery tasks run inline: the data they need is in the test transaction.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_unless_worker")]


@pytest.fixture(autouse=True)
def crowd_settings(settings):
    settings.KBPO_CROWD_BACKEND = "simulated"
    settings.KBPO_QUESTIONS_PER_HIT = 3
    settings.KBPO_REWARD_PER_QUESTION_USD = 0.05
    settings.KBPO_ANSWERS_PER_QUESTION = 3


@pytest.fixture
def received():
    got: list[int] = []

    def receiver(sender, corpus_id, **kw):
        got.append(corpus_id)

    labels_changed.connect(receiver, dispatch_uid="test-planning-labels")
    yield got
    labels_changed.disconnect(dispatch_uid="test-planning-labels")


def test_plan_draws_once_then_questions_and_hits(django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world()
    sub = system(corpus, pairs, list(pairs))
    with django_capture_on_commit_callbacks(execute=True):
        result = planning.plan_submission(sub.pk)
    sub.refresh_from_db()
    assert result.outcome == "planned" and sub.state == State.ANNOTATING
    draws = list(SampleDraw.objects.filter(submission=sub).values_list("index", "instance_id"))
    assert len(draws) == result.draws > 7  # a first system needs hundreds of draws
    assert [i for i, _ in draws] == list(range(len(draws)))
    assert Question.objects.filter(requested_by=sub, state=QuestionState.OPEN).count() == 7
    hits = list(Hit.objects.filter(submission=sub).order_by("pk"))
    assert [h.items.count() for h in hits] == [3, 3, 1]
    assert [h.reward for h in hits] == [Decimal("0.15"), Decimal("0.15"), Decimal("0.05")]
    assert [h.cost_estimate for h in hits] == [Decimal("0.45"), Decimal("0.45"),
                                               Decimal("0.15")]
    assert all(h.state == HitState.POSTED and h.batch_id == hits[0].batch_id for h in hits)
    assert budget.spend(sub).committed == Decimal("1.05")
    assert "7 new questions in 3 HITs" in sub.events.last().message
    # Re-running (a redelivered task, an operator's re-plan) changes nothing.
    again = planning.plan_submission(sub.pk)
    assert again.new_questions == 0 and again.new_hits == 0
    assert list(SampleDraw.objects.filter(submission=sub).values_list(
        "index", "instance_id")) == draws
    assert Hit.objects.filter(submission=sub).count() == 3


def test_labelled_pairs_go_straight_to_scoring(received, django_capture_on_commit_callbacks):
    corpus, pairs = small_world()
    for name in ("born", "wed"):
        PairLabel.objects.create(pair=pairs[name], predicates=["no_relation"], support=1,
                                 n_answers=3)
    sub = system(corpus, pairs, ["born", "wed"])
    with django_capture_on_commit_callbacks(execute=True):
        result = planning.plan_submission(sub.pk)
    sub.refresh_from_db()
    assert result.outcome == "scoring" and sub.state in AFTER_CROWD
    assert received == [corpus.pk]
    assert not Question.objects.exists() and not Hit.objects.exists()
    assert "already have crowd labels" in sub.events.get(to_state=State.SCORING).message


def test_shared_pairs_wait_for_one_open_question(received,
                                                 django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world()
    first = system(corpus, pairs, ["born", "wed"], name="first")
    second = system(corpus, pairs, ["born", "wed", "work"], name="second")
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(first.pk)
        result = planning.plan_submission(second.pk)
    assert result.new_questions == 1  # only "work" is new; the others are already asked
    assert Question.objects.filter(pair=pairs["born"]).count() == 1
    for hit in Hit.objects.all():
        for w in ("w1", "w2", "w3"):
            with django_capture_on_commit_callbacks(execute=True):
                answer(hit, w, lambda q: ["no_relation"])
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state in AFTER_CROWD and second.state in AFTER_CROWD
    assert PairLabel.objects.count() == 3 and set(received) == {corpus.pk}


def test_budget_cap_holds_the_work_and_says_why(django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world()
    sub = system(corpus, pairs, list(pairs))
    SubmissionBudget.objects.create(submission=sub, cap_usd=Decimal("0.50"))
    with django_capture_on_commit_callbacks(execute=True):
        result = planning.plan_submission(sub.pk)
    sub.refresh_from_db()
    assert sub.state == State.ANNOTATING and result.outcome == "held"
    # The first HIT (0.45) fits; the second would pass the $0.50 cap; the last (0.15) too.
    states = list(Hit.objects.filter(submission=sub).order_by("pk").values_list("state",
                                                                                "post_error"))
    assert states[0] == (HitState.POSTED, "")
    assert states[1][0] == states[2][0] == HitState.PENDING
    assert "submission's budget ($0.50)" in states[1][1] and states[1][1].startswith("Held")
    assert "Crowd work on hold" in sub.events.last().message
    assert budget.spend(sub).committed == Decimal("0.45") <= budget.spend(sub).cap
    # The operator raises the budget; the periodic re-drive posts the rest.
    SubmissionBudget.objects.filter(submission=sub).update(cap_usd=Decimal("5"))
    Hit.objects.update(created_at=timezone.now() - dt.timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        planning.redrive_planning()
    assert not Hit.objects.filter(state=HitState.PENDING).exists()
    assert budget.spend(sub).committed == Decimal("1.05")


def test_global_cap_applies_too(settings, django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world()
    budget.BudgetSettings.current()
    budget.BudgetSettings.objects.update(cap_usd=Decimal("0.10"))
    sub = system(corpus, pairs, ["born"])
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hit = Hit.objects.get()
    assert hit.state == HitState.PENDING and "global budget ($0.10)" in hit.post_error


def test_failure_is_kept_never_stuck_in_planning(monkeypatch) -> None:
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born"])

    def broken(sub):
        raise RuntimeError("estimation exploded")

    monkeypatch.setattr(planning, "draw_sample", broken)
    assert planning.plan_submission(sub.pk).outcome == "failed"
    sub.refresh_from_db()
    assert sub.state == State.FAILED and "estimation exploded" in sub.error
    assert "Planning failed: RuntimeError" in sub.events.last().message


def test_ingested_signal_starts_planning(django_capture_on_commit_callbacks) -> None:
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed"])
    with django_capture_on_commit_callbacks(execute=True):
        submission_ingested.send(sender=Submission, submission=sub)
    sub.refresh_from_db()
    assert sub.state == State.ANNOTATING
    assert Hit.objects.filter(submission=sub, state=HitState.POSTED).exists()


def test_redrive_replans_stuck_planning_and_gives_up(settings,
                                                     django_capture_on_commit_callbacks):
    settings.KBPO_SUBMISSION_MAX_ATTEMPTS = 1
    corpus, pairs = small_world()
    stuck = system(corpus, pairs, ["born"], name="stuck", state=State.PLANNING)
    hopeless = system(corpus, pairs, ["wed"], name="hopeless", state=State.PLANNING)
    old = timezone.now() - dt.timedelta(hours=2)
    Submission.objects.update(state_changed_at=old)
    Submission.objects.filter(pk=hopeless.pk).update(redrives=1)
    with django_capture_on_commit_callbacks(execute=True):
        out = planning.redrive_planning()
    stuck.refresh_from_db()
    hopeless.refresh_from_db()
    assert out.replanned == 1 and out.failed == 1
    assert stuck.state == State.ANNOTATING
    assert hopeless.state == State.FAILED and "gave up" in hopeless.events.last().message


def test_a_system_smaller_than_its_sample_is_asked_about_whole(
        django_capture_on_commit_callbacks, monkeypatch) -> None:
    # 14 with-replacement draws over three pairs miss one now and then (which depends on
    # the seed, i.e. the submission id): here every draw lands on the first instance.
    # Every pair is asked about anyway, so none stays outside the labels and the
    # precision of such a system ends exact.
    monkeypatch.setattr(planning, "sample_draws",
                        lambda probs, n, rng: np.zeros(n, dtype=np.int64))
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work"])
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    drawn = set(SampleDraw.objects.filter(submission=sub)
                .values_list("instance__pair_id", flat=True))
    mine = {pairs[n].pk for n in ("born", "wed", "work")}
    assert len(drawn) == 1 and drawn < mine  # the draws themselves are kept as drawn
    assert set(Question.objects.filter(requested_by=sub)
               .values_list("pair_id", flat=True)) == mine
    # A system larger than its sample keeps to its drawn pairs.
    assert planning.census_pairs(sub, 2) == set()
    assert planning.census_pairs(sub, 3) == mine


def test_draws_are_seeded_by_the_submission_and_the_salt(settings) -> None:
    """Unsalted, a submission's draws are those of its id alone (as before the salt);
    salted, two worlds whose submissions share an id draw differently, each the same
    way every time."""
    settings.KBPO_SAMPLE_SALT = 0
    plain = planning.draw_rng(3).random(5)
    np.testing.assert_array_equal(plain, np.random.default_rng(3).random(5))
    settings.KBPO_SAMPLE_SALT = 1001
    salted = planning.draw_rng(3).random(5)
    np.testing.assert_array_equal(salted, planning.draw_rng(3).random(5))
    settings.KBPO_SAMPLE_SALT = 1002
    assert not np.array_equal(salted, planning.draw_rng(3).random(5))
    assert not np.array_equal(salted, plain)
