"""A tiny corpus and a valid KB over it, for submission tests."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

from submissions.models import Submission
from submissions.processing import run_ingestion

DOCS = {
    "D1": ("Ada Byron was born in London. Ada Byron, an engineer at Acme Corp, lives in "
           "Lisbon. Tom King is the father of Ada Byron. Acme Corp was founded in 1999."),
    "D2": ("Acme Corp is based in Lisbon. Tom King founded Acme Corp. "
           "Tom King and Ada Byron are siblings."),
}


def write_corpus(path: Path) -> Path:
    rows = [{"id": k, "title": k, "text": v} for k, v in DOCS.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def span(doc: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """Half-open offsets of the nth occurrence of `needle` in document `doc`."""
    text = DOCS[doc]
    start = -1
    for _ in range(nth + 1):
        start = text.index(needle, start + 1)
    return start, start + len(needle)


def prov(doc: str, needle: str, nth: int = 0) -> str:
    """TAC provenance (inclusive end) of the nth occurrence of `needle`."""
    b, e = span(doc, needle, nth)
    return f"{doc}:{b}-{e - 1}"


def sentence(doc: str, nth: int) -> str:
    """TAC provenance of the nth sentence (split on '. ')."""
    text = DOCS[doc]
    parts = text.split(". ")
    b = sum(len(p) + 2 for p in parts[:nth])
    e = b + len(parts[nth]) + (1 if nth < len(parts) - 1 else 0)
    return f"{doc}:{b}-{e - 1}"


def mention(node: str, doc: str, needle: str, nth: int = 0,
            kind: str = "mention") -> str:
    return f'{node}\t{kind}\t"{needle}"\t{prov(doc, needle, nth)}'


def valid_lines() -> list[str]:
    """A clean KB: 4 entities, folded and inverse predicates, fillers, duplicates."""
    return [
        "test_run_1",
        ":E1\ttype\tPER",
        mention(":E1", "D1", "Ada Byron", 0, "canonical_mention"),
        mention(":E1", "D1", "Ada Byron", 0),
        mention(":E1", "D1", "Ada Byron", 1),
        mention(":E1", "D1", "Ada Byron", 2),
        mention(":E1", "D2", "Ada Byron", 0),
        ":E1\tlink\tWikipedia:Ada_Lovelace",
        ":E2\ttype\tGPE",
        mention(":E2", "D1", "London"),
        mention(":E2", "D1", "Lisbon"),
        mention(":E2", "D2", "Lisbon"),
        ":E3\ttype\tORG",
        mention(":E3", "D1", "Acme Corp", 0, "canonical_mention"),
        mention(":E3", "D1", "Acme Corp", 1),
        mention(":E3", "D2", "Acme Corp", 0),
        mention(":E3", "D2", "Acme Corp", 1),
        ":E4\ttype\tPER",
        mention(":E4", "D1", "Tom King"),
        mention(":E4", "D2", "Tom King", 0),
        mention(":E4", "D2", "Tom King", 1),
        # line 22: fine-grained predicate folds to per:place_of_birth
        f":E1\tper:city_of_birth\t:E2\t{sentence('D1', 0)}\t0.9",
        # line 23 and its inverse on line 24 dedupe to one instance
        f":E1\tper:employee_or_member_of\t:E3\t{sentence('D1', 1)}\t0.8",
        f":E3\torg:employees_or_members\t:E1\t{sentence('D1', 1)}\t0.7",
        # line 25: string filler (title); first provenance is the filler
        f':E1\tper:title\t"engineer"\t{prov("D1", "engineer")},{sentence("D1", 1)}\t0.6',
        # line 26: inverse direction, canonical subject is the earlier span
        f":E4\tper:children\t:E1\t{sentence('D1', 2)}\t0.9",
        # line 27: date filler with only the filler span as provenance
        f':E3\torg:date_founded\t"1999"\t{prov("D1", "1999")}\t1.0',
        # line 28: gpe inverse of org:place_of_headquarters, folded city form
        f":E2\tgpe:headquarters_in_city\t:E3\t{sentence('D2', 0)}\t0.5",
        # line 29: per:organizations_founded as org:founded_by inverse
        f":E3\torg:founded_by\t:E4\t{sentence('D2', 1)}",
        # line 30: symmetric predicate stated in the non-canonical direction
        f":E1\tper:siblings\t:E4\t{sentence('D2', 2)}\t0.4",
        # line 31: unsupported slot, skipped with a warning
        f':E1\tper:age\t"33"\t{prov("D1", "Ada Byron")}\t0.5',
    ]


def to_bytes(lines: list[str], gz: bool = False) -> bytes:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    return gzip.compress(data) if gz else data


def ingest(stored: Callable[..., Submission], data: bytes, **fields: object) -> Submission:
    """Store ``data`` as an uploaded submission (the ``stored`` fixture), ingest it and
    return it as ingestion left it."""
    sub = stored(data, **fields)
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    return sub


def api_ingested(user: object, corpus: object, data: bytes, name: str,
                 capture: Callable) -> dict:
    """Upload ``data`` (a .gz) through the API as ``user``, ingested at once (``capture``:
    the django_capture_on_commit_callbacks fixture); the submission's JSON detail."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(user)
    with capture(execute=True):
        resp = api.post("/api/submissions/", {"name": name, "corpus": corpus.tag,
                                              "file": SimpleUploadedFile("kb.gz", data)},
                        format="multipart")
    assert resp.status_code == 201, resp.content
    return api.get(f"/api/submissions/{resp.json()['id']}/").json()
