"""`import_gold --format docred` into a corpus on the DocRED schema: a DocRED /
Re-DocRED file's labels as complete (exhaustive) gold for all 96 relations, with no
mapping: each label (h, t, r) is one document-level fact.

The documents must have been loaded from the same file (`load_corpus --format docred`):
a fact is stored as the pair of its head's and tail's anchors (`kbpo.core.docred_docs`),
exactly as a prediction of the same fact is, so gold, predictions and crowd labels meet
on one pair key. Every mention of every entity becomes a gold mention. The TAC mapping
(`annotations.exhaustive.docred`) stays for TAC KBP corpora.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from annotations.models import ExhaustiveDocument
from kbpo.core.corpus import LoadReport
from kbpo.core.docred import MentionIn, RelationIn
from kbpo.core.docred_docs import DocredDocument
from kbpo.core.docred_load import DocredLoadError, read_documents
from kbpo.core.models import Corpus, Document, DocumentEntity

from .gold import GoldImportError, ImportReport, finish_import, store_checked


def _stored_entities(doc: Document) -> list[tuple[int, str, tuple[int, int], list[int]]]:
    return [(e.index, e.type, (e.anchor_begin, e.anchor_end), e.mentions)
            for e in DocumentEntity.objects.filter(document=doc).order_by("index")]


def _file_entities(d: DocredDocument) -> list[tuple[int, str, tuple[int, int], list[int]]]:
    return [(e.index, e.type, e.anchor, [x for m in e.mentions for x in m])
            for e in d.entities]


def document_gold(d: DocredDocument, report: ImportReport,
                  relation_ids: frozenset[str]) -> tuple[list[MentionIn], list[RelationIn]]:
    """One document's gold mentions (every mention of every entity) and facts."""
    mentions: dict[tuple[int, int], MentionIn] = {}
    for e in d.entities:
        for _, b, end in e.mentions:
            if (b, end) in mentions:  # (DocRED lists a few mentions under two entities)
                if mentions[(b, end)].entity != f"E{e.index}":
                    report.skipped_mentions["span already a mention of another entity"] += 1
                continue
            mentions[(b, end)] = MentionIn(b, end, e.type, f"E{e.index}",
                                           (b, end) == e.anchor)
    facts: dict[tuple[int, int, str], RelationIn] = {}
    n = len(d.entities)
    for k, label in enumerate(d.labels):
        report.labels += 1
        lp = f"{d.where.path}.labels[{k}]"
        h = label.get("h") if isinstance(label, dict) else None
        t = label.get("t") if isinstance(label, dict) else None
        r = label.get("r") if isinstance(label, dict) else None
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (h, t)) \
                or not isinstance(r, str):
            report.skipped_labels["malformed label"] += 1
            report.note(f"{lp}: needs integer h and t and a relation id r")
            continue
        assert isinstance(h, int) and isinstance(t, int)
        if not (0 <= h < n and 0 <= t < n):
            report.skipped_labels["entity index out of range"] += 1
            report.note(f"{lp}: h={h} t={t}: the document has {n} entities (0 to {n - 1})")
            continue
        if h == t:
            report.skipped_labels["relation of an entity with itself"] += 1
            report.note(f"{lp}: h and t are both {h}")
            continue
        if r not in relation_ids:
            report.skipped_labels["relation not in the DocRED schema"] += 1
            report.unmapped_properties[r] += 1
            report.note(f"{lp}.r: {r!r} is not one of DocRED's 96 relations")
            continue
        key = (h, t, r)
        if key in facts:
            report.merged_instances += 1
            continue
        head, tail = d.entities[h], d.entities[t]
        facts[key] = RelationIn(head.anchor, tail.anchor, r, f"E{h}")
        report.labels_mapped += 1
    return sorted(mentions.values(), key=lambda m: (m.begin, m.end)), list(facts.values())


def import_docred_native(corpus: Corpus, path: Path, only_planned: bool = False
                         ) -> ImportReport:
    """Import a DocRED file's labels as gold into the DocRED corpus `corpus`."""
    report = ImportReport("docred", corpus.tag)
    read = LoadReport(corpus=corpus.tag)
    try:
        docs = read_documents(path, read)
    except DocredLoadError as exc:
        raise GoldImportError(str(exc)) from None
    report.documents_read = read.lines
    for err in read.errors:
        report.skipped_documents["malformed document"] += 1
        report.note(str(err))
    stored = {d.doc_id: d for d in Document.objects.filter(corpus=corpus).only(
        "pk", "doc_id", "text_sha256", "corpus_id")}
    planned = set(ExhaustiveDocument.objects.filter(corpus=corpus).exclude(
        state=ExhaustiveDocument.State.COMPLETE).values_list("document__doc_id", flat=True))
    relation_ids = frozenset(corpus.relation_schema.relations)
    for d in docs:
        doc = stored.get(d.doc_id)
        if doc is None:
            report.skipped_documents["document not loaded in the corpus"] += 1
            report.note(f"{d.where}: document {d.doc_id!r} is not in corpus {corpus.tag}; "
                        f"load the file first (load_corpus --tag {corpus.tag} --format "
                        "docred FILE)")
            continue
        if only_planned and d.doc_id not in planned:
            report.skipped_documents["not in the exhaustive plan (--only-planned)"] += 1
            continue
        if (doc.text_sha256 != hashlib.sha256(d.text.encode("utf-8")).hexdigest()
                or _stored_entities(doc) != _file_entities(d)):
            report.skipped_documents["document differs from the loaded one"] += 1
            report.note(f"{d.where}: document {d.doc_id!r} has another text or other "
                        "entities than the one loaded; gold must come from the loaded file")
            continue
        store_checked(report, corpus, doc, *document_gold(d, report, relation_ids))
    return finish_import(report, corpus)
