"""An image, a PDF or other binary data uploaded as a KB gets one message naming it,
not "classic Mac line endings" (a PNG's signature holds "\\r\\n") or hundreds of
NOT_UTF8 lines telling the researcher to run iconv."""

from __future__ import annotations

import gzip
import io
import random
import struct
import zlib
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


def png(width: int = 64, height: int = 48) -> bytes:
    """A real PNG (grey gradient), built by the format's rules."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + bytes((x * 4 + y) % 256 for x in range(width))
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0,
                                                             0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


BINARIES = {
    "png": (png(), "PNG image"),
    "png.gz": (gzip.compress(png()), "PNG image"),
    "pdf": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\n", "PDF"),
    "jpeg": (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(200), "JPEG image"),
    "random": (random.Random(7).randbytes(5000), "binary"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(BINARIES))
def test_binary_uploads_get_one_message_everywhere(user: User, corpus: Corpus,
                                                   tmp_path: Path, kind: str) -> None:
    data, what = BINARIES[kind]
    expected = f"Not a text KB (looks like {what} data)"
    check = inspect_upload(io.BytesIO(data), 10**6)
    assert (check.code, check.message.split(".")[0]) == ("NOT_TEXT", expected)
    api = APIClient()
    api.force_authenticate(user)
    resp = api.post("/api/submissions/", {"name": "s", "corpus": "tiny",
                                          "file": SimpleUploadedFile("shot.png", data)},
                    format="multipart")
    assert resp.status_code == 400 and resp.json()["file"][0].startswith(expected)
    client = Client()
    client.force_login(user)
    page = client.post("/submissions/new/", {"name": "s", "corpus": "tiny",
                                             "file": SimpleUploadedFile("shot.png", data)})
    body = page.content.decode()
    assert page.status_code == 400 and expected in body
    assert "Mac" not in body and "iconv" not in body and "NOT_UTF8" not in body
    path = tmp_path / "kb"
    path.write_bytes(data)
    with pytest.raises(CommandError, match="NOT_TEXT"):
        call_command("submit", str(path), user="ada", corpus="tiny", name="s")
    assert not Submission.objects.exists()


def test_text_with_a_stray_control_byte_is_still_text() -> None:
    """One bad byte is that line's problem (reported on its line), not a binary file."""
    data = to_bytes(valid_lines())
    at = data.index(b"\n", 20) + 1
    check = inspect_upload(io.BytesIO(data[:at] + b"\x01" + data[at:]), 10**6)
    assert check.code is None
    # UTF-16 text is named as such (its NUL bytes are not "binary").
    wide = inspect_upload(io.BytesIO(data.decode().encode("utf-16")), 10**6)
    assert wide.code == "NOT_UTF8" and "UTF-16" in wide.message
