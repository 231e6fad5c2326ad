"""Planning one submission never blocks another researcher's upload to its corpus."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from estimation import planning
from submissions.models import State
from tests.annotations.crowd.helpers import small_world, system
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
    inside, release = threading.Event(), threading.Event()
    real = planning.draw_sample

    def held(*args, **kwargs):  # type: ignore[no-untyped-def]
        inside.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(planning, "draw_sample", held)
    outcome: list[object] = []

    def plan() -> None:
        try:
            outcome.append(planning.plan_submission(sub.pk).outcome)
        finally:
            connections.close_all()

    thread = threading.Thread(target=plan)
    thread.start()
    try:
        assert inside.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '3s'")
        try:
            other = make_submission(corpus, [], owner=make_user("eve"), name="other",
                                    state=State.UPLOADED)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = 0")
        assert other.pk
    finally:
        release.set()
        thread.join(60)
    assert outcome and outcome[0] in ("planned", "scoring", "held"), outcome
