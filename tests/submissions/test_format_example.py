"""The format page's example KB is valid: parsed from the rendered page and ingested."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.test import Client
from django.urls import reverse

from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus
from submissions.models import State, Submission
from submissions.processing import run_ingestion


def _pre(page: str, element_id: str) -> str:
    match = re.search(rf'<pre[^>]*id="{element_id}"[^>]*>(.*?)</pre>', page, re.S)
    assert match, f"no <pre id={element_id}> on the format page"
    return html.unescape(match.group(1))


@pytest.mark.django_db
def test_the_example_kb_on_the_format_page_passes_validation(
        tmp_path: Path, user: User) -> None:
    page = Client().get(reverse("submission-format")).content.decode()
    text, kb = _pre(page, "example-doc"), _pre(page, "example-kb")
    path = tmp_path / "example.jsonl"
    path.write_text(json.dumps({"id": "DOC_A", "title": "DOC_A", "text": text}) + "\n")
    load_corpus("example", path, workers=1)
    data = (kb + "\n").encode()
    sub = Submission(owner=user, corpus=Corpus.objects.get(tag="example"), name="example",
                     file_size=len(data))
    sub.file.save("kb.tsv", ContentFile(data), save=False)
    sub.save()
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    assert sub.state == State.INGESTED, sub.report
    assert sub.n_errors == 0 and sub.n_relations == 2, sub.report
