"""Importing existing exhaustive gold annotation as the true-instance sample Ŷ0.

Two formats (docs/operators/exhaustive.md §Import, mapping table in
docs/reference/docred-mapping.md):

- `kbpo` (this module): the demo world's `gold.jsonl` (docs/reference/demo-world.md) for
  documents already loaded into the corpus;
- `docred` (`annotations.exhaustive.docred`): DocRED / Re-DocRED JSON; the documents are
  created from the tokens.

Each imported document becomes an `ExhaustiveDocument` in state `complete` (stage
`imported`, or its planned stage when it was already part of the two-stage sample)
with its `GoldMention`s and `GoldRelation`s (source `import`). Re-importing the same
file changes nothing; a document whose gold changed is replaced as a whole. Everything
skipped is counted by reason in the `ImportReport`."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldMention,
    GoldRelation,
    Question,
    QuestionState,
    TaskKind,
)
from annotations.signals import labels_changed
from kbpo.core.docred import MentionIn, RelationIn, longest_first
from kbpo.core.gold import GoldProblem, canonical_relation
from kbpo.core.models import Corpus, Document, Sentence
from kbpo.core.schema import ENTITY_TYPES

MAX_MESSAGES = 200


@dataclass
class ImportReport:
    """What an import did, and everything it skipped by reason."""

    format: str
    corpus: str
    documents_read: int = 0
    documents_created: int = 0      # docred: new Document rows
    documents_imported: int = 0     # gold written (new or changed)
    documents_unchanged: int = 0    # gold identical to what was stored
    mentions: int = 0
    relations: int = 0
    labels: int = 0                 # docred: entity-level labels read
    labels_mapped: int = 0          # docred: labels that gave at least one instance
    skipped_documents: Counter = field(default_factory=Counter)
    skipped_mentions: Counter = field(default_factory=Counter)
    skipped_labels: Counter = field(default_factory=Counter)
    unmapped_properties: Counter = field(default_factory=Counter)
    merged_instances: int = 0       # instances produced twice (inverse/repeated labels)
    messages: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(message)

    def as_dict(self) -> dict:
        return {k: (dict(v) if isinstance(v, Counter) else v) for k, v in vars(self).items()}

    def summary(self) -> str:
        lines = [f"{self.format} import into corpus {self.corpus}: {self.documents_read} "
                 f"documents read, {self.documents_created} created, "
                 f"{self.documents_imported} imported, {self.documents_unchanged} unchanged; "
                 f"{self.mentions} gold mentions and {self.relations} gold relations stored"]
        if self.format == "docred":
            lines.append(f"  labels: {self.labels} read, {self.labels_mapped} mapped to "
                         f"relation instances, {sum(self.skipped_labels.values())} skipped; "
                         f"{self.merged_instances} instances merged as duplicates")
        for title, counter in (("documents skipped", self.skipped_documents),
                               ("mentions skipped", self.skipped_mentions),
                               ("labels skipped", self.skipped_labels)):
            for reason, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  {title}: {n} × {reason}")
        if self.unmapped_properties:
            top = ", ".join(f"{p} ({n})" for p, n in self.unmapped_properties.most_common(12))
            lines.append(f"  unmapped properties (most frequent): {top}")
        return "\n".join(lines)


class GoldImportError(Exception):
    """A file that cannot be imported at all (wrong format, unreadable)."""


def _sentence_for(sentences: list[tuple[int, int, int]], begin: int, end: int) -> int | None:
    for pk, sb, se in sentences:
        if sb <= begin and end <= se:
            return pk
    return None


def store_document_gold(corpus: Corpus, document: Document, mentions: list[MentionIn],
                        relations: list[RelationIn], source: str = "import") -> bool:
    """Write one document's gold as complete exhaustive annotation; False if unchanged.

    A document already in the two-stage sample keeps its stage (so the sample design
    is preserved) and its open crowd questions are cancelled. `source`: `import`, or
    `crowd` for the DocRED crowd workflow's aggregated facts.
    """
    new_m = {(m.begin, m.end, m.type, m.entity, m.canonical, m.link) for m in mentions}
    new_r = {(r.subject[0], r.subject[1], r.object[0], r.object[1], r.predicate,
              r.subject_entity) for r in relations}
    with transaction.atomic():
        exdoc = (ExhaustiveDocument.objects.select_for_update()
                 .filter(document=document).first())
        old_m = set(GoldMention.objects.filter(document=document).values_list(
            "begin", "end", "type", "entity", "canonical", "link"))
        old_r = set(GoldRelation.objects.filter(document=document).values_list(
            "subject_begin", "subject_end", "object_begin", "object_end", "predicate",
            "subject_entity"))
        if (exdoc is not None and exdoc.state == ExhaustiveDocument.State.COMPLETE
                and old_m == new_m and old_r == new_r):
            return False
        if exdoc is None:
            exdoc = ExhaustiveDocument.objects.create(
                corpus=corpus, document=document, stage=ExhaustiveStage.IMPORTED,
                state=ExhaustiveDocument.State.COMPLETE, completed_at=timezone.now())
        else:
            exdoc.state = ExhaustiveDocument.State.COMPLETE
            exdoc.completed_at = timezone.now()
            exdoc.save(update_fields=["state", "completed_at"])
            Question.objects.filter(
                document=document, kind__in=[TaskKind.ENTITY, TaskKind.EXHAUSTIVE],
                state=QuestionState.OPEN).update(state=QuestionState.CANCELLED)
        GoldMention.objects.filter(document=document).delete()
        GoldRelation.objects.filter(document=document).delete()
        sentences = list(Sentence.objects.filter(document=document).values_list(
            "pk", "begin", "end"))
        GoldMention.objects.bulk_create(
            GoldMention(document=document, begin=m.begin, end=m.end, type=m.type,
                        entity=m.entity[:300], canonical=m.canonical, link=m.link[:500],
                        source=source) for m in mentions)
        GoldRelation.objects.bulk_create(
            GoldRelation(document=document, subject_begin=r.subject[0],
                         subject_end=r.subject[1], object_begin=r.object[0],
                         object_end=r.object[1], predicate=r.predicate,
                         subject_entity=r.subject_entity[:300],
                         sentence_id=_sentence_for(sentences, min(r.subject[0], r.object[0]),
                                                   max(r.subject[1], r.object[1])),
                         source=source) for r in relations)
    return True


def finish_import(report: ImportReport, corpus: Corpus) -> ImportReport:
    if report.documents_imported:
        transaction.on_commit(lambda: labels_changed.send(sender=ImportReport,
                                                          corpus_id=corpus.pk))
    return report


# --- kbpo (demo-world gold.jsonl) ------------------------------------------------------


def import_kbpo(corpus: Corpus, path: Path, only_planned: bool = False) -> ImportReport:
    """Import demo-world `gold.jsonl` for documents already loaded into `corpus`.

    With `only_planned`, only documents already in the exhaustive sample (and not yet
    complete) are imported: the two-stage sample is then completed from gold.
    """
    report = ImportReport("kbpo", corpus.tag)
    docs = {d.doc_id: d for d in Document.objects.filter(corpus=corpus).only(
        "pk", "doc_id", "text", "corpus_id")}
    planned = set(ExhaustiveDocument.objects.filter(corpus=corpus).exclude(
        state=ExhaustiveDocument.State.COMPLETE).values_list("document__doc_id", flat=True))
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise GoldImportError(f"{path}: cannot be read ({exc})") from exc
    with fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            report.documents_read += 1
            try:
                record = json.loads(line)
                doc_id = record["doc"]
                raw_mentions = record["mentions"]
                raw_relations = record["relations"]
            except (ValueError, KeyError, TypeError) as exc:
                report.skipped_documents["malformed line"] += 1
                report.note(f"line {number}: not a gold.jsonl record ({exc}); see "
                            "docs/reference/demo-world.md")
                continue
            doc = docs.get(doc_id)
            if doc is None:
                report.skipped_documents["document not loaded in the corpus"] += 1
                report.note(f"line {number}: document {doc_id!r} is not in corpus "
                            f"{corpus.tag}; load the corpus first (load_corpus)")
                continue
            if only_planned and doc_id not in planned:
                report.skipped_documents["not in the exhaustive plan (--only-planned)"] += 1
                continue
            parsed = _kbpo_document(doc, raw_mentions, raw_relations, number, report)
            if parsed is None:
                continue
            store_checked(report, corpus, doc, *parsed)
    return finish_import(report, corpus)


def store_checked(report: ImportReport, corpus: Corpus, doc: Document, mentions: list[MentionIn],
           relations: list[RelationIn]) -> None:
    """Store one document's gold and count it (imported, or unchanged on a re-import)."""
    if store_document_gold(corpus, doc, mentions, relations):
        report.documents_imported += 1
    else:
        report.documents_unchanged += 1
    report.mentions += len(mentions)
    report.relations += len(relations)


