"""Validate a KB file against its corpus and ingest it.

A file is accepted whole or refused whole, unless its owner chose drop-invalid:
`processing` then re-runs the ingestor leaving out the lines (and the entities) that
had errors, until what is left is clean.

The file is streamed once, in batches of lines. Pass 1 reads entity lines (types,
mentions, links), checks mention text against the documents and stages the mentions;
each entity's state (type, first line) lives in a temporary table that every batch
reads and updates (`ingest_nodes`); relation lines go to a temporary spool file. Pass
2 reads the spooled relation lines in batches, loads the batch's
entities with their mentions in the cited documents, resolves each argument to a
mention of its entity inside the provenance (the closest subject/object pair when
there are several), folds the predicate into canonical direction and streams the row
out. Rows go to temporary staging tables (Postgres COPY, elsewhere executemany); the
checks that need the whole file (type consistency across entities, conflicting
relations for a pair) and deduplication run in SQL (`ingest_sql`). Memory is bounded
by the batch size and the document cache, whatever the number of entities; problems
are still reported in file order, so the report is the same as a line-by-line pass.

`Ingestor.run` must be called inside a transaction: it raises `Rejected` when the
file has errors, and the caller's rollback removes every staged row.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.db import connection

from kbpo.core import schema
from kbpo.core.gold import closest_pair

from .gzipstream import GzipStream, ignored_message
from .indexes import MASK, DocumentIndex, Entity
from .ingest_lines import ENTITY_KINDS, Item, LineBatches, rare_collections, spooled_batches
from .ingest_nodes import NodeStore, report_untyped
from .ingest_sql import CONFLICTS, check_conflicts, check_types, insert_rows, submission_stats
from .kbformat import (
    MENTION_KINDS,
    SKIPPED_TYPES,
    CorruptFile,
    FileTooLarge,
    Outcome,
    Rejected,
    Report,
    SyntaxProblem,
    TooManyLines,
    check_link,
    clip,
    is_event_type,
    is_node,
    open_stream,
    parse_confidence,
    parse_provenance,
    parse_string,
    same_text,
)
from .models import Submission
from .predicates import skip_by_predicate
from .staging import Stager

FILLER_TYPES = (schema.DATE, schema.TITLE)
DROPPED_WITH_ENTITY = "DROPPED_WITH_ENTITY"


# ---- the ingestor -------------------------------------------------------------------

def _reach(region: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """The spans' begins in order, and the furthest end reached by each prefix."""
    ordered = sorted(region)
    return ([b for b, _ in ordered],
            list(itertools.accumulate((e for _, e in ordered), max)))


@dataclass
class _Counts:
    lines: int = 0
    entity_lines: int = 0
    relation_lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


