"""Planning one submission never blocks another researcher's upload to its corpus."""

from __future__ import annotations

import pytest

from estimation import planning
from submissions.models import State
from tests.annotations.crowd.helpers import small_world, system
from tests.conftest import held_in_another_connection
from tests.factories import make_submission, make_user


@pytest.fixture(autouse=True)
def crowd_settings(settings) -> None:
    settings.KBPO_CROWD_BACKEND = "simulated"


@pytest.mark.django_db(transaction=True)
def test_planning_does_not_lock_the_corpus(needs_postgres: None,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """_plan took FOR UPDATE with select_related("corpus"), locking the corpus row until
    its sample, questions and HITs were written; every insert referencing the corpus (a
    new upload) waited at COMMIT. Held inside the draw, the plan must block no upload."""
    corpus, pairs = small_world()
    sub = system(corpus, pairs, list(pairs), state=State.PLANNING)
    with held_in_another_connection(
            monkeypatch, planning, "draw_sample",
            lambda: planning.plan_submission(sub.pk).outcome) as outcome:
        other = make_submission(corpus, [], owner=make_user("eve"), name="other",
                                state=State.UPLOADED)
        assert other.pk
    assert outcome and outcome[0] in ("planned", "scoring", "held"), outcome


@pytest.mark.django_db(transaction=True)
def test_a_dead_planner_is_replanned_within_a_minute_a_live_one_never(
        needs_postgres: None, settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed planner's submission sat in `planning` until KBPO_CROWD_REDRIVE_AFTER
    (15 min). A planner holds its row while it draws, so a `planning` row nobody holds
    for KBPO_SUBMISSION_LOST_AFTER seconds has lost its planner; one still held is
    planning, however long it has taken, and is left alone."""
    from submissions.models import Submission

    settings.KBPO_SUBMISSION_LOST_AFTER = 0  # both rows below are past it at once
    settings.KBPO_CROWD_REDRIVE_AFTER = 900
    corpus, pairs = small_world()
    dead = system(corpus, pairs, list(pairs), name="dead", state=State.PLANNING)
    live = system(corpus, pairs, list(pairs)[:1], name="live", state=State.INGESTED)
    with held_in_another_connection(monkeypatch, planning, "draw_sample",
                                    lambda: planning.plan_submission(live.pk)):
        assert Submission.objects.filter(state=State.PLANNING).count() == 2
        enqueued: list[int] = []
        monkeypatch.setattr(planning, "enqueue_plan", enqueued.append)
        out = planning.redrive_planning()
        assert (out.replanned, out.failed, enqueued) == (1, 0, [dead.pk])
    dead.refresh_from_db()
    assert dead.redrives == 1
