"""Pages, API, authorization, limits, the submit command and the OpenAPI schema."""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions.models import Submission
from submissions.processing import run_ingestion
from submissions.services import quota

from .conftest import PASSWORD
from .kb import to_bytes, valid_lines


def upload(name: str = "kb.tsv", data: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data if data is not None else to_bytes(valid_lines()))


def api_for(user: User) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_upload_form_ingests_and_detail_shows_everything(
        logged_in: Client, corpus: Corpus, django_capture_on_commit_callbacks) -> None:
    page = logged_in.get(reverse("submission-new"))
    assert page.status_code == 200 and b"5 of 5" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        resp = logged_in.post(reverse("submission-new"), {
            "name": "<b>My system</b>", "corpus": "tiny", "file": upload(),
            "description": "desc", "method_description": "<script>alert(1)</script>",
            "paper_url": "https://example.org/paper", "public": ""})
    assert resp.status_code == 302
    sub = Submission.objects.get()
    assert (sub.state, sub.original_name, sub.run_id) == ("ingested", "kb.tsv", "test_run_1")
    detail = logged_in.get(resp["Location"])
    html = detail.content.decode()
    assert "&lt;b&gt;My system&lt;/b&gt;" in html and "<script>alert(1)" not in html
    for needle in ("per:place_of_birth", "UNSUPPORTED_PREDICATE", "validating", "Timeline",
                   "What happens next", "Withdraw"):
        assert needle in html, needle
    listing = logged_in.get(reverse("submission-list")).content.decode()
    assert "ingested" in listing and "&lt;b&gt;My system" in listing
    assert "4 of 5" in logged_in.get(reverse("submission-new")).content.decode()
    tsv = logged_in.get(reverse("submission-report-tsv", args=[sub.pk]))
    assert tsv.content.decode().splitlines()[1].startswith("31\tUNSUPPORTED_PREDICATE")
    js = logged_in.get(reverse("submission-report-json", args=[sub.pk])).json()
    assert js["counts"] == {"UNSUPPORTED_PREDICATE": 1}
    status = logged_in.get(reverse("submission-status", args=[sub.pk])).json()
    assert status["state"] == "ingested" and status["final"] is False
    assert b"".join(logged_in.get(reverse("submission-file", args=[sub.pk]))
                    .streaming_content) == to_bytes(valid_lines())


@pytest.mark.django_db
def test_pending_detail_page_polls(logged_in: Client, stored: Callable[..., Submission]) -> None:
    sub = stored(b"run\n")
    html = logged_in.get(reverse("submission-detail", args=[sub.pk])).content.decode()
    assert "submission_status.js" in html and "data-status-url" in html
    run_ingestion(sub.pk)  # "run" alone has no relations: rejected, a final state
    html = logged_in.get(reverse("submission-detail", args=[sub.pk])).content.decode()
    assert "rejected" in html and "submission_status.js" not in html


@pytest.mark.django_db
def test_upload_form_errors_name_the_field(logged_in: Client, corpus: Corpus,
                                           settings) -> None:
    resp = logged_in.post(reverse("submission-new"), {"name": "", "corpus": "tiny",
                                                      "file": upload(data=b"")})
    form = resp.context["form"]
    # The status tells a script what happened, as the API's does.
    assert resp.status_code == 400 and set(form.errors) >= {"name", "file"}
    settings.KBPO_SUBMISSION_MAX_BYTES = 100
    resp = logged_in.post(reverse("submission-new"), {"name": "x", "corpus": "tiny",
                                                      "file": upload()})
    assert resp.status_code == 413 and "limit" in resp.context["form"].errors["file"][0]
    settings.KBPO_SUBMISSION_MAX_BYTES = 10**6
    settings.KBPO_SUBMISSION_DAILY_LIMIT = 0
    resp = logged_in.post(reverse("submission-new"), {"name": "x", "corpus": "tiny",
                                                      "file": upload()})
    assert resp.status_code == 429 and "submissions allowed" in resp.content.decode()
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_withdraw_needs_post_and_confirmation(logged_in: Client,
                                              stored: Callable[..., Submission]) -> None:
    sub = stored(to_bytes(valid_lines()))
    run_ingestion(sub.pk)
    url = reverse("submission-withdraw", args=[sub.pk])
    assert b"cannot be undone" in logged_in.get(url).content
    assert Submission.objects.get(pk=sub.pk).state == "ingested"
    assert logged_in.post(url).status_code == 302
    assert Submission.objects.get(pk=sub.pk).state == "withdrawn"


