"""Predictions in the official DocRED result format: recognising it, parsing and
validating it against a DocRED corpus (docs/researchers/docred.md).

A result file is one JSON list (plain or gzip) of
`{"title": str, "h_idx": int, "t_idx": int, "r": "P17", "evidence": [int, ...]?}`,
each a directed fact between two entities (vertexSet indices) of the document with
that title. Problems go to the same `Report` as TAC KB files; their "line" is the
prediction's position in the list, from 1 (what drop-invalid drops), and the message
gives its JSON path (`[12].h_idx`).

This module knows the format and an in-memory view of the corpus (`CorpusView`), not
the database; `docred_ingest` reads the corpus and writes the rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO

from kbpo.core.jsonstream import Flawed
from kbpo.core.schemas import RelationSchema

from .kbformat import Report, clip, open_stream

TAC_KB = "tac"
DOCRED = "docred"
FORMATS = (TAC_KB, DOCRED)
FIELDS = ("title", "h_idx", "t_idx", "r")
# A JSON list whose first element is an object (or an empty list): no TAC KB file
# starts so (its first line is a run id). A JSON object is no TAC KB file either: read
# as DocRED, it is refused at upload with what to change (`check_upload`).
_JSON_LIST = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*\[\s*[{\]]")
_JSON_OBJECT = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*\{\s*\"")


def sniff(fh: IO[bytes]) -> str:
    """The format of an upload by its content: DOCRED for a JSON list of objects,
    TAC_KB otherwise. Reads at most 4 kB (decompressed) and rewinds."""
    fh.seek(0)
    stream, _ = open_stream(fh)
    try:
        head = stream.read(4096)
    except (OSError, EOFError):
        head = b""
    finally:
        fh.seek(0)
    return DOCRED if _JSON_LIST.match(head) or _JSON_OBJECT.match(head) else TAC_KB


def _is_object(fh: IO[bytes]) -> bool:
    fh.seek(0)
    stream, _ = open_stream(fh)
    try:
        return bool(_JSON_OBJECT.match(stream.read(4096)))
    except (OSError, EOFError):
        return False
    finally:
        fh.seek(0)


def format_problem(found: str, declared: str | None, schema_name: str, corpus_tag: str
                   ) -> str | None:
    """Why a file of format `found` cannot go to a corpus on `schema_name`, or None.

    A DocRED corpus takes DocRED result files, a TAC KBP corpus TAC KB files; a format
    given explicitly must also be the file's."""
    if declared is not None and declared != found:
        return (f"The file is not in the {_SHORT[declared]} format you chose: it reads as "
                f"{_NAMES[found]}. Check the file, or leave the format out to have it "
                "recognised.")
    wanted = DOCRED if schema_name == DOCRED else TAC_KB
    if found != wanted:
        return (f"This is {_NAMES[found]}, but corpus {corpus_tag} is evaluated on the "
                f"{'DocRED' if wanted == DOCRED else 'TAC KBP'} schema and takes "
                f"{_NAMES[wanted]}s. Choose a corpus of the right kind "
                "(docs/researchers/docred.md, docs/reference/kb-format.md).")
    return None


_SHORT = {TAC_KB: "TAC KB", DOCRED: "DocRED result"}
_NAMES = {TAC_KB: "a TAC KB file", DOCRED: "a DocRED result file (a JSON list of "
                                           "{title, h_idx, t_idx, r, evidence})"}


@dataclass(frozen=True)
class DocView:
    """What validation needs of one corpus document."""

    pk: int
    doc_id: str
    title: str
    n_sentences: int
    n_entities: int


@dataclass
class CorpusView:
    by_title: dict[str, DocView]
    # For suggestions: a title differing only in case or spacing, or a document id.
    loose: dict[str, str] = field(default_factory=dict)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, docs: Iterable[DocView]) -> CorpusView:
        by_title: dict[str, DocView] = {}
        ambiguous: dict[str, list[str]] = {}
        loose: dict[str, str] = {}
        for d in docs:
            if d.title in by_title:
                ambiguous.setdefault(d.title, [by_title[d.title].doc_id]).append(d.doc_id)
            by_title.setdefault(d.title, d)
            loose.setdefault(_loose(d.title), d.title)
            loose.setdefault(_loose(d.doc_id), d.title)
        return cls(by_title, loose, ambiguous)


def _loose(text: str) -> str:
    return " ".join(text.replace("_", " ").split()).casefold()


