"""`manage.py submit` refuses what the form and the API refuse, with a CommandError
naming the option, never a traceback or a row the form could not have stored."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from kbpo.core.models import Corpus
from submissions.models import Submission

from .kb import to_bytes, valid_lines


def _submit(path: Path, **opts: object) -> str:
    out = io.StringIO()
    call_command("submit", str(path), user="ada", corpus="tiny", stdout=out,
                 **{"name": "cli", **opts})
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_identical_file_is_a_command_error(user: User, corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "kb.tsv"
    path.write_bytes(to_bytes(valid_lines()))
    assert "ingested" in _submit(path)
    first = Submission.objects.get()
    with pytest.raises(CommandError, match=f"identical to your submission #{first.pk}"):
        _submit(path, ignore_limits=True)
    assert Submission.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("opts", "flag"), [
    ({"name": "x" * 101}, "--name"),
    ({"name": "a\x00b"}, "--name"),
    ({"name": "   "}, "--name"),
    ({"description": "a\x00b"}, "--description"),
    ({"method": "a\x00b"}, "--method"),
    ({"paper_url": "javascript:alert(1)"}, "--paper-url"),
    ({"name": "caf\udce9"}, "--name"),  # Latin-1 bytes from a non-UTF-8 shell
])
def test_text_options_are_checked_like_the_form(user: User, corpus: Corpus, tmp_path: Path,
                                                opts: dict, flag: str) -> None:
    path = tmp_path / "kb.tsv"
    path.write_bytes(to_bytes(valid_lines()))
    with pytest.raises(CommandError, match=f"^{flag}: "):
        _submit(path, **opts)
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_file_name_that_is_not_utf8_is_stored_readably(user: User, corpus: Corpus,
                                                        tmp_path: Path) -> None:
    """A Latin-1 file name failed the command with a UnicodeEncodeError traceback."""
    path = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.tsv"))
    path.write_bytes(to_bytes(valid_lines()))
    assert _submit(path).startswith("submission ")
    sub = Submission.objects.get()
    assert sub.original_name == "caf\ufffd.tsv"
    assert sub.events.first().message == "Uploaded caf\ufffd.tsv"
