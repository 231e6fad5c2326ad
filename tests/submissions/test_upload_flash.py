"""The message after an upload says where the submission is now. Without a broker the
whole pipeline runs inside the upload request, so "Validation starts in a moment" sat
above submissions already ingested, rejected or scored."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from kbpo.core.models import Corpus
from submissions.models import State, Submission

from .kb import to_bytes, valid_lines


def upload(user: User, data: bytes) -> tuple[Submission, list[str]]:
    client = Client()
    client.force_login(user)
    resp = client.post("/submissions/new/", {"name": "s", "corpus": "tiny",
                                             "file": SimpleUploadedFile("kb.tsv", data)},
                       follow=True)
    assert resp.status_code == 200
    return Submission.objects.get(), [str(m) for m in resp.context["messages"]]


@pytest.mark.django_db(transaction=True)
def test_the_flash_names_the_state_the_upload_reached(user: User, corpus: Corpus) -> None:
    sub, flashes = upload(user, to_bytes(valid_lines()))
    assert sub.state == State.INGESTED  # (this folder runs without the planner)
    assert len(flashes) == 1 and "Validation starts in a moment" not in flashes[0]
    assert flashes[0].startswith("Uploaded. Your file was accepted.")


@pytest.mark.django_db(transaction=True)
def test_a_rejected_upload_says_so(user: User, corpus: Corpus) -> None:
    lines = valid_lines()
    lines.insert(2, ":E1\tno:such_predicate\t:E2\tD1:0-3")
    sub, flashes = upload(user, to_bytes(lines))
    assert sub.state == State.REJECTED
    assert flashes == ["Uploaded, but the file was rejected: the validation report below "
                       "lists what to fix."]