@pytest.mark.django_db
def test_private_submission_is_invisible_to_others_everywhere(
        client: Client, other: User, stored: Callable[..., Submission]) -> None:
    sub = stored(to_bytes(valid_lines()), name="kb-secret-name")
    run_ingestion(sub.pk)
    client.force_login(other)
    for name in ("submission-detail", "submission-status", "submission-report-tsv",
                 "submission-report-json", "submission-file", "submission-withdraw"):
        assert client.get(reverse(name, args=[sub.pk])).status_code == 404, name
    assert client.post(reverse("submission-withdraw", args=[sub.pk])).status_code == 404
    assert b"kb-secret-name" not in client.get(reverse("submission-list")).content
    api = api_for(other)
    assert api.get(f"/api/submissions/{sub.pk}/").status_code == 404
    assert api.post(f"/api/submissions/{sub.pk}/withdraw/").status_code == 404
    assert api.get("/api/submissions/").json() == []
    assert Submission.objects.get(pk=sub.pk).state == "ingested"
    # Anonymous users see nothing either.
    anon = Client()
    assert anon.get(reverse("submission-detail", args=[sub.pk])).status_code == 302
    assert APIClient().get(f"/api/submissions/{sub.pk}/").status_code in (401, 403)
    # A public submission can be read, but still not withdrawn or downloaded, by others.
    Submission.objects.filter(pk=sub.pk).update(public=True)
    assert client.get(reverse("submission-detail", args=[sub.pk])).status_code == 200
    assert api.get(f"/api/submissions/{sub.pk}/").status_code == 200
    assert client.get(reverse("submission-file", args=[sub.pk])).status_code == 404
    assert client.post(reverse("submission-withdraw", args=[sub.pk])).status_code == 404
    assert api.post(f"/api/submissions/{sub.pk}/withdraw/").status_code == 404
    assert Submission.objects.get(pk=sub.pk).state == "ingested"


@pytest.mark.django_db
def test_staff_sees_private_submissions(client: Client, stored: Callable[..., Submission]
                                        ) -> None:
    sub = stored(b"run\n")
    staff = User.objects.create_user("op", "op@example.org", PASSWORD, is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("submission-detail", args=[sub.pk])).status_code == 200
    assert api_for(staff).get(f"/api/submissions/{sub.pk}/").status_code == 200


@pytest.mark.django_db
def test_api_upload_list_detail_withdraw(user: User, corpus: Corpus,
                                         django_capture_on_commit_callbacks) -> None:
    api = api_for(user)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post("/api/submissions/", {
            "name": "sys", "corpus": "tiny", "public": "true",
            "file": upload("kb.tsv.gz", to_bytes(valid_lines(), gz=True))}, format="multipart")
    assert resp.status_code == 201, resp.content
    sid = resp.json()["id"]
    assert resp.json()["state"] == "uploaded" and resp.json()["compressed"] is True
    detail = api.get(f"/api/submissions/{sid}/").json()
    assert detail["state"] == "ingested" and detail["n_relations"] == 8
    assert detail["stats"]["instances_by_predicate"]["per:title"] == 1
    assert detail["report"][0]["code"] == "UNSUPPORTED_PREDICATE"
    assert [e["to_state"] for e in detail["events"]] == ["uploaded", "validating", "ingested"]
    assert [s["id"] for s in api.get("/api/submissions/").json()] == [sid]
    assert api.post(f"/api/submissions/{sid}/withdraw/").json()["state"] == "withdrawn"
    assert api.post(f"/api/submissions/{sid}/withdraw/").status_code == 409


@pytest.mark.django_db
def test_api_errors_are_json_and_name_the_field(user: User, corpus: Corpus) -> None:
    api = api_for(user)
    resp = api.post("/api/submissions/", {"name": "x", "corpus": "nope",
                                          "file": upload(data=b"\x1f\x8bbroken")},
                    format="multipart")
    assert resp.status_code == 400
    body = resp.json()
    assert set(body) == {"corpus", "file"} and "corrupt" in body["file"][0]
    assert api.post("/api/submissions/", {}, format="multipart").json().keys() >= {
        "name", "corpus", "file"}


