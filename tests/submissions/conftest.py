"""Fixtures for submission tests: a small corpus, users, stored submissions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile

from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus
from submissions.models import Submission, SubmissionEvent

from .kb import write_corpus

PASSWORD = "correct-horse-battery-9"


@pytest.fixture(autouse=True)
def media_root(request: pytest.FixtureRequest, tmp_path: Path, settings) -> Path:
    # Password hashing dominates these tests otherwise; security is not under test here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # A separate worker process reads files from its own (default) MEDIA_ROOT.
    if not request.node.get_closest_marker("worker"):
        settings.MEDIA_ROOT = tmp_path / "media"
    return Path(settings.MEDIA_ROOT)


@pytest.fixture(autouse=True)
def _inline_tasks(eager_unless_worker: None) -> None:
    """With a broker configured (CI), `.delay` would send tasks to Redis while the test's
    data is uncommitted: run them inline unless the test drives a real worker."""


@pytest.fixture(autouse=True)
def _ingestion_only(no_planning: None) -> None:
    """Ingestion is tested on its own, without the crowd planner that follows it."""


@pytest.fixture
def corpus(db, tmp_path: Path) -> Corpus:
    load_corpus("tiny", write_corpus(tmp_path / "tiny.jsonl"), workers=1)
    return Corpus.objects.get(tag="tiny")


@pytest.fixture
def user(db) -> User:
    return User.objects.create_user("ada", "ada@example.org", PASSWORD)


@pytest.fixture
def other(db) -> User:
    return User.objects.create_user("eve", "eve@example.org", PASSWORD)


@pytest.fixture
def stored(user: User, corpus: Corpus) -> Callable[..., Submission]:
    """Store bytes as an `uploaded` submission without enqueuing anything."""

    def make(data: bytes, owner: User | None = None, **fields: object) -> Submission:
        sub = Submission(owner=owner or user, corpus=corpus, name=fields.pop("name", "sys"),
                         compressed=data[:2] == b"\x1f\x8b", file_size=len(data), **fields)
        sub.file.save("kb.tsv", ContentFile(data), save=False)
        sub.save()
        SubmissionEvent.objects.create(submission=sub, to_state="uploaded")
        return sub

    return make
