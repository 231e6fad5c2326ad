"""Importing existing exhaustive gold annotation as the true-instance sample Ŷ0.

Two formats (docs/exhaustive.md §Import, mapping table in docs/docred-mapping.md):

- `kbpo`: the demo world's `gold.jsonl` (docs/demo-world.md) for documents already
  loaded into the corpus;
- `docred`: DocRED / Re-DocRED JSON (a list of documents with `title`, `sents`,
  `vertexSet`, `labels`); the documents are created from the tokens.

Each imported document becomes an `ExhaustiveDocument` in state `complete` (stage
`imported`, or its planned stage when it was already part of the two-stage sample)
with its `GoldMention`s and `GoldRelation`s (source `import`). Re-importing the same
file changes nothing; a document whose gold changed is replaced as a whole. Everything
skipped is counted by reason in the `ImportReport`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from kbpo.models import Corpus, Document, Sentence
from kbpo.schema import ENTITY_TYPES, canonicalize

from .models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldMention,
    GoldRelation,
    Question,
    QuestionState,
    TaskKind,
)
from .signals import labels_changed

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


@dataclass(frozen=True)
class MentionIn:
    begin: int
    end: int
    type: str
    entity: str
    canonical: bool
    link: str = ""


@dataclass(frozen=True)
class RelationIn:
    subject: tuple[int, int]
    object: tuple[int, int]
    predicate: str
    subject_entity: str


class GoldImportError(Exception):
    """A file that cannot be imported at all (wrong format, unreadable)."""


def _sentence_for(sentences: list[tuple[int, int, int]], begin: int, end: int) -> int | None:
    for pk, sb, se in sentences:
        if sb <= begin and end <= se:
            return pk
    return None


def store_document_gold(corpus: Corpus, document: Document, mentions: list[MentionIn],
                        relations: list[RelationIn]) -> bool:
    """Write one document's gold as complete exhaustive annotation; False if unchanged.

    A document already in the two-stage sample keeps its stage (so the sample design
    is preserved) and its open crowd questions are cancelled.
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
                        source="import") for m in mentions)
        GoldRelation.objects.bulk_create(
            GoldRelation(document=document, subject_begin=r.subject[0],
                         subject_end=r.subject[1], object_begin=r.object[0],
                         object_end=r.object[1], predicate=r.predicate,
                         subject_entity=r.subject_entity[:300],
                         sentence_id=_sentence_for(sentences, min(r.subject[0], r.object[0]),
                                                   max(r.subject[1], r.object[1])),
                         source="import") for r in relations)
    return True


def _longest_first(mentions: Iterable[MentionIn]) -> dict[str, tuple[int, int]]:
    """The canonical span per entity: the longest mention, the earliest on ties."""
    best: dict[str, tuple[int, int]] = {}
    for m in mentions:
        cur = best.get(m.entity)
        if cur is None or (m.end - m.begin, -m.begin) > (cur[1] - cur[0], -cur[0]):
            best[m.entity] = (m.begin, m.end)
    return best


def _finish(report: ImportReport, corpus: Corpus) -> ImportReport:
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
                            "docs/demo-world.md")
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
            _store(report, corpus, doc, *parsed)
    return _finish(report, corpus)


