"""`load_corpus --format docred`: a DocRED / Re-DocRED file (a JSON list of documents,
plain or gzip) as published, into a corpus on the DocRED schema.

Each document keeps DocRED's sentences and tokens (the text is rebuilt from them,
`kbpo.core.docred.detokenize`) and every vertexSet entity with all its mentions
(`DocumentEntity`). Labels are not read here: `import_gold --format docred` imports
them as gold. As with JSON Lines corpora, a bad document is reported (JSON path, line)
and skipped, the rest is loaded, re-loading changes nothing and a different text
under an existing id is refused.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from django.db import transaction

from .corpus import LineError, LoadReport
from .docred_docs import DocredDocument, DocredProblem, parse_document
from .jsonlist import JsonListError, iter_list, read_text
from .models import Corpus, Document, DocumentEntity, Sentence, check_tag
from .schemas import DOCRED, get_schema

BATCH_DOCS = 100


class DocredLoadError(Exception):
    """The file or the corpus cannot be used at all (message says why and the fix)."""


def docred_corpus(tag: str, description: str = "") -> Corpus:
    """The corpus `tag` on the DocRED schema, created if missing; DocredLoadError when
    it exists on another schema (its submissions and labels are stated in that one)."""
    check_tag(tag)
    corpus, created = Corpus.objects.get_or_create(
        tag=tag, defaults={"description": description, "schema": DOCRED})
    if corpus.schema != DOCRED:
        raise DocredLoadError(
            f"corpus {tag!r} evaluates the {get_schema(corpus.schema).title} schema; a "
            "DocRED file loads into a DocRED corpus: choose a new tag")
    if description and not created and corpus.description != description:
        corpus.description = description
        corpus.save(update_fields=["description"])
    return corpus


def read_documents(path: Path, report: LoadReport) -> list[DocredDocument]:
    """Every well-formed document of the file; the others are reported and skipped.
    DocredLoadError when the file is not a readable JSON list."""
    try:
        with open(path, "rb") as fh:
            text = read_text(fh)
        docs: list[DocredDocument] = []
        seen: Counter = Counter()
        for where, rec in iter_list(text, "document"):
            report.lines += 1
            try:
                docs.append(parse_document(where, rec, seen))
            except DocredProblem as exc:
                report.errors.append(LineError(where.line, str(exc)))
    except OSError as exc:
        raise DocredLoadError(f"{path}: cannot be read ({exc})") from None
    except JsonListError as exc:
        raise DocredLoadError(f"{path}: line {exc.line}, column {exc.column}: {exc}; a DocRED "
                              "file is one JSON list of documents") from None
    return docs


def load_docred_corpus(tag: str, path: Path, description: str = "",
                       progress: Callable[[LoadReport, int], None] | None = None
                       ) -> LoadReport:
    """Load (or re-load) a DocRED file into the DocRED corpus `tag`."""
    started = time.monotonic()
    report = LoadReport(corpus=tag, unit="documents")
    corpus = docred_corpus(tag, description or f"Loaded from {path.name} (DocRED format)")
    docs = read_documents(path, report)
    existing = dict(Document.objects.filter(corpus=corpus).values_list("doc_id",
                                                                       "text_sha256"))
    new: list[tuple[DocredDocument, str]] = []
    for doc in docs:
        sha = hashlib.sha256(doc.text.encode("utf-8")).hexdigest()
        old = existing.get(doc.doc_id)
        if old is None:
            new.append((doc, sha))
        elif old != sha:
            report.errors.append(LineError(
                doc.where.line, f"{doc.where.path}: document {doc.doc_id} is already loaded "
                                "with a different text; texts are immutable because "
                                "submissions refer to them — load the new version under a "
                                "new corpus tag"))
        else:
            report.unchanged += 1
    for i in range(0, len(new), BATCH_DOCS):
        _insert(corpus, new[i:i + BATCH_DOCS], report)
        if progress:
            progress(report, len(new))
    report.seconds = time.monotonic() - started
    return report


def _insert(corpus: Corpus, batch: list[tuple[DocredDocument, str]],
            report: LoadReport) -> None:
    with transaction.atomic():
        rows = Document.objects.bulk_create([
            Document(corpus=corpus, doc_id=d.doc_id, title=d.title, text=d.text,
                     text_sha256=sha, length=len(d.text)) for d, sha in batch])
        sentences = [
            Sentence(document=row, index=k, begin=spans[0][0], end=spans[-1][1],
                     tokens=[x for span in spans for x in span])
            for row, (d, _) in zip(rows, batch, strict=True)
            for k, spans in enumerate(d.sentences)]
        Sentence.objects.bulk_create(sentences, batch_size=2000)
        DocumentEntity.objects.bulk_create([
            DocumentEntity(document=row, index=e.index, type=e.type, name=e.name[:300],
                           mentions=[x for m in e.mentions for x in m],
                           anchor_begin=e.anchor[0], anchor_end=e.anchor[1])
            for row, (d, _) in zip(rows, batch, strict=True) for e in d.entities],
            batch_size=2000)
    report.created += len(rows)
    report.sentences += len(sentences)
    report.tokens += sum(len(s.tokens) // 2 for s in sentences)