def _kbpo_document(doc: Document, raw_mentions: object, raw_relations: object, number: int,
                   report: ImportReport) -> tuple[list[MentionIn], list[RelationIn]] | None:
    where = f"line {number} ({doc.doc_id})"
    if not isinstance(raw_mentions, list) or not isinstance(raw_relations, list):
        report.skipped_documents["malformed line"] += 1
        report.note(f"{where}: 'mentions' and 'relations' must be lists")
        return None
    by_span: dict[tuple[int, int], tuple[str, str, str]] = {}
    for i, m in enumerate(raw_mentions):
        try:
            (b, e), typ, entity = m["span"], m["type"], str(m["entity"])
            link = m.get("link") or ""
        except (KeyError, TypeError, ValueError):
            report.skipped_mentions["malformed mention"] += 1
            report.note(f"{where}: mentions[{i}] needs span, type and entity")
            continue
        if not (isinstance(b, int) and isinstance(e, int) and 0 <= b < e <= len(doc.text)):
            report.skipped_mentions["offsets outside the document"] += 1
            report.note(f"{where}: mentions[{i}] span {b}-{e} is outside the text")
            continue
        if typ not in ENTITY_TYPES:
            report.skipped_mentions[f"unknown type {typ}"] += 1
            continue
        if "text" in m and doc.text[b:e] != m["text"]:
            report.skipped_mentions["text does not match the document"] += 1
            report.note(f"{where}: mentions[{i}] text {m['text']!r} != document text "
                        f"{doc.text[b:e]!r}; is this the gold of another corpus version?")
            continue
        if (b, e) in by_span:
            report.skipped_mentions["duplicate span"] += 1
            continue
        by_span[(b, e)] = (typ, entity, link)
    plain = [MentionIn(b, e, t, ent, False, link) for (b, e), (t, ent, link) in by_span.items()]
    canon = set(longest_first(plain).values())
    mentions = [MentionIn(m.begin, m.end, m.type, m.entity, (m.begin, m.end) in canon, m.link)
                for m in sorted(plain, key=lambda m: (m.begin, m.end))]
    relations: dict[tuple, RelationIn] = {}
    types = {span: typ for span, (typ, _, _) in by_span.items()}
    for i, r in enumerate(raw_relations):
        try:
            s, o, predicate = tuple(r["subject"]), tuple(r["object"]), r["predicate"]
        except (KeyError, TypeError, ValueError):
            report.skipped_labels["malformed relation"] += 1
            report.note(f"{where}: relations[{i}] needs subject, object and predicate")
            continue
        try:
            c = canonical_relation(doc.doc_id, s, predicate, o, types)
        except GoldProblem as exc:
            reason = ("argument is not a gold mention" if s not in by_span or o not in by_span
                      else "predicate does not fit the argument types")
            report.skipped_labels[reason] += 1
            report.note(f"{where}: relations[{i}]: {exc}")
            continue
        rel = RelationIn(c.subject, c.object, c.predicate, by_span[c.subject][1])
        key = (rel.subject, rel.object, rel.predicate)
        if key in relations:
            report.merged_instances += 1
        relations[key] = rel
    return mentions, list(relations.values())