def _store(report: ImportReport, corpus: Corpus, doc: Document, mentions: list[MentionIn],
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
    canon = set(_longest_first(plain).values())
    mentions = [MentionIn(m.begin, m.end, m.type, m.entity, (m.begin, m.end) in canon, m.link)
                for m in sorted(plain, key=lambda m: (m.begin, m.end))]
    relations: dict[tuple, RelationIn] = {}
    for i, r in enumerate(raw_relations):
        try:
            s, o, predicate = tuple(r["subject"]), tuple(r["object"]), r["predicate"]
        except (KeyError, TypeError, ValueError):
            report.skipped_labels["malformed relation"] += 1
            report.note(f"{where}: relations[{i}] needs subject, object and predicate")
            continue
        if s not in by_span or o not in by_span:
            report.skipped_labels["argument is not a gold mention"] += 1
            report.note(f"{where}: relations[{i}] argument {s if s not in by_span else o} "
                        "is not among the document's mentions")
            continue
        st, ot = by_span[s][0], by_span[o][0]
        try:
            c = canonicalize((doc.doc_id, *s), st, predicate, (doc.doc_id, *o), ot)
        except (ValueError, KeyError):
            report.skipped_labels["predicate does not fit the argument types"] += 1
            report.note(f"{where}: relations[{i}] {predicate} between {st} and {ot}")
            continue
        subj_entity = by_span[(c.subject[1], c.subject[2])][1]
        rel = RelationIn((c.subject[1], c.subject[2]), (c.object[1], c.object[2]), c.predicate,
                         subj_entity)
        key = (rel.subject, rel.object, rel.predicate)
        if key in relations:
            report.merged_instances += 1
        relations[key] = rel
    return mentions, list(relations.values())


# --- DocRED / Re-DocRED -------------------------------------------------------------

# DocRED entity types -> KBP types; NUM and MISC have no KBP counterpart.
DOCRED_TYPES: dict[str, str] = {"PER": "PER", "ORG": "ORG", "LOC": "GPE", "TIME": "DATE"}

# Wikidata property -> {subject type (KBP) -> predicate stated in the label's h→t direction}.
# Reasoning per row in docs/docred-mapping.md. Object types are checked by canonicalize.
WIKIDATA_TO_KBP: dict[str, dict[str, str]] = {
    "P569": {"PER": "per:date_of_birth"},
    "P570": {"PER": "per:date_of_death"},
    "P19": {"PER": "per:place_of_birth"},
    "P20": {"PER": "per:place_of_death"},
    "P551": {"PER": "per:place_of_residence"},
    "P26": {"PER": "per:spouse"},
    "P22": {"PER": "per:parents"},        # father: t is h's parent
    "P25": {"PER": "per:parents"},        # mother
    "P40": {"PER": "per:children"},
    "P3373": {"PER": "per:siblings"},
    "P1038": {"PER": "per:other_family"},
    "P108": {"PER": "per:employee_or_member_of"},
    "P463": {"PER": "per:employee_or_member_of", "ORG": "org:member_of",
             "GPE": "gpe:member_of"},
    "P102": {"PER": "per:employee_or_member_of"},
    "P54": {"PER": "per:employee_or_member_of"},
    "P69": {"PER": "per:schools_attended"},
    "P112": {"ORG": "org:founded_by"},
    "P159": {"ORG": "org:place_of_headquarters"},
    "P571": {"ORG": "org:date_founded"},
    "P576": {"ORG": "org:date_dissolved"},
    "P355": {"ORG": "org:subsidiaries"},
    "P749": {"ORG": "org:parents"},
    "P127": {"ORG": "org:shareholders"},
    "P488": {"ORG": "org:employees_or_members"},   # chairperson: a top member
    "P169": {"ORG": "org:employees_or_members"},   # chief executive officer
    "P118": {"ORG": "org:member_of"},              # league of a sports team
}

# Detokenisation: one space between tokens, except none before closing punctuation and
# clitics and none after opening brackets; one space between sentences.
NO_SPACE_BEFORE = frozenset({",", ".", ";", ":", "!", "?", ")", "]", "}", "%", "'s", "'",
                             "n't", "'re", "'ve", "'ll", "'d", "'m", "''", "-RRB-"})
NO_SPACE_AFTER = frozenset({"(", "[", "{", "``", "$", "-LRB-"})
DOC_ID_UNSAFE = re.compile(r"[\s:]+")


def detokenize(sents: list[list[str]]) -> tuple[str, list[list[tuple[int, int]]]]:
    """Rebuild a text from DocRED token lists; returns it with every token's offsets."""
    parts: list[str] = []
    pos = 0
    offsets: list[list[tuple[int, int]]] = []
    prev: str | None = None
    for sent in sents:
        spans = []
        for j, token in enumerate(sent):
            if prev is not None:
                glue = j > 0 and (token in NO_SPACE_BEFORE or prev in NO_SPACE_AFTER)
                if not glue:
                    parts.append(" ")
                    pos += 1
            spans.append((pos, pos + len(token)))
            parts.append(token)
            pos += len(token)
            prev = token
        offsets.append(spans)
    return "".join(parts), offsets


def docred_doc_id(title: str, prefix: str = "") -> str:
    """A document id from a DocRED title: whitespace and colons become underscores."""
    clean = DOC_ID_UNSAFE.sub("_", title.strip()).strip("_") or "untitled"
    return (prefix + clean)[:190]


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
        _store(report, corpus, doc, *_docred_gold(doc, rec, offsets, report, i))
    return _finish(report, corpus)


def _entity_type(vertex: list) -> str | None:
    """The entity's DocRED type: the most frequent among its mentions, first on ties."""
    types = [m.get("type") for m in vertex if isinstance(m, dict)]
    if not types:
        return None
    counts = Counter(types)
    return max(types, key=lambda t: (counts[t], -types.index(t)))


def _docred_gold(doc: Document, rec: dict, offsets: list[list[tuple[int, int]]],
                 report: ImportReport, index: int
                 ) -> tuple[list[MentionIn], list[RelationIn]]:
    where = f"document [{index}] ({doc.doc_id})"
    # entity index -> (KBP type or None, raw type, {sentence id: [spans]})
    entities: list[tuple[str | None, str, dict[int, list[tuple[int, int]]]]] = []
    mentions: dict[tuple[int, int], MentionIn] = {}
    for e, vertex in enumerate(rec["vertexSet"]):
        raw_type = _entity_type(vertex) or "?"
        kbp_type = DOCRED_TYPES.get(raw_type)
        per_sent: dict[int, list[tuple[int, int]]] = {}
        for j, m in enumerate(vertex):
            try:
                sid = m["sent_id"]
                start, end = m["pos"]
            except (KeyError, TypeError, ValueError):
                report.skipped_mentions["malformed mention"] += 1
                report.note(f"{where}: vertexSet[{e}][{j}] needs sent_id and pos")
                continue
            if (not isinstance(sid, int) or not 0 <= sid < len(offsets)
                    or not isinstance(start, int) or not isinstance(end, int)
                    or not 0 <= start < end <= len(offsets[sid])):
                report.skipped_mentions["position outside its sentence"] += 1
                report.note(f"{where}: vertexSet[{e}][{j}] pos {m.get('pos')} in sentence "
                            f"{sid} is out of range")
                continue
            if kbp_type is None:
                report.skipped_mentions[f"entity type {raw_type} not in the KBP schema"] += 1
                continue
            span = (offsets[sid][start][0], offsets[sid][end - 1][1])
            per_sent.setdefault(sid, []).append(span)
            if span in mentions:
                if mentions[span].entity != f"E{e}":
                    report.skipped_mentions["span already a mention of another entity"] += 1
                continue
            mentions[span] = MentionIn(span[0], span[1], kbp_type, f"E{e}", False)
        entities.append((kbp_type, raw_type, per_sent))
    canon = set(_longest_first(mentions.values()).values())
    gold_mentions = [MentionIn(m.begin, m.end, m.type, m.entity, (m.begin, m.end) in canon)
                     for m in sorted(mentions.values(), key=lambda m: (m.begin, m.end))]

    relations: dict[tuple, RelationIn] = {}
    for k, label in enumerate(rec.get("labels", [])):
        report.labels += 1
        try:
            h, t, prop = label["h"], label["t"], label["r"]
            evidence = label.get("evidence") or []
        except (KeyError, TypeError):
            report.skipped_labels["malformed label"] += 1
            report.note(f"{where}: labels[{k}] needs h, t and r")
            continue
        if (not isinstance(h, int) or not isinstance(t, int)
                or not 0 <= h < len(entities) or not 0 <= t < len(entities)):
            report.skipped_labels["entity index out of range"] += 1
            report.note(f"{where}: labels[{k}] h={h!r} t={t!r} is not a vertexSet index")
            continue
        if h == t:
            report.skipped_labels["relation of an entity with itself"] += 1
            continue
        by_type = WIKIDATA_TO_KBP.get(prop)
        if by_type is None:
            report.skipped_labels["property without a KBP counterpart"] += 1
            report.unmapped_properties[str(prop)] += 1
            continue
        (ht, hraw, hsents), (tt, traw, tsents) = entities[h], entities[t]
        if ht is None or tt is None:
            report.skipped_labels[
                f"argument of type {hraw if ht is None else traw} (not in the KBP schema)"] += 1
            continue
        predicate = by_type.get(ht)
        if predicate is None:
            report.skipped_labels["types do not fit the mapped predicate"] += 1
            continue
        both = sorted(set(hsents) & set(tsents))
        if evidence:
            sentence_ids = [s for s in both if s in set(evidence)]
            reason = "evidence sentences do not mention both entities (cross-sentence)"
        else:
            sentence_ids = both
            reason = "no evidence and no sentence mentions both entities"
        if not sentence_ids:
            report.skipped_labels[reason] += 1
            continue
        made, misfit = 0, False
        for sid in sentence_ids:
            # the closest pair of the two entities' mentions in that sentence
            s_span, o_span = min(
                ((a, b) for a in hsents[sid] for b in tsents[sid] if a != b),
                key=lambda ab: (abs(ab[0][0] - ab[1][0]), ab), default=(None, None))
            if s_span is None or o_span is None:
                continue
            try:
                c = canonicalize((doc.doc_id, *s_span), ht, predicate,
                                 (doc.doc_id, *o_span), tt)
            except ValueError:
                misfit = True
                break
            subj = (c.subject[1], c.subject[2])
            rel = RelationIn(subj, (c.object[1], c.object[2]), c.predicate,
                             mentions[subj].entity)
            key = (rel.subject, rel.object, rel.predicate)
            if key in relations:
                report.merged_instances += 1
            else:
                relations[key] = rel
            made += 1
        if made:
            report.labels_mapped += 1
        elif misfit:
            report.skipped_labels["types do not fit the mapped predicate"] += 1
        else:
            report.skipped_labels["both entities share one span"] += 1
    return gold_mentions, list(relations.values())


__all__ = ["DOCRED_TYPES", "WIKIDATA_TO_KBP", "GoldImportError", "ImportReport", "MentionIn",
           "RelationIn", "detokenize", "docred_doc_id", "import_docred", "import_kbpo",
           "store_document_gold"]
