"""Fixtures for the scoring tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.estimation.scoring.scoring_world import World, build_world


@pytest.fixture(autouse=True)
def _scoring_settings(settings) -> None:
    """Fast hashing, mail kept in memory (tasks run inline: tests/conftest.py)."""
    from django.core.cache import cache

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    cache.clear()  # leaderboard fragments are cached per run id, which SQLite may reuse


@pytest.fixture(autouse=True)
def _draws_made_by_the_test(no_planning: None) -> None:
    """These tests draw and label samples themselves, standing in for the crowd."""


@pytest.fixture
def world(db) -> World:
    return build_world()



@pytest.fixture
def scored(world: World) -> World:
    """The small world with its three true pairs labelled and scores computed."""
    from estimation import scoring
    from tests.estimation.scoring.scoring_world import label

    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["wed"], "per:spouse")
    label(world.pairs["work"], "per:employee_or_member_of")
    scoring.recompute(world.corpus)
    return world


@pytest.fixture
def page() -> Iterator[object]:
    """A Chromium page at 1280 x 900, for the researcher-path browser tests."""
    from tests.chromium import launched_chromium

    with launched_chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        pg = context.new_page()
        pg.set_default_timeout(20_000)
        try:
            yield pg
        finally:
            pg.goto("about:blank")  # stop a page's polling before the server stops
            context.close()
