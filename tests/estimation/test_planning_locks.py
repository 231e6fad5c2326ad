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
