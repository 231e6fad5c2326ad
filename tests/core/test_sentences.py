"""A corpus's sentence boundaries: downloadable TSV and API, for signed-in users."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from kbpo.core.corpus import load_corpus

TEXT = "The painting was restored by F. A. Wenderoth in 1850. It hangs in Bath."


@pytest.fixture
def corpus(db, tmp_path: Path) -> str:
    rows = [{"id": "=D1", "text": TEXT, "sentences": [[0, 53], [54, 71]]},
            {"id": "D2", "text": TEXT}]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    load_corpus("src", path, workers=1)
    return "src"


@pytest.mark.django_db
def test_tsv_lists_every_sentence_and_needs_a_login(client: Client, corpus: str) -> None:
    url = f"/corpora/{corpus}/sentences.tsv"
    assert client.get(url).status_code == 302
    client.force_login(User.objects.create_user("ada"))
    resp = client.get(url)
    assert resp.status_code == 200
    assert resp["Content-Disposition"].endswith('"src-sentences.tsv"')
    lines = b"".join(resp.streaming_content).decode().splitlines()
    # the source's two sentences, then the splitter's three; ids cannot run as formulas
    assert lines == ["doc_id\tsentence\tbegin\tend", "'=D1\t0\t0\t53", "'=D1\t1\t54\t71",
                     "D2\t0\t0\t31", "D2\t1\t32\t53", "D2\t2\t54\t71"]
    assert client.get("/corpora/nope/sentences.tsv").status_code == 404


@pytest.mark.django_db
def test_api_pages_through_documents(corpus: str) -> None:
    api = APIClient()
    url = f"/api/corpora/{corpus}/sentences/"
    assert api.get(url).status_code in (401, 403)
    api.force_authenticate(User.objects.create_user("ada"))
    body = api.get(url).json()
    assert body["corpus"] == "src" and body["documents_total"] == 2
    assert body["documents"][0] == {"doc": "=D1", "sentences": [[0, 53], [54, 71]]}
    assert api.get(url, {"doc": "D2"}).json()["documents"][0]["sentences"][0] == [0, 31]
    assert [d["doc"] for d in api.get(url, {"offset": 1, "limit": 1}).json()["documents"]] \
        == ["D2"]
    bad = api.get(url, {"limit": 0})
    assert bad.status_code == 400 and "limit" in bad.json()
    assert api.get(url, {"offset": "x"}).status_code == 400
    assert api.get("/api/corpora/nope/sentences/").status_code == 404


@pytest.mark.django_db
def test_api_refuses_what_the_database_cannot_take(corpus: str) -> None:
    """An offset past bigint and a NUL in `doc` were 500s (DataError, ValueError)."""
    api = APIClient()
    api.force_authenticate(User.objects.create_user("ada"))
    url = f"/api/corpora/{corpus}/sentences/"
    huge = api.get(url, {"offset": "9" * 30})
    assert huge.status_code == 400 and "offset" in huge.json()
    nul = api.get(url, {"doc": "D1\x00"})
    assert nul.status_code == 400 and "NUL" in nul.json()["doc"]
    assert api.get(url, {"offset": 10**6}).json()["documents"] == []


def test_sentences_api_is_in_the_openapi_schema(tmp_path: Path) -> None:
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--fail-on-warn", "--file", str(out))
    assert "/api/corpora/{tag}/sentences/" in out.read_text()


@pytest.mark.django_db
def test_format_page_explains_sentences_and_links_each_corpus(client: Client,
                                                              corpus: str) -> None:
    html = client.get("/submissions/format/").content.decode()
    assert 'id="sentences"' in html and "/corpora/src/sentences.tsv" in html
    assert "drop invalid lines" in html