class Ingestor:
    """Validates one submission's file and, if it is clean, writes its rows."""

    def __init__(self, submission: Submission, drop_lines: frozenset[int] = frozenset(),
                 drop_nodes: frozenset[str] = frozenset()) -> None:
        """`drop_lines` and `drop_nodes` (every line of those entities, and every
        relation using them) are left out: the partial acceptance of `processing`."""
        self.sub = submission
        self.drop_lines = drop_lines
        self.drop_nodes = drop_nodes
        self.bad_nodes: set[str] = set()
        self.cascaded: dict[int, tuple[str, str]] = {}
        # One error line past what drop-invalid accepts is enough to refuse the file.
        self.max_dropped = settings.KBPO_SUBMISSION_MAX_DROPPED
        self.report = Report(settings.KBPO_SUBMISSION_REPORT_MAX, self.max_dropped + 1)
        self.max_bytes = settings.KBPO_SUBMISSION_MAX_BYTES
        self.max_line = settings.KBPO_SUBMISSION_MAX_LINE_BYTES
        self.max_lines = settings.KBPO_SUBMISSION_MAX_LINES
        self.docs = DocumentIndex(submission.corpus_id)
        self._folded_ids: dict[str, str] | None = None  # case-folded doc id -> doc id
        # The current batch's entities only (the rest are in `kbpo_stage_node`).
        self.entities: dict[str, Entity] = {}
        # The current batch's mention lines: (node, doc, begin, end) -> [canonical,
        # first line, last line].
        self.mentions: dict[tuple[str, int, int, int], list[int]] = {}
        self.counts = _Counts()
        self.run_id = ""
        self.staged_relations = 0

    # -- driver --

    def run(self) -> Outcome:
        with rare_collections(), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # The whole-file checks and the final inserts sort and hash a few
                # hundred thousand staged rows: in the default 4 MB they spill to disk.
                # SET LOCAL ends with the ingestion's transaction.
                cursor.execute("SET LOCAL work_mem = '64MB'")
            stager = Stager(cursor)
            # The document index's queries wait for the look-ahead's lookup (pass 2).
            self.docs.lock = stager.lock
            stager.create()
            outcome = self._run(cursor, stager)
            # On rejection the caller's rollback removes the tables with everything else.
            stager.drop()
            return outcome

    def _run(self, cursor: Any, stager: Stager) -> Outcome:
        store = NodeStore(cursor, stager)
        try:
            # Pass 1 keeps the relation lines on disk for pass 2 (memory stays flat).
            with tempfile.TemporaryFile(buffering=1 << 20) as spool:
                with self._open() as raw:
                    self._pass1(raw, spool, stager, store)
                    if isinstance(raw, GzipStream) and raw.ignored:
                        self.report.add(self.counts.lines, "GZIP_TRAILING_BYTES",
                                        ignored_message(raw))
                if self.counts.lines == 0:
                    self.report.add(1, "EMPTY_FILE", "the file is empty")
                    raise self._rejected()
                self._finish_entities(store)
                self._pass2(spool, stager, store)
        except FileTooLarge as exc:
            self.report.add(exc.line, "FILE_TOO_LARGE",
                            f"the file is larger than {exc.limit:,} bytes uncompressed "
                            f"(limit reached at line {exc.line})", always=True)
            raise self._rejected() from None
        except TooManyLines as exc:
            self.report.add(exc.line, "TOO_MANY_LINES",
                            f"the file has more than {exc.limit:,} lines, the limit",
                            always=True)
            raise self._rejected() from None
        except CorruptFile as exc:
            self.report.add(exc.line, "GZIP_CORRUPT",
                            f"the gzip data is corrupt or truncated near line {exc.line} "
                            f"({exc.detail})", always=True)
            raise self._rejected() from None
        for pair in sorted(CONFLICTS):
            stager.add("kbpo_stage_conflict", pair)
        stager.flush_all()
        check_types(cursor, self.report, {pk: d for d, (pk, _) in self.docs.ids.items()})
        check_conflicts(cursor, self.report)
        if self.report.errors == 0 and self.staged_relations == 0:
            self.report.add(self.counts.lines, "NO_RELATIONS",
                            "the file contains no valid relation line to evaluate")
        if self.report.errors:
            raise self._rejected()
        n_entities, n_mentions, n_relations = insert_rows(cursor, self.sub.pk)
        stats = submission_stats(cursor, self.sub.pk, self._base_stats(),
                                 self.staged_relations, len(self.docs.ids))
        return Outcome(self.report, stats, self.run_id, n_entities, n_mentions, n_relations,
                       self.cascaded)

    @contextlib.contextmanager
    def _open(self) -> Iterator[IO[bytes]]:
        with self.sub.file.storage.open(self.sub.file.name, "rb") as fh:
            # Read the underlying file when the storage wraps one in a django File:
            # its proxy methods cost a Python call per line read.
            inner = getattr(fh, "file", None)
            stream, _ = open_stream(inner if hasattr(inner, "readline") else fh)
            yield stream

    def _rejected(self) -> Rejected:
        return Rejected(self.report, self._base_stats(), self.run_id,
                        frozenset(self.bad_nodes))

    def _batches(self, raw: IO[bytes], spool: IO[bytes]) -> Iterator[list[Item]]:
        """`LineBatches` over the file, keeping the run id and the count of lines read
        up to date as each batch is handed out."""
        lines = LineBatches(self.drop_lines, self.max_bytes, self.max_line, self.run_id,
                            self.max_lines)
        try:
            for batch in lines.batches(raw, spool):
                self._took(lines)
                yield batch
        finally:
            self._took(lines)

    def _took(self, lines: LineBatches) -> None:
        self.run_id = lines.run_id
        self.counts.lines = lines.lines

    # -- pass 1: entities --

    def _pass1(self, raw: IO[bytes], spool: IO[bytes], stager: Stager,
               store: NodeStore) -> None:
        for batch in self._batches(raw, spool):
            nodes: set[str] = set()
            docs: set[int] = set()
            for _, cols, _ in batch:
                if (cols is not None and cols[1] in ENTITY_KINDS
                        and cols[0] not in self.drop_nodes):
                    nodes.add(cols[0])
                    if (cols[1] in MENTION_KINDS
                            and (doc := self._first_document(cols)) is not None):
                        docs.add(doc)
            self.entities, loaded = store.load(nodes)
            self.docs.prefetch(docs, texts=True)  # the texts the mentions are checked on
            for number, cols, problem in batch:
                if cols is None:
                    assert problem is not None
                    self.report.add(number, *problem)
                else:
                    self._entity_line(number, cols, stager)
            self._stage_mentions(stager)
            store.save(self.entities, loaded)
            if self.report.error_lines_full:
                # More invalid lines than even drop-invalid accepts: the file is refused
                # whatever follows, so a file of junk costs its first lines, not all.
                line = max(number for number, _, _ in batch)
                self.report.add(line, "TOO_MANY_ERRORS",
                                f"validation stopped at line {line:,}: more than "
                                f"{self.max_dropped:,} lines have errors", always=True)
                raise self._rejected()
        self.entities = {}

    def _entity_line(self, number: int, cols: list[str], stager: Stager) -> None:
        kind = cols[1]
        if kind not in ENTITY_KINDS:
            self.counts.relation_lines += 1
            return
        self.counts.entity_lines += 1
        if cols[0] in self.drop_nodes:
            self._cascade(number, cols[0])
            return
        ent = self.entities.get(cols[0])
        if ent is None:
            ent = self.entities[cols[0]] = Entity(number)
        try:
            if kind == "type":
                try:
                    self._type_line(number, cols, ent)
                except SyntaxProblem:
                    self.bad_nodes.add(cols[0])
                    raise
            elif kind == "link":
                if len(cols) not in (3, 4):
                    raise SyntaxProblem("MALFORMED_LINE",
                                        f"a link line has 3 columns, found {len(cols)}")
                if cols[2]:  # empty: no link (a NIL entity); the first link is kept
                    stager.add("kbpo_stage_link", (cols[0], check_link(cols[2]), number))
            elif kind in MENTION_KINDS:
                self._mention_line(number, cols, stager)
            else:
                self.counts.skipped[f"{kind} lines (not used)"] += 1
        except SyntaxProblem as exc:
            self.report.add(number, exc.code, exc.message)

    def _type_line(self, number: int, cols: list[str], ent: Entity) -> None:
        if len(cols) != 3:
            raise SyntaxProblem("MALFORMED_LINE", f"a type line has 3 columns, found {len(cols)}")
        value = cols[2]
        if value in SKIPPED_TYPES or is_event_type(value):
            if not ent.skip:
                event = value not in SKIPPED_TYPES
                self.report.add(number, "UNSUPPORTED_NODE_TYPE" if event else
                                "UNSUPPORTED_ENTITY_TYPE",
                                f"{'node' if event else 'entity'} {cols[0]} has type "
                                f"{clip(value)}{', an event' if event else ''}, which is not "
                                "evaluated")
            ent.skip = True
            return
        if value not in schema.ENTITY_TYPES:
            ent.type_error = True
            upper = value.upper()
            meant = (f" (types are upper case: did you mean {upper}?)"
                     if upper != value and (upper in schema.ENTITY_TYPES
                                            or upper in SKIPPED_TYPES) else "")
            raise SyntaxProblem("UNKNOWN_ENTITY_TYPE",
                                f"entity type {clip(value)} is not one of "
                                f"{', '.join(schema.ENTITY_TYPES)}{meant}")
        if ent.type is None:
            ent.type = value
        elif ent.type == value:
            self.report.add(number, "DUPLICATE_TYPE_LINE",
                            f"entity {cols[0]} already has type {value}")
        else:
            raise SyntaxProblem("INCONSISTENT_ENTITY_TYPE",
                                f"entity {cols[0]} was given type {ent.type} before, now "
                                f"{value}")

    def _resolve_span(self, doc_id: str, begin: int, end: int) -> int:
        """Check a span against the corpus; returns the document's primary key."""
        found = self.docs.ids.get(doc_id)
        if found is None:
            if self._folded_ids is None:  # built once, on the first unknown document
                self._folded_ids = {d.casefold(): d for d in self.docs.ids}
            meant = self._folded_ids.get(doc_id.casefold())
            raise SyntaxProblem("UNKNOWN_DOCUMENT",
                                f"document {clip(doc_id)} is not in corpus "
                                f"{self.sub.corpus.tag}"
                                + (f"; document ids are case-sensitive: did you mean {meant}?"
                                   if meant else ""))
        pk, length = found
        if end > length:
            raise SyntaxProblem("OFFSETS_OUT_OF_RANGE",
                                f"span {doc_id}:{begin}-{end - 1} ends after the document "
                                f"({length} characters, last offset {length - 1})")
        return pk

    def _check_text(self, pk: int, doc_id: str, begin: int, end: int, text: str) -> None:
        actual = self.docs.text(pk)[begin:end]
        if actual != text and not same_text(actual, text):
            raise SyntaxProblem("MENTION_TEXT_MISMATCH",
                                f"the text at {doc_id}:{begin}-{end - 1} is {clip(actual)}, "
                                f"not {clip(text)}")

    def _mention_line(self, number: int, cols: list[str], stager: Stager) -> None:
        if len(cols) == 3:
            raise SyntaxProblem("MENTION_WITHOUT_PROVENANCE",
                                f"the {cols[1]} of {cols[0]} has no provenance span")
        if len(cols) not in (4, 5):
            raise SyntaxProblem("MALFORMED_LINE",
                                f"a mention line has 4 columns, found {len(cols)}")
        text = parse_string(cols[2])
        spans = parse_provenance(cols[3])
        if len(spans) != 1:
            raise SyntaxProblem("BAD_PROVENANCE",
                                f"a mention has exactly one span, found {len(spans)}")
        doc_id, begin, end = spans[0]
        pk = self._resolve_span(doc_id, begin, end)
        self._check_text(pk, doc_id, begin, end, text)
        # Pass 2 and the entity's canonical span read the staged row (ingest_nodes).
        # Lines repeating a span of their entity (a canonical_mention and its mention)
        # merge into one row per batch (`_stage_mentions`).
        canonical = int(cols[1] == "canonical_mention")
        key = (cols[0], pk, begin, end)
        row = self.mentions.get(key)
        if row is None:
            self.mentions[key] = [canonical, number, number]
        else:
            if canonical > row[0]:  # the first canonical line now ranks the span
                row[0], row[1] = canonical, number
            row[2] = number

    def _stage_mentions(self, stager: Stager) -> None:
        """Stage the batch's merged mention rows (see `kbpo_stage_mention`)."""
        for (node, pk, begin, end), (canonical, first, last) in self.mentions.items():
            stager.add("kbpo_stage_mention", (node, pk, begin, end, None, canonical, first,
                                              last))
        self.mentions = {}

    def _finish_entities(self, store: NodeStore) -> None:
        skipped = store.skipped()
        if skipped:
            self.counts.skipped["entities of type FAC/LOC"] += skipped
        report_untyped(store, self.report, self.bad_nodes)
        store.stage_entities()

    # -- pass 2: relations --

    def _pass2(self, spool: IO[bytes], stager: Stager, store: NodeStore) -> None:
        with store.looking_up(spooled_batches(spool), self._keys) as looked_up:
            for lines, entities in looked_up:
                self.entities = entities
                drop_nodes = self.drop_nodes
                for number, cols in lines:
                    if drop_nodes and (cols[0] in drop_nodes or cols[2] in drop_nodes
                                       ) and not schema.is_sentiment(cols[1]):
                        self._cascade(number, cols[0] if cols[0] in drop_nodes else cols[2])
                        continue
                    try:
                        self._relation_line(number, cols, stager)
                    except SyntaxProblem as exc:
                        self.report.add(number, exc.code, exc.message)
        self.entities = {}

    def _keys(self, lines: list[tuple[int, list[str]]]) -> set[tuple[str, int | None]]:
        """The (node, document) keys of a batch of relation lines, its documents loaded."""
        keys: set[tuple[str, int | None]] = set()
        filler_docs: set[int] = set()
        for _, cols in lines:
            doc = self._first_document(cols)
            keys.add((cols[0], doc))
            if is_node(cols[2]):
                keys.add((cols[2], doc))
            elif doc is not None:
                filler_docs.add(doc)
        # Every relation needs its sentence; a string filler, its text checked.
        self.docs.prefetch_batch({doc for _, doc in keys if doc is not None}, filler_docs)
        return keys

    def _first_document(self, cols: list[str]) -> int | None:
        """The primary key of the document a relation line's provenance starts in
        (where its arguments' mentions are looked up), if it names a known one."""
        if len(cols) < 4:
            return None
        found = self.docs.ids.get(cols[3].split(",", 1)[0].strip().split(":", 1)[0])
        return found[0] if found else None

    def _cascade(self, number: int, node: str) -> None:
        if len(self.cascaded) <= self.max_dropped:  # (past it the file is refused)
            self.cascaded[number] = (DROPPED_WITH_ENTITY,
                                     f"dropped with entity {clip(node)}, whose type line "
                                     "or type was invalid")

    def _entity(self, node: str, role: str) -> Entity | None:
        """The entity for a node; None when it is skipped (reason counted)."""
        ent = self.entities.get(node)
        if ent is None:
            raise SyntaxProblem("UNKNOWN_ENTITY",
                                f"the {role} {clip(node)} is never declared (no type or "
                                "mention lines)")
        if ent.skip:
            self.counts.skipped["relations with a FAC/LOC argument"] += 1
            return None
        if ent.type is None:
            self.counts.skipped["relations with an untyped entity"] += 1
            return None
        return ent

    def _relation_line(self, number: int, cols: list[str], stager: Stager) -> None:
        if skip_by_predicate(number, cols, self.entities, self.report, self.counts.skipped):
            return
        pred = cols[1]
        if len(cols) not in (4, 5):
            raise SyntaxProblem("MALFORMED_LINE",
                                f"a relation line has 5 columns (subject, predicate, object, "
                                f"provenance, confidence), found {len(cols)}")
        spans = parse_provenance(cols[3])
        conf = parse_confidence(cols[4]) if len(cols) == 5 else 1.0
        subj = self._entity(cols[0], "subject")
        obj_col = cols[2]
        obj_is_node = is_node(obj_col)
        if not obj_is_node and not obj_col.startswith('"'):
            raise SyntaxProblem("MALFORMED_LINE",
                                f"the object {clip(obj_col)} is neither an entity node (:E2) "
                                "nor a quoted string")
        obj = self._entity(obj_col, "object") if obj_is_node else None
        if subj is None or (obj_is_node and obj is None):
            return
        assert subj.type is not None
        if obj_is_node and obj_col == cols[0]:
            raise SyntaxProblem("SELF_RELATION", f"{cols[0]} is related to itself")

        doc_id = spans[0][0]
        pks = [self._resolve_span(d, b, e) for d, b, e in spans]
        if any(d != doc_id for d, _, _ in spans):
            raise SyntaxProblem("PROVENANCE_CROSSES_SENTENCES",
                                "the provenance spans lie in different documents")
        pk = pks[0]
        sentence = None
        for _, b, e in spans:
            found = self.docs.sentence_of(pk, b, e)
            if found is None or (sentence is not None and found[0] != sentence[0]):
                raise SyntaxProblem(
                    "PROVENANCE_CROSSES_SENTENCES",
                    f"provenance {doc_id}:{b}-{e - 1} is not inside the same single sentence"
                    + (f" as {doc_id}:{spans[0][1]}-{spans[0][2] - 1}" if sentence else ""))
            sentence = found
        assert sentence is not None
        stype = subj.type

        filler = None
        if obj_is_node:
            assert obj is not None and obj.type is not None
            otype = obj.type
            if (stype, otype) not in schema.allowed_types(pred):
                raise SyntaxProblem("ARGUMENT_TYPES_MISMATCH",
                                    f"{pred} does not relate a {stype} subject to a {otype} "
                                    f"object ({cols[0]} is {stype}, {obj_col} is {otype})")
            region = [(b, e) for _, b, e in spans]
        else:
            text = parse_string(obj_col)
            otypes = [o for s, o in schema.allowed_types(pred) if s == stype
                      and o in FILLER_TYPES]
            if not otypes:
                raise SyntaxProblem("ARGUMENT_TYPES_MISMATCH",
                                    f"{pred} does not take a {stype} subject with a string "
                                    "object")
            otype = otypes[0]
            _, fb, fe = spans[0]
            try:
                self._check_text(pk, doc_id, fb, fe, text)
            except SyntaxProblem as exc:
                doc = self.docs.text(pk)
                later = next(((b, e) for _, b, e in spans[1:]
                              if same_text(doc[b:e], text)), None)
                if later is None:
                    raise
                # The filler written after its context: say so, not only "mismatch".
                raise SyntaxProblem(exc.code, f"{exc.message}; the filler's span must come "
                                              f"first in the provenance, and {doc_id}:"
                                              f"{later[0]}-{later[1] - 1} holds it") from None
            filler = (fb, fe)
            # The first provenance is the filler; the rest (or its sentence) the context.
            region = [(b, e) for _, b, e in spans[1:]] or [(sentence[1], sentence[2])]

        # Of several spans: sorted by begin with the furthest end reached so far, made once
        # for both arguments (see `_find`).
        index = None if len(region) == 1 else _reach(region)
        s_spans = self._find(subj, pk, region, index, "SUBJECT_NOT_IN_PROVENANCE", cols[0],
                             doc_id)
        if obj_is_node:
            assert obj is not None
            o_spans = self._find(obj, pk, region, index, "OBJECT_NOT_IN_PROVENANCE",
                                 obj_col, doc_id)
        else:
            assert filler is not None
            o_spans = [filler]
        if len(s_spans) == 1 and len(o_spans) == 1:
            s_span, o_span = s_spans[0], o_spans[0]  # closest_pair of one candidate
        else:
            s_span, o_span = closest_pair(s_spans, o_spans)
        if s_span == o_span:
            raise SyntaxProblem("SELF_RELATION",
                                f"subject and object are the same span {doc_id}:"
                                f"{s_span[0]}-{s_span[1] - 1}")
        if len(s_spans) > 1 or len(o_spans) > 1:
            text = self.docs.text(pk)
            self.report.add(number, "AMBIGUOUS_MENTION",
                            f"{cols[0]} has {len(s_spans)} and the object {len(o_spans)} "
                            "mention(s) inside the provenance; chose the closest pair: "
                            f"{clip(text[s_span[0]:s_span[1]])} at {doc_id}:{s_span[0]}-"
                            f"{s_span[1] - 1} and {clip(text[o_span[0]:o_span[1]])} at "
                            f"{doc_id}:{o_span[0]}-{o_span[1] - 1}")
        predicate, swap = schema.orient(pred, stype, s_span, otype, o_span)
        subj_node, obj_node = cols[0], (obj_col if obj_is_node else None)
        if swap:
            row = (number, pk, o_span[0], o_span[1], s_span[0], s_span[1], otype, stype,
                   sentence[0], predicate, obj_node, subj_node, conf)
        else:
            row = (number, pk, s_span[0], s_span[1], o_span[0], o_span[1], stype, otype,
                   sentence[0], predicate, subj_node, obj_node, conf)
        stager.add("kbpo_stage_relation", row)
        self.staged_relations += 1
        if filler is not None:
            stager.add("kbpo_stage_mention", (None, pk, filler[0], filler[1], otype, 0, number,
                                                  number))

    def _find(self, ent: Entity, pk: int, region: list[tuple[int, int]],
              index: tuple[list[int], list[int]] | None, code: str, node: str,
              doc_id: str) -> list[tuple[int, int]]:
        """The mentions of `ent` inside the provenance region, in text order (`index`:
        `_reach(region)`, for a region of several spans)."""
        if index is None:  # one span, the usual case, without a generator per mention
            (rb, re), = region
            hits = [m for m in ent.in_document(pk) if rb <= (m >> 32) & MASK and m & MASK <= re]
        else:
            # A mention is inside some span iff, of the spans beginning at or before it,
            # the furthest-reaching ends at or after it: a bisection per mention, not a
            # scan of every span (a line may hold thousands, its entity as many mentions).
            begins, reach = index
            hits = [m for m in ent.in_document(pk)
                    if (i := bisect.bisect_right(begins, (m >> 32) & MASK)) > 0
                    and reach[i - 1] >= m & MASK]
        if not hits:
            where = ", ".join(f"{doc_id}:{b}-{e - 1}" for b, e in region[:3])
            if len(region) > 3:  # the message is stored and served: keep it short
                where += f" and {len(region) - 3:,} more spans"
            raise SyntaxProblem(code, f"{node} has no mention inside the provenance {where}")
        if len(hits) > 1:  # distinct spans in text order (a span may be staged twice)
            hits = sorted(set(hits))
        return [((m >> 32) & MASK, m & MASK) for m in hits]

    def _base_stats(self) -> dict[str, Any]:
        return {
            "lines": self.counts.lines,
            "entity_lines": self.counts.entity_lines,
            "relation_lines": self.counts.relation_lines,
            "skipped": dict(self.counts.skipped),
            "problems_by_code": dict(self.report.counts),
        }