@pytest.mark.django_db
def test_limits_count_everything_but_rejected(user: User, corpus: Corpus, settings,
                                              django_capture_on_commit_callbacks) -> None:
    settings.KBPO_SUBMISSION_DAILY_LIMIT = 2
    settings.KBPO_SUBMISSION_TOTAL_LIMIT = 3
    api = api_for(user)

    answers = []

    def post(data: bytes) -> int:
        with django_capture_on_commit_callbacks(execute=True):
            answers.append(api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                                          "file": upload(data=data)},
                                    format="multipart"))
        return answers[-1].status_code

    def kb(run: str) -> bytes:  # distinct files: identical ones are refused as duplicates
        return to_bytes([run, *valid_lines()[1:]])

    # Rejected (no relations): does not count. Validation runs when the captured commit
    # callbacks do, after the answer (the asynchronous case): 201, not 422.
    assert post(b"run\n:E1\ttype\tPER\n") == 201
    assert post(kb("r1")) == 201
    sub = Submission.objects.filter(state="ingested").get()
    api.post(f"/api/submissions/{sub.pk}/withdraw/")  # withdrawn still counts
    assert post(kb("r2")) == 201
    resp_code = post(kb("r3"))
    assert resp_code == 429
    q = quota(user, corpus)
    # The 429 says when the next daily slot opens (issue 41: Retry-After on every 429).
    wait = int(answers[-1]["Retry-After"])
    assert 0 < wait <= 24 * 3600 + 1
    assert (q.used_today, q.left_today, q.left_total) == (2, 0, 1)
    assert q.next_slot_at is not None
    Submission.objects.update(created_at=sub.created_at.replace(year=2000))
    assert post(kb("r4")) == 201  # a new day, one left in total
    assert post(kb("r5")) == 429  # total limit


@pytest.mark.django_db(transaction=True)
def test_submit_command(user: User, corpus: Corpus, tmp_path: Path) -> None:
    # Committed transactions: the command's on_commit runs the (eager) task before it
    # reports, as it does from a shell.
    path = tmp_path / "kb.tsv"
    path.write_bytes(to_bytes(valid_lines()))
    out = io.StringIO()
    call_command("submit", str(path), user="ada", corpus="tiny", name="cli", stdout=out)
    assert "ingested" in out.getvalue() and "8 relations" in out.getvalue()
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"run\n:E1\ttype\tXYZ\n")
    with pytest.raises(CommandError, match="rejected"):
        call_command("submit", str(bad), user="ada", corpus="tiny", name="cli",
                     stdout=io.StringIO())
    with pytest.raises(CommandError, match="no corpus"):
        call_command("submit", str(path), user="ada", corpus="zzz", name="x")


@pytest.mark.django_db
def test_format_page_lists_every_code(client: Client) -> None:
    from submissions.kbformat import CODES

    html = client.get(reverse("submission-format")).content.decode()
    assert all(code in html for code in CODES)


def test_openapi_schema_has_no_warnings(tmp_path: Path) -> None:
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    assert "/api/submissions/{id}/withdraw/" in text and "multipart/form-data" in text


@pytest.mark.django_db
def test_oversized_upload_is_refused_while_streaming(user: User, corpus: Corpus,
                                                     settings) -> None:
    """The upload handler stops storing a file once it passes the cap."""
    from django.core.files.uploadhandler import StopUpload
    from django.test import RequestFactory

    from submissions.uploads import CappedUploadHandler, upload_refused_message

    settings.KBPO_SUBMISSION_MAX_BYTES = 1000
    request = RequestFactory().post("/")
    handler = CappedUploadHandler(request)
    assert handler.receive_data_chunk(b"x" * 600, 0) == b"x" * 600
    with pytest.raises(StopUpload):
        handler.receive_data_chunk(b"x" * 600, 600)
    assert "1,000 bytes" in upload_refused_message(request)

    big = upload(data=b"run\n" + b"x" * 5000)
    resp = api_for(user).post("/api/submissions/", {"name": "x", "corpus": "tiny",
                                                    "file": big}, format="multipart")
    assert resp.status_code == 413 and "1,000 bytes" in resp.json()["file"][0]
    # Small as sent, over the cap once decompressed: 413 as well.
    bomb = upload("kb.tsv.gz", gzip.compress(b"run\n" + b"x" * 5000))
    resp = api_for(user).post("/api/submissions/", {"name": "x", "corpus": "tiny",
                                                    "file": bomb}, format="multipart")
    assert resp.status_code == 413 and "1,000 bytes" in resp.json()["file"][0]
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_many_files_in_one_request_count_together(user: User, corpus: Corpus,
                                                  settings) -> None:
    """Each file under the cap, together over it: the request's files were spooled whole
    (up to a hundred of them), so the cap did not bound the disk one request takes."""
    settings.KBPO_SUBMISSION_MAX_BYTES = 1000
    files = {f"extra{i}": upload(data=b"x" * 600) for i in range(3)}
    resp = api_for(user).post("/api/submissions/", {
        "name": "x", "corpus": "tiny", "file": upload(data=b"run\n" + b"x" * 500), **files},
        format="multipart")
    assert resp.status_code == 413 and "1,000 bytes" in resp.json()["file"][0]
    client = Client()
    client.force_login(user)
    page = client.post(reverse("submission-new"), {
        "name": "x", "corpus": "tiny", "file": upload(data=b"run\n" + b"x" * 500),
        **{f"extra{i}": upload(data=b"x" * 600) for i in range(3)}})
    assert page.status_code == 413
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_missing_stored_file_is_a_404_not_a_500(logged_in: Client,
                                                  stored: Callable[..., Submission]) -> None:
    sub = stored(to_bytes(valid_lines()))
    assert logged_in.get(reverse("submission-file", args=[sub.pk])).status_code == 200
    Path(sub.file.path).unlink()
    missing = logged_in.get(reverse("submission-file", args=[sub.pk]))
    assert missing.status_code == 404
    assert f"stored file of submission {sub.pk} is missing" in missing.content.decode()


