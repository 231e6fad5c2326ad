"""Importing DocRED / Re-DocRED gold (a JSON list of documents with `title`, `sents`,
`vertexSet` and `labels`): documents are created from the tokens, entity types and
Wikidata properties are mapped to the KBP schema (docs/reference/docred-mapping.md)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from django.db import transaction

from kbpo.core.docred import (
    DOCRED_TYPES,
    WIKIDATA_TO_KBP,
    MentionIn,
    RelationIn,
    detokenize,
    docred_doc_id,
    docred_gold,
)
from kbpo.core.models import Corpus, Document, Sentence

from .gold import (
    GoldImportError,
    ImportReport,
    finish_import,
    import_kbpo,
    store_checked,
    store_document_gold,
)


def _docred_records(path: Path) -> list:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldImportError(f"{path}: cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise GoldImportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column "
                           f"{exc.colno}); DocRED files are one JSON list of documents") from exc
    if not isinstance(data, list):
        raise GoldImportError(f"{path}: expected a JSON list of documents (DocRED format), "
                           f"got {type(data).__name__}")
    return data


def _check_docred(i: int, rec: object) -> str | None:
    """A message naming the field when a DocRED record is malformed, else None."""
    if not isinstance(rec, dict):
        return f"document [{i}]: expected an object"
    if not isinstance(rec.get("title"), str):
        return f"document [{i}].title: expected a string"
    sents = rec.get("sents")
    if (not isinstance(sents, list) or not sents
            or not all(isinstance(s, list) and all(isinstance(t, str) for t in s)
                       for s in sents)):
        return f"document [{i}].sents: expected a non-empty list of token lists"
    if not isinstance(rec.get("vertexSet"), list) or not all(
            isinstance(v, list) for v in rec["vertexSet"]):
        return f"document [{i}].vertexSet: expected a list of mention lists"
    if not isinstance(rec.get("labels", []), list):
        return f"document [{i}].labels: expected a list"
    return None


def _document_for(corpus: Corpus, doc_id: str, title: str, text: str,
                  offsets: list[list[tuple[int, int]]], report: ImportReport) -> Document | None:
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    doc = Document.objects.filter(corpus=corpus, doc_id=doc_id).first()
    if doc is not None:
        if doc.text_sha256 != sha:
            report.skipped_documents["document id exists with another text"] += 1
            report.note(f"{doc_id}: already loaded with a different text; texts are immutable "
                        "(submissions refer to offsets) — import into a new corpus tag")
            return None
        return doc
    with transaction.atomic():
        doc = Document.objects.create(corpus=corpus, doc_id=doc_id, title=title, text=text,
                                      text_sha256=sha, length=len(text))
        Sentence.objects.bulk_create(
            Sentence(document=doc, index=k, begin=spans[0][0], end=spans[-1][1],
                     tokens=[x for span in spans for x in span])
            for k, spans in enumerate(offsets) if spans)
    report.documents_created += 1
    return doc


def import_docred(corpus: Corpus, path: Path, doc_prefix: str = "") -> ImportReport:
    """Import a DocRED / Re-DocRED file: documents, gold mentions and gold relations."""
    report = ImportReport("docred", corpus.tag)
    seen_ids: Counter = Counter()
    for i, rec in enumerate(_docred_records(path)):
        report.documents_read += 1
        problem = _check_docred(i, rec)
        if problem:
            report.skipped_documents["malformed document"] += 1
            report.note(problem)
            continue
        base = docred_doc_id(rec["title"], doc_prefix)
        seen_ids[base] += 1
        doc_id = base if seen_ids[base] == 1 else f"{base}_{seen_ids[base]}"
        text, offsets = detokenize(rec["sents"])
        doc = _document_for(corpus, doc_id, rec["title"], text, offsets, report)
        if doc is None:
            continue
        store_checked(report, corpus, doc, *docred_gold(doc.doc_id, rec, offsets,
                                                        report, i))  # type: ignore[arg-type]
    return finish_import(report, corpus)


__all__ = ["DOCRED_TYPES", "WIKIDATA_TO_KBP", "GoldImportError", "ImportReport", "MentionIn",
           "RelationIn", "detokenize", "docred_doc_id", "import_docred", "import_kbpo",
           "store_document_gold"]
