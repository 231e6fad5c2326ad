"""Property tests: garbage never crashes the task or the API, and ingestion is all or nothing.

Each generated example runs inside a savepoint that is rolled back, so rows never pile up
from one example to the next; the test's fixtures (user, corpus) are made once, outside
the `@given` function, which Hypothesis then calls once per example.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions.models import RelationInstance, Submission, SubmissionEntity, SubmissionMention
from submissions.processing import run_ingestion

from .kb import to_bytes, valid_lines

EXAMPLES = settings(max_examples=60)


@contextmanager
def rolled_back() -> Iterator[None]:
    """One example's database work, undone afterwards (as if it never ran)."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def assert_all_or_nothing(sub: Submission, outcome: str) -> None:
    sub.refresh_from_db()
    assert outcome in ("ingested", "rejected"), (outcome, sub.error)
    rows = (RelationInstance.objects.filter(submission=sub).count(),
            SubmissionMention.objects.filter(submission=sub).count(),
            SubmissionEntity.objects.filter(submission=sub).count())
    if outcome == "ingested":
        assert sub.state == "ingested" and sub.n_errors == 0
        assert rows == (sub.n_relations, sub.n_mentions, sub.n_entities)
        assert sub.n_relations > 0
    else:
        assert sub.state == "rejected" and sub.n_errors > 0 and rows == (0, 0, 0)
        assert any(p["severity"] == "error" for p in sub.report)


@pytest.mark.django_db
def test_random_bytes_never_crash_the_task(stored: Callable[..., Submission]) -> None:
    @EXAMPLES
    @given(data=st.binary(max_size=2000))
    def example(data: bytes) -> None:
        with rolled_back():
            sub = stored(data)
            assert_all_or_nothing(sub, run_ingestion(sub.pk))

    example()


def _mutate(lines: list[str], ops: list[tuple[int, int, int, str]]) -> list[str]:
    lines = list(lines)
    for kind, i, j, text in ops:
        if not lines:
            break
        i %= len(lines)
        j %= len(lines)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(j, lines[i])
        elif kind == 2:
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            lines[i] = lines[i][: j % (len(lines[i]) + 1)]
        elif kind == 4:
            k = j % (len(lines[i]) + 1)
            lines[i] = lines[i][:k] + text + lines[i][k + 1:]
        elif kind == 5:
            cols = lines[i].split("\t")
            a, b = i % len(cols), j % len(cols)
            cols[a], cols[b] = cols[b], cols[a]
            lines[i] = "\t".join(cols)
        else:
            lines.insert(i, text)
    return lines


MUTATIONS = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 10_000), st.integers(0, 10_000),
              st.text(alphabet=st.sampled_from(list('\t:"-,.0123456789ED \\xé')), max_size=8)),
    min_size=1, max_size=5)


@pytest.mark.django_db
def test_mutated_valid_files_ingest_fully_or_not_at_all(
        stored: Callable[..., Submission]) -> None:
    @EXAMPLES
    @given(ops=MUTATIONS, gz=st.booleans())
    def example(ops: list, gz: bool) -> None:
        with rolled_back():
            sub = stored(to_bytes(_mutate(valid_lines(), ops), gz=gz))
            assert_all_or_nothing(sub, run_ingestion(sub.pk))

    example()


@pytest.mark.django_db
@pytest.mark.parametrize("data", [b"\x00run\x00\n:E1\ttype\tPER\n", b"run\n:E\x001\ttype\tPER\n",
                                  b"\xff\xfe\x00\x00", b"\x1f\x8b\x08\x00"])
def test_nul_and_binary_junk(stored: Callable[..., Submission], user: User, data: bytes
                             ) -> None:
    sub = stored(data)
    assert_all_or_nothing(sub, run_ingestion(sub.pk))
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(user)
    resp = client.post("/api/submissions/", {
        "name": "x", "corpus": "tiny", "file": SimpleUploadedFile("x.tsv", data)},
        format="multipart")
    assert resp.status_code in (201, 400), resp.content


@pytest.mark.django_db
def test_api_upload_of_garbage_is_never_a_500(user: User, corpus: Corpus) -> None:
    client = APIClient(raise_request_exception=False)
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    @settings(max_examples=30)
    @given(data=st.binary(max_size=600), name=st.text(max_size=120))
    def example(data: bytes, name: str) -> None:
        with rolled_back():  # also keeps the user under the upload limits
            resp = client.post("/api/submissions/", {
                "name": name, "corpus": "tiny", "file": SimpleUploadedFile("x.tsv", data)},
                format="multipart")
            assert resp.status_code in (201, 400), resp.content
            if resp.status_code == 400:
                assert resp.json()

    example()
