"""A zip, bzip2 or xz file, or CR-only line endings, are refused at upload by name (form,
API, command), not rejected later with a line-1 error (NOT_UTF8, NO_RELATIONS) whose
hint cannot help."""

from __future__ import annotations

import bz2
import io
import lzma
import zipfile
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


ARCHIVES = {"zip": _zip, "bzip2": bz2.compress, "xz": lzma.compress}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(ARCHIVES))
def test_archives_are_refused_by_name_everywhere(user: User, corpus: Corpus, tmp_path: Path,
                                                 kind: str) -> None:
    data = ARCHIVES[kind](to_bytes(valid_lines()))
    api = APIClient()
    api.force_authenticate(user)
    resp = api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                          "file": SimpleUploadedFile("kb", data)},
                    format="multipart")
    assert resp.status_code == 400
    assert f"This is a {kind} file" in resp.json()["file"][0]
    client = Client()
    client.force_login(user)
    page = client.post("/submissions/new/", {"name": "s", "corpus": "tiny",
                                             "file": SimpleUploadedFile("kb", data)})
    assert page.status_code == 400 and f"This is a {kind} file" in page.content.decode()
    path = tmp_path / "kb"
    path.write_bytes(data)
    with pytest.raises(CommandError, match="UNSUPPORTED_ARCHIVE"):
        call_command("submit", str(path), user="ada", corpus="tiny", name="s")
    assert not Submission.objects.exists()


def test_run_ids_that_look_like_magic_are_kept() -> None:
    for run in (b"BZh_system", b"PK-run", b"7zip_run"):
        check = inspect_upload(io.BytesIO(run + b"\n:E1\ttype\tPER\n"), 10**6)
        assert check.code is None and check.run_id == run.decode()


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
    # CRLF, and a lone CR at the end of the run id line, are fine.
    for ok in (to_bytes(valid_lines()).replace(b"\n", b"\r\n"), b"run\r\r\n:E1\ttype\tPER\n"):
        check = inspect_upload(io.BytesIO(ok), 10**6)
        assert check.code is None