@dataclass(slots=True)
class Prediction:
    number: int  # position in the list, from 1
    doc: DocView
    h: int
    t: int
    r: str
    evidence: set[int]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_prediction(number: int, p: str, item: object, corpus: CorpusView,
                     schema: RelationSchema) -> tuple[str, str] | Prediction:
    """One prediction checked (`p` its JSON path): the Prediction, or (code, message)
    of its first error."""
    if isinstance(item, Flawed):
        return ("MALFORMED_PREDICTION", f"{p}: {item.problem}")
    if not isinstance(item, dict):
        return ("MALFORMED_PREDICTION", f"{p}: expected an object {{\"title\", \"h_idx\", "
                                        f"\"t_idx\", \"r\"}}, got {type(item).__name__}")
    missing = [f for f in FIELDS if f not in item]
    if missing:
        return ("MALFORMED_PREDICTION",
                f"{p}: missing {', '.join(repr(f) for f in missing)}")
    title, h, t, r = (item[f] for f in FIELDS)
    if not isinstance(title, str):
        return ("MALFORMED_PREDICTION", f"{p}.title: expected a string, got "
                                        f"{clip(repr(title))}")
    for name, value in (("h_idx", h), ("t_idx", t)):
        if not _is_int(value):
            return ("MALFORMED_PREDICTION", f"{p}.{name}: expected an integer entity "
                                            f"index, got {clip(repr(value))}")
    if not isinstance(r, str):
        return ("MALFORMED_PREDICTION", f"{p}.r: expected a relation id string such as "
                                        f"\"P17\", got {clip(repr(r))}")
    evidence = item.get("evidence")
    if evidence is None:
        evidence = []
    if not isinstance(evidence, list) or not all(_is_int(e) for e in evidence):
        return ("MALFORMED_PREDICTION", f"{p}.evidence: expected a list of sentence "
                                        f"indices, got {clip(repr(evidence))}")
    doc = corpus.by_title.get(title)
    if doc is None:
        near = corpus.loose.get(_loose(title))
        hint = f"; did you mean {clip(near)}?" if near else ""
        return ("UNKNOWN_TITLE", f"{p}.title: no document of the corpus has the title "
                                 f"{clip(title)}{hint}")
    if title in corpus.ambiguous:
        return ("UNKNOWN_TITLE", f"{p}.title: several documents have the title "
                                 f"{clip(title)} ({', '.join(corpus.ambiguous[title])}); "
                                 "the prediction cannot name one")
    for name, value in (("h_idx", h), ("t_idx", t)):
        assert isinstance(value, int)
        if not 0 <= value < doc.n_entities:
            return ("ENTITY_INDEX_OUT_OF_RANGE",
                    f"{p}.{name}: {value} is not an entity of {clip(title)}, which has "
                    f"{doc.n_entities} (0 to {doc.n_entities - 1})")
    if h == t:
        return ("SELF_RELATION", f"{p}: h_idx and t_idx are both {h}; a relation needs "
                                 "two different entities")
    if not schema.is_relation(r):
        guess = schema.closest_id(r)
        hint = f"; did you mean {guess} ({schema.label(guess)})?" if guess else ""
        return ("UNKNOWN_RELATION", f"{p}.r: {clip(r)} is not a relation of the "
                                    f"{schema.title} schema{hint}")
    for k, e in enumerate(evidence):
        if not 0 <= e < doc.n_sentences:
            return ("BAD_EVIDENCE", f"{p}.evidence[{k}]: {e} is not a sentence of "
                                    f"{clip(title)}, which has {doc.n_sentences} (0 to "
                                    f"{doc.n_sentences - 1})")
    assert isinstance(h, int) and isinstance(t, int)
    return Prediction(number, doc, h, t, r, set(evidence))


def check_predictions(items: Iterable[tuple[str, object]], corpus: CorpusView,
                      schema: RelationSchema, report: Report,
                      drop: frozenset[int] = frozenset()) -> tuple[list[Prediction], int]:
    """Every valid prediction, duplicates merged (first position kept, evidence joined),
    and the number read; problems go to `report`, predictions in `drop` are left out."""
    kept: dict[tuple[int, int, int, str], Prediction] = {}
    n = 0
    for n, (where, item) in enumerate(items, start=1):
        if n in drop:
            continue
        checked = check_prediction(n, where, item, corpus, schema)
        if isinstance(checked, tuple):
            report.add(n, *checked)
            if report.error_lines_full:
                # More invalid predictions than even drop-invalid accepts: the file is
                # refused whatever follows, so a file of junk costs its first ones only.
                report.add(n, "TOO_MANY_ERRORS", f"validation stopped at {where}: more "
                           f"than {report.max_error_lines - 1:,} predictions have errors",
                           always=True)
                break
            continue
        key = (checked.doc.pk, checked.h, checked.t, checked.r)
        if key in kept:
            kept[key].evidence |= checked.evidence
            report.add(n, "DUPLICATE_PREDICTION",
                       f"{where} repeats "
                       f"[{kept[key].number - 1}] ({clip(checked.doc.title)}, h_idx {checked.h}, "
                       f"t_idx {checked.t}, {checked.r}); merged")
            continue
        kept[key] = checked
    return list(kept.values()), n


def check_upload(fh: IO[bytes], check: object, schema_name: str, corpus_tag: str,
                 declared: str | None = None) -> str | None:
    """The upload's format against its corpus (`format_problem`), or None when it fits.
    A DocRED file has no run id line: the one `inspect_upload` read is cleared."""
    found = sniff(fh)
    if found == DOCRED and hasattr(check, "run_id"):
        check.run_id = ""
    if found == DOCRED and _is_object(fh):
        return ("The file is one JSON object {...}; a DocRED result file is a JSON list "
                "[{\"title\": ..., \"h_idx\": ..., \"t_idx\": ..., \"r\": ...}, ...], as "
                "the official DocRED evaluation reads it. If your predictions are under a "
                "key of the object, write that list alone (docs/researchers/docred.md).")
    return format_problem(found, declared or None, schema_name, corpus_tag)
