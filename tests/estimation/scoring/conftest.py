"""Fixtures for the scoring tests."""

from __future__ import annotations

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

