"""Fixtures for the scoring tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scoring.scoring_world import World, build_world


@pytest.fixture(autouse=True)
def eager_tasks(request: pytest.FixtureRequest, settings) -> Iterator[None]:
    """Tasks run inline unless the test drives a real worker (marker `worker`)."""
    from kbpo.celery import app

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    from django.core.cache import cache

    cache.clear()  # leaderboard fragments are cached per run id, which SQLite may reuse
    if request.node.get_closest_marker("worker"):
        yield
        return
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = old


@pytest.fixture(autouse=True)
def _draws_made_by_the_test(no_planning: None) -> None:
    """These tests draw and label samples themselves, standing in for the crowd."""


@pytest.fixture
def world(db) -> World:
    return build_world()

