"""What an upload is answered: 422 with the line report when validation rejects it
inside the request, 409 for an identical file before it uses a slot."""

from __future__ import annotations

import gzip

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions.models import Submission
from submissions.services import quota

from .kb import to_bytes, valid_lines


def _api(user: User) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _post(api: APIClient, data: bytes, capture, name: str = "kb.tsv", corpus: str = "tiny"):
    with capture(execute=True):
        return api.post("/api/submissions/", {"name": "s", "corpus": corpus,
                                              "file": SimpleUploadedFile(name, data)},
                        format="multipart")


@pytest.mark.django_db(transaction=True)
def test_rejected_file_is_422_with_the_line_report(user: User, corpus: Corpus) -> None:
    # Committed for real: eager validation runs inside the request, as without a worker.
    bad = to_bytes([*valid_lines(), ":E1\tper:spouse\t:E404\tD1:0-8\t1.0"])
    api = _api(user)
    resp = api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                          "file": SimpleUploadedFile("kb.tsv", bad)},
                    format="multipart")
    assert resp.status_code == 422, resp.content
    body = resp.json()
    assert body["state"] == "rejected" and body["n_errors"] >= 1
    rows = body["report"]
    assert any(r["line"] == len(valid_lines()) + 1 for r in rows), rows
    assert quota(user, corpus).used_today == 0  # rejected uploads cost nothing


@pytest.mark.django_db
def test_identical_upload_is_flagged_before_it_uses_a_slot(
        user: User, corpus: Corpus, settings, django_capture_on_commit_callbacks) -> None:
    settings.KBPO_SUBMISSION_DAILY_LIMIT = 5
    api = _api(user)
    data = to_bytes(valid_lines())
    first = _post(api, data, django_capture_on_commit_callbacks)
    assert first.status_code == 201
    # The same content gzipped is the same KB.
    again = _post(api, gzip.compress(data), django_capture_on_commit_callbacks, "kb.tsv.gz")
    assert again.status_code == 409
    assert again.json()["duplicate_of"] == first.json()["id"]
    assert again.json()["code"] == "duplicate"
    assert quota(user, corpus).used_today == 1 and Submission.objects.count() == 1
    # The web form says so on the file field.
    client = Client()
    client.force_login(user)
    page = client.post(reverse("submission-new"), {
        "name": "again", "corpus": corpus.tag, "file": SimpleUploadedFile("kb.tsv", data)})
    html = page.content.decode()
    assert page.status_code == 409 and "identical to your submission" in html, html[-3000:]
    # Withdrawn, it may be submitted again; another user's identical file is not a duplicate.
    api.post(f"/api/submissions/{first.json()['id']}/withdraw/")
    assert _post(api, data, django_capture_on_commit_callbacks).status_code == 201
    other = User.objects.create_user("zed", password="pw-zed-123456")
    assert _post(_api(other), data, django_capture_on_commit_callbacks).status_code == 201


@pytest.mark.django_db
def test_a_rejected_file_may_come_back_with_drop_invalid(
        user: User, corpus: Corpus, django_capture_on_commit_callbacks) -> None:
    """The form tells a rejected uploader to tick drop-invalid; sending the same file
    again with it was refused as a duplicate of the rejected submission."""
    api = _api(user)
    data = to_bytes([*valid_lines(), ":E9\ttype\tANIMAL"])
    first = _post(api, data, django_capture_on_commit_callbacks)
    assert Submission.objects.get(pk=first.json()["id"]).state == "rejected"
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post("/api/submissions/", {
            "name": "sys", "corpus": corpus.tag, "drop_invalid": "true",
            "file": SimpleUploadedFile("kb.tsv", data)}, format="multipart")
    assert again.status_code == 201, again.content
    sub = Submission.objects.get(pk=again.json()["id"])
    assert sub.state == "ingested" and sub.n_dropped == 1
    # The accepted one is a duplicate from now on.
    assert _post(api, data, django_capture_on_commit_callbacks).json()["duplicate_of"] == sub.pk


@pytest.mark.django_db
def test_problem_table_is_paged_with_full_downloads(user: User, stored) -> None:
    rows = [{"line": i + 2, "code": "UNKNOWN_ENTITY", "severity": "error",
             "message": f"problem {i}", "hint": "fix it"} for i in range(120)]
    sub = stored(b"x\n")
    Submission.objects.filter(pk=sub.pk).update(state="rejected", report=rows,
                                                report_counts={"UNKNOWN_ENTITY": 120},
                                                n_errors=120)
    client = Client()
    client.force_login(user)
    url = reverse("submission-detail", args=[sub.pk])
    first = client.get(url).content.decode()
    assert first.count("problem ") == 50 and "problem 49<" in first and "problem 50<" not in first
    assert "next →" in first and "problems 1–50 of 120" in first
    last = client.get(url, {"problems": 3}).content.decode()
    assert last.count("problem ") == 20 and "problem 119<" in last and "next →" not in last
    assert client.get(url, {"problems": "zz"}).status_code == 200  # a bad page: the first
    tsv = client.get(reverse("submission-report-tsv", args=[sub.pk])).content.decode()
    assert tsv.count("\n") == 121  # header + every problem
    data = client.get(reverse("submission-report-json", args=[sub.pk])).json()
    assert len(data["problems"]) == 120
