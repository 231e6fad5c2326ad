"""A gzip file followed by bytes that are not gzip data (zero padding from a tape or
transfer layer, other trailing bytes) is read as GNU gunzip reads it: its members are
decompressed, the rest is ignored with the warning GZIP_TRAILING_BYTES saying how many
bytes. It was refused as GZIP_CORRUPT (zero padding passed silently). Concatenated
members stay valid; a truncated or corrupt member is still GZIP_CORRUPT."""

from __future__ import annotations

import gzip
import io
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions.kbformat import FileTooLarge, inspect_upload, iter_lines, open_stream
from submissions.models import Submission
from submissions.services import content_sha256

from .kb import api_ingested, ingest, to_bytes, valid_lines
from .test_drop_invalid import facts

PLAIN = to_bytes(valid_lines())
GZ = gzip.compress(PLAIN)
HALF = len(PLAIN) // 2
MEMBERS = gzip.compress(PLAIN[:HALF]) + gzip.compress(PLAIN[HALF:])

# name -> (file, bytes ignored, the message's word for them)
TRAILING: dict[str, tuple[bytes, int, str]] = {
    "zero padding": (GZ + b"\0" * 4096, 4096, "zero padding"),
    "garbage": (GZ + b"\x00\x00trailer, not gzip\n" * 3, 60, "not a gzip member"),
    "one byte of the magic": (GZ + b"\x1f", 1, "not a gzip member"),
    "members then padding": (MEMBERS + b"\0" * 10, 10, "zero padding"),
    "padding between members": (gzip.compress(PLAIN[:HALF]) + b"\0" * 512
                                + gzip.compress(PLAIN[HALF:]), 512, "zero padding"),
}
CORRUPT: dict[str, bytes] = {
    "truncated": GZ[: len(GZ) // 2],
    "truncated trailer": GZ[:-3],
    "magic then junk": GZ + b"\x1f\x8b\x08\x00not a member at all, just bytes",
    "magic alone": GZ + b"\x1f\x8b",
    "corrupt second member": gzip.compress(PLAIN[:HALF])
    + gzip.compress(PLAIN[HALF:])[:12] + b"\xff" * 40,
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(TRAILING))
def test_trailing_bytes_are_ignored_with_a_warning(stored: Callable[..., Submission],
                                                   kind: str) -> None:
    data, ignored, word = TRAILING[kind]
    plain = ingest(stored, PLAIN, name="plain")
    sub = ingest(stored, data, name=kind)
    assert sub.state == "ingested", sub.report
    assert facts(sub) == facts(plain)
    [warning] = [p for p in sub.report if p["code"] == "GZIP_TRAILING_BYTES"]
    assert warning["severity"] == "warning" and warning["line"] == len(valid_lines())
    assert f"{ignored:,} bytes after the end of the gzip data" in warning["message"]
    assert word in warning["message"] and "ignored" in warning["hint"]
    # Everything else is as for the plain file.
    assert [p for p in sub.report if p["code"] != "GZIP_TRAILING_BYTES"] == plain.report


@pytest.mark.django_db
def test_concatenated_members_are_one_kb_without_a_warning(
        stored: Callable[..., Submission]) -> None:
    plain = ingest(stored, PLAIN, name="plain")
    sub = ingest(stored, MEMBERS)
    assert sub.state == "ingested" and facts(sub) == facts(plain)
    assert sub.report == plain.report


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_a_truncated_or_corrupt_member_is_still_gzip_corrupt(
        stored: Callable[..., Submission], kind: str) -> None:
    data = CORRUPT[kind]
    assert inspect_upload(io.BytesIO(data), 10**6).code == "GZIP_CORRUPT"
    sub = ingest(stored, data)
    assert sub.state == "rejected"
    assert [p["code"] for p in sub.report if p["severity"] == "error"] == ["GZIP_CORRUPT"]


@pytest.mark.django_db
def test_upload_form_api_and_command_accept_trailing_bytes(
        user: User, corpus: Corpus, tmp_path: Path, django_capture_on_commit_callbacks) -> None:
    data = TRAILING["garbage"][0]
    body = api_ingested(user, corpus, data, "api", django_capture_on_commit_callbacks)
    assert body["state"] == "ingested" and body["run_id"] == "test_run_1"
    assert body["report_counts"]["GZIP_TRAILING_BYTES"] == 1
    assert any(r["code"] == "GZIP_TRAILING_BYTES" and "60 bytes" in r["message"]
               for r in body["report"])
    # Its content is the plain file's: the same KB again is a duplicate.
    api = APIClient()
    api.force_authenticate(user)
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post("/api/submissions/", {"name": "again", "corpus": corpus.tag,
                                               "file": SimpleUploadedFile("kb.tsv", PLAIN)},
                         format="multipart")
    assert again.status_code == 409
    # The web form and the command take a zero-padded copy (other users: no duplicate).
    other = User.objects.create_user("zed", password="pw-zed-123456")
    User.objects.create_user("kim", password="pw-kim-123456")
    client = Client()
    client.force_login(other)
    page = client.post("/submissions/new/", {"name": "form", "corpus": corpus.tag,
                                             "file": SimpleUploadedFile("kb.gz", GZ + b"\0"
                                                                        * 100)})
    assert page.status_code == 302, page.content.decode()[-2000:]
    path = tmp_path / "kb.gz"
    path.write_bytes(TRAILING["zero padding"][0])
    out = io.StringIO()
    call_command("submit", str(path), user="kim", corpus=corpus.tag, name="cli",
                 ignore_limits=True, stdout=out)
    assert Submission.objects.get(name="cli").run_id == "test_run_1"  # its pre-check passed
    # A corrupt member is refused at upload, as before.
    path.write_bytes(CORRUPT["magic then junk"])
    with pytest.raises(CommandError, match="GZIP_CORRUPT"):
        call_command("submit", str(path), user="kim", corpus=corpus.tag, name="bad")


def test_the_hash_of_a_padded_gzip_is_its_content() -> None:
    want = content_sha256(io.BytesIO(PLAIN), False)
    for data, _, _ in TRAILING.values():
        assert content_sha256(io.BytesIO(data), True) == want
    assert content_sha256(io.BytesIO(MEMBERS), True) == want


def test_a_gzip_compressed_twice_is_still_named_with_trailing_bytes() -> None:
    for data in (gzip.compress(GZ), gzip.compress(GZ) + b"\0" * 64):
        check = inspect_upload(io.BytesIO(data), 10**6)
        assert check.code == "UNSUPPORTED_ARCHIVE"
        assert "a gzip file compressed a second time" in check.message


def test_the_size_cap_holds_and_trailing_bytes_are_not_held(tmp_path: Path) -> None:
    """All members count toward the uncompressed cap; megabytes of padding are counted
    while streaming, not read into memory."""
    with pytest.raises(FileTooLarge):
        for _ in iter_lines(open_stream(io.BytesIO(MEMBERS + b"x"))[0], len(PLAIN) - 1,
                            10_000):
            pass
    assert inspect_upload(io.BytesIO(MEMBERS), len(PLAIN) - 1).code == "FILE_TOO_LARGE"
    path = tmp_path / "padded.gz"
    path.write_bytes(GZ + b"\0" * (32 << 20))
    for reader in ("lines", "upload"):
        with path.open("rb") as fh:
            tracemalloc.start()
            if reader == "lines":
                stream, _ = open_stream(fh)
                assert sum(1 for _ in iter_lines(stream, 10**6, 10_000)) == len(valid_lines())
                assert stream.ignored == 32 << 20  # type: ignore[attr-defined]
            else:
                assert inspect_upload(fh, 10**6).code is None
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert peak < 4 << 20, (reader, peak)
