"""A zip, bzip2 or xz file, or CR-only line endings, are refused at upload by name (form,
API, command), not rejected later with a line-1 error (NOT_UTF8, NO_RELATIONS) whose
hint cannot help."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions.kbformat import inspect_upload
from submissions.models import Submission

from .kb import to_bytes, valid_lines


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("kb.tsv", data)
    return buf.getvalue()


def _tar(data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("kb.tsv")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# kind -> (archiver, what the refusal calls it)
ARCHIVES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "zip": (_zip, "a zip file"), "bzip2": (bz2.compress, "a bzip2 file"),
    "xz": (lzma.compress, "an xz file"),
    # Archives inside gzip passed the upload and got a NUL or NOT_UTF8 error on line 1.
    "tar": (_tar, "a tar archive"),
    "tar.gz": (lambda d: gzip.compress(_tar(d)), "a tar archive (gzipped)"),
    "gz.gz": (lambda d: gzip.compress(gzip.compress(d)), "a gzip file compressed a second "
                                                         "time"),
    "zip.gz": (lambda d: gzip.compress(_zip(d)), "a zip file inside a gzip file"),
    # Their headers, from the formats' specifications (no compressor at hand here).
    "compress": (lambda d: b"\x1f\x9d\x90" + d, "a Unix compress (.Z) file"),
    "lz4": (lambda d: b"\x04\x22\x4d\x18\x64\x40\xa7" + d, "an lz4 file"),
    "rar": (lambda d: b"Rar!\x1a\x07\x01\x00" + d, "a rar file"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(ARCHIVES))
def test_archives_are_refused_by_name_everywhere(user: User, corpus: Corpus, tmp_path: Path,
                                                 kind: str) -> None:
    archive, what = ARCHIVES[kind]
    data = archive(to_bytes(valid_lines()))
    api = APIClient()
    api.force_authenticate(user)
    resp = api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                          "file": SimpleUploadedFile("kb", data)},
                    format="multipart")
    assert resp.status_code == 400
    assert f"This is {what}" in resp.json()["file"][0]
    client = Client()
    client.force_login(user)
    page = client.post("/submissions/new/", {"name": "s", "corpus": "tiny",
                                             "file": SimpleUploadedFile("kb", data)})
    assert page.status_code == 400 and f"This is {what}" in page.content.decode()
    path = tmp_path / "kb"
    path.write_bytes(data)
    with pytest.raises(CommandError, match="UNSUPPORTED_ARCHIVE"):
        call_command("submit", str(path), user="ada", corpus="tiny", name="s")
    assert not Submission.objects.exists()


def test_run_ids_that_look_like_magic_are_kept() -> None:
    for run in (b"BZh_system", b"PK-run", b"7zip_run", b"Rar_run"):
        check = inspect_upload(io.BytesIO(run + b"\n:E1\ttype\tPER\n"), 10**6)
        assert check.code is None and check.run_id == run.decode()
    # Text that has "ustar" where a tar header has it is still text.
    text = b"run\n" + b"x" * 253 + b"ustar\n:E1\ttype\tPER\n"
    assert text[257:262] == b"ustar" and inspect_upload(io.BytesIO(text), 10**6).code is None


@pytest.mark.django_db
def test_cr_only_line_endings_are_named_at_upload(user: User, corpus: Corpus) -> None:
    """Classic Mac line endings made the file one line: NO_RELATIONS on line 1."""
    api = APIClient()
    api.force_authenticate(user)
    data = to_bytes(valid_lines()).replace(b"\n", b"\r")
    resp = api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                          "file": SimpleUploadedFile("kb.tsv", data)},
                    format="multipart")
    assert resp.status_code == 400 and "carriage return alone" in resp.json()["file"][0]
    assert not Submission.objects.exists()
    # A run id line ending in LF before a body of CR-only lines (written apart) too.
    mixed = b"run\n" + to_bytes(valid_lines()[1:]).replace(b"\n", b"\r")
    for chunk in (1 << 20, 7, 8):
        assert inspect_upload(io.BytesIO(mixed), 10**6, chunk=chunk).code == "CR_LINE_ENDINGS"
    # CRLF (even split between two reads), a lone CR at the end of the run id line,
    # and a few stray CRs inside lines are fine.
    crlf = to_bytes(valid_lines()).replace(b"\n", b"\r\n")
    stray = to_bytes([*valid_lines(), ":E1\tlink\ta\rb", ":E2\tlink\tc\rd"])
    twice = to_bytes(valid_lines()).replace(b"\n", b"\r\r\r\n")  # converted again and again
    for ok in (crlf, b"run\r\r\n:E1\ttype\tPER\n", stray, twice):
        for chunk in (1 << 20, 7, 8):
            check = inspect_upload(io.BytesIO(ok), 10**6, chunk=chunk)
            assert check.code is None, (ok[:20], chunk)


WIDE = {"utf-16": "UTF-16", "utf-16-le": "UTF-16", "utf-16-be": "UTF-16",
        "utf-32": "UTF-32", "utf-32-be": "UTF-32"}


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", sorted(WIDE))
def test_utf16_and_utf32_files_are_named_at_upload(user: User, corpus: Corpus,
                                                   encoding: str) -> None:
    """A Windows "Unicode" export (with or without its byte order mark) passed the upload
    and was rejected with a NOT_UTF8 or NUL error on every line, the hint naming Latin-1."""
    text = "\n".join(valid_lines()) + "\n"
    api = APIClient()
    api.force_authenticate(user)
    for data in (text.encode(encoding), gzip.compress(text.encode(encoding))):
        resp = api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                              "file": SimpleUploadedFile("kb.tsv", data)},
                        format="multipart")
        assert resp.status_code == 400, resp.content
        message = resp.json()["file"][0]
        assert f"The file is {WIDE[encoding]} encoded" in message
        assert f"iconv -f {WIDE[encoding].lower()} -t utf-8" in message
    assert not Submission.objects.exists()


def test_utf8_text_is_not_taken_for_utf16() -> None:
    for head in ("système_1\n:E1\ttype\tPER\n", "\ufeffrun\n", "r\n", "日本語の実行\n"):
        check = inspect_upload(io.BytesIO(head.encode("utf-8")), 10**6)
        assert check.code is None, head