@pytest.mark.django_db
def test_overlong_text_fields_are_field_errors(user: User, corpus: Corpus,
                                              tmp_path: Path) -> None:
    """A description of megabytes was stored and shown whole on the page; past Django's
    2.5 MB for text fields the API answered an empty HTML page instead of JSON."""
    api = api_for(user)
    resp = api.post("/api/submissions/", {"name": "x", "corpus": "tiny", "file": upload(),
                                          "description": "d" * 5001,
                                          "method_description": "m" * 20_001},
                    format="multipart")
    assert resp.status_code == 400
    assert set(resp.json()) == {"description", "method_description"}
    assert "5000 characters" in resp.json()["description"][0]
    resp = api.post("/api/submissions/", {"name": "x", "corpus": "tiny", "file": upload(),
                                          "description": "d" * 3_000_000}, format="multipart")
    assert resp.status_code == 413 and resp.json()["code"] == "fields_too_large"
    client = Client()
    client.force_login(user)
    page = client.post(reverse("submission-new"), {
        "name": "x", "corpus": "tiny", "file": upload(), "description": "d" * 5001})
    assert page.status_code == 400 and "at most 5000 characters" in page.content.decode()
    path = tmp_path / "kb.tsv"
    path.write_bytes(to_bytes(valid_lines()))
    with pytest.raises(CommandError, match=r"^--method: "):
        call_command("submit", str(path), user="ada", corpus="tiny", name="x",
                     method="m" * 20_001)
    assert not Submission.objects.exists()


def test_the_admin_keeps_the_text_caps(client: Client,
                                       stored: Callable[..., Submission]) -> None:
    """The caps are the model's: staff editing a submission in the admin cannot store
    what the upload form and the API refuse."""
    sub = stored(to_bytes(valid_lines()), description="short")
    root = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    client.force_login(root)
    url = reverse("admin:submissions_submission_change", args=[sub.pk])
    # The events inline's hidden fields (its management form, its rows' ids), as the
    # page renders them.
    management = dict(re.findall(r'<input type="hidden" name="(\w+-[\w-]+)" value="([^"]*)"',
                                 client.get(url).content.decode()))
    assert any(name.endswith("TOTAL_FORMS") for name in management)
    form = {"name": sub.name, "description": "d" * 5001, "method_description": "m" * 20_001,
            "paper_url": "", "_save": "Save", **management}
    page = client.post(url, form)
    assert page.status_code == 200  # the form again, with its errors
    text = page.content.decode()
    assert "at most 5000 characters" in text and "at most 20000 characters" in text
    sub.refresh_from_db()
    assert sub.description == "short"
    form.update(description="d" * 5000, method_description="m" * 20_000)
    assert client.post(url, form).status_code == 302
    sub.refresh_from_db()
    assert len(sub.description) == 5000 and len(sub.method_description) == 20_000


@pytest.mark.django_db
def test_the_status_poll_reads_no_bulky_column(logged_in: Client,
                                               stored: Callable[..., Submission]) -> None:
    """An open page polls status.json every few seconds: it must not read the problem
    list or the dropped lines (several MB on a large file) each time."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from submissions.views import BULKY_FIELDS

    sub = stored(b"run\n")
    Submission.objects.filter(pk=sub.pk).update(dropped=[[i, "X", "m" * 50]
                                                         for i in range(2000)])
    with CaptureQueriesContext(connection) as queries:
        status = logged_in.get(reverse("submission-status", args=[sub.pk])).json()
    assert status["id"] == sub.pk
    read = " ".join(q["sql"] for q in queries.captured_queries
                    if "submissions_submission" in q["sql"])
    assert read, "the submission was read"
    for field in BULKY_FIELDS:
        assert f'"submissions_submission"."{field}"' not in read, field
