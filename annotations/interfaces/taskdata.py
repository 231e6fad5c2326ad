"""What a task page shows, as plain JSON-ready data (rendered by `static/js/annotate-*.js`).

The builders work on plain values (text, sentence spans, typed spans) so the same
code serves real HITs, the "try it" pages and the built-in examples. Everything here
ends up in a `json_script` block: text is never marked safe, the browser inserts it
with `textContent`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbpo.core.corpus import split_text
from kbpo.core.schema import DESCRIPTIONS, NO_RELATION, predicates_for, slot
from kbpo.core.schemas import TAC_KBP, RelationSchema, get_schema, offered_relations

from .candidates import CandidatePair, MentionSpan, pairs_from_mentions

CONTEXT_SENTENCES = 2  # sentences shown before and after the one a pair is in


@dataclass(frozen=True)
class DocView:
    """The parts of a document a page needs."""

    doc_id: str
    title: str
    text: str
    sentences: list[tuple[int, int, list[int]]]  # (begin, end, flat token offsets)

    @classmethod
    def from_document(cls, document: object) -> DocView:
        sentences = [(s.begin, s.end, list(s.tokens))
                     for s in document.sentences.order_by("index")]
        return cls(document.doc_id, document.title, document.text, sentences)

    @classmethod
    def from_text(cls, doc_id: str, title: str, text: str) -> DocView:
        return cls(doc_id, title, text, split_text(text))

    def sentence_of(self, begin: int, end: int) -> int:
        for i, (sb, se, _) in enumerate(self.sentences):
            if sb <= begin and end <= se:
                return i
        raise ValueError(f"{self.doc_id}: span {begin}-{end} is not inside one sentence")


@dataclass(frozen=True)
class EntityInfo:
    """What a system said about a mention's entity: its canonical mention and link."""

    canonical_text: str
    canonical_doc: str
    canonical_begin: int
    canonical_end: int
    link: str


def relation_options(subject_type: str, object_type: str) -> list[dict[str, str]]:
    """The relation buttons for a pair of types, each explained, then "no relation"."""
    out = []
    for pred in predicates_for(subject_type, object_type):
        description, example = DESCRIPTIONS.get(pred, (slot(pred).replace("_", " "), ""))
        out.append({"value": pred, "label": slot(pred).replace("_", " "),
                    "description": description, "example": example})
    out.append({"value": NO_RELATION, "label": "no relation",
                "description": "None of the relations above is stated in this sentence.",
                "example": ""})
    return out


def schema_options(schema: RelationSchema, head_type: str,
                   tail_type: str) -> list[dict[str, object]]:
    """The relation choices of a pair on the corpus's schema, then "no relation".

    TAC KBP offers only the relations its types can hold (the intake refuses others).
    Other schemas offer every relation: those the pair's types usually take first
    (`candidate`), the rest after them, in schema order, for the page's search box."""
    if schema.name == TAC_KBP:
        return [{**o, "candidate": True} for o in relation_options(head_type, tail_type)]
    usual = {r.id for r in schema.candidates(head_type, tail_type)}
    ordered = sorted(schema.relations.values(), key=lambda r: r.id not in usual)
    out: list[dict[str, object]] = [
        {"value": r.id, "label": r.label, "description": r.definition, "example": r.example,
         "candidate": r.id in usual} for r in ordered]
    out.append({"value": NO_RELATION, "label": "none of these", "candidate": True,
                "description": "The document states none of these relations from X to Y.",
                "example": ""})
    return out


@dataclass(frozen=True)
class EntityView:
    """A document-level entity: its name, type and every mention (character offsets)."""

    name: str
    type: str
    mentions: list[tuple[int, int]]


def document_relation_item(qid: int, doc: DocView, head: EntityView, tail: EntityView,
                           evidence: Sequence[int] = (), schema_name: str = "docred") -> dict:
    """One document-level question: the whole document, every mention of the head (X)
    and of the tail (Y), the sentences a system cited as evidence, the relations."""
    cited = set(evidence)

    def mentions(entity: EntityView) -> list[dict]:
        return [{"begin": b, "end": e, "text": doc.text[b:e]} for b, e in sorted(entity.mentions)]

    return {
        "id": qid, "doc_id": doc.doc_id, "title": doc.title, "document_level": True,
        "schema": schema_name,
        "sentences": [{"index": i, "begin": b, "end": e, "text": doc.text[b:e],
                       "evidence": i in cited} for i, (b, e, _) in enumerate(doc.sentences)],
        "head": {"name": head.name, "type": head.type, "mentions": mentions(head)},
        "tail": {"name": tail.name, "type": tail.type, "mentions": mentions(tail)},
        "options": schema_options(get_schema(schema_name), head.type, tail.type),
    }


def fact_task_data(qid: int, doc: DocView, entities: Sequence[EntityView],
                   heads: Sequence[int], schema_name: str = "docred") -> dict:
    """A DocRED exhaustive question: the whole document, every entity with all its
    mentions (entity i is `entities[i]`, its vertexSet index), the head entities this
    task covers, and the relations with their definitions. Per pair of entity types
    present: the relations usual for them (offered first) and, when the schema offers
    only some (`offered_relations`), those."""
    schema = get_schema(schema_name)
    all_ids = list(schema.relations)
    kinds = sorted({e.type for e in entities})
    pairs: dict[str, dict[str, object]] = {}
    for ht in kinds:
        for tt in kinds:
            offered = offered_relations(schema_name, ht, tt)
            pairs[f"{ht}|{tt}"] = {
                "usual": [r.id for r in schema.candidates(ht, tt)],
                "offered": None if offered == all_ids else offered}
    return {
        "question": qid, "schema": schema_name,
        "document": {
            "doc_id": doc.doc_id, "title": doc.title,
            "sentences": [{"index": i, "begin": b, "end": e, "text": doc.text[b:e]}
                          for i, (b, e, _) in enumerate(doc.sentences)],
            "entities": [{"index": i, "name": ent.name, "type": ent.type,
                          "mentions": [{"begin": b, "end": e} for b, e in sorted(ent.mentions)
                                       if e > b]}
                         for i, ent in enumerate(entities)],
            "heads": list(heads),
        },
        "types": dict(schema.entity_types),
        "relations": [{"value": r.id, "label": r.label, "description": r.definition,
                       "example": r.example} for r in schema.relations.values()],
        "pairs": pairs,
    }


def _mention(doc: DocView, begin: int, end: int, type_: str,
             info: EntityInfo | None = None) -> dict:
    data: dict = {"begin": begin, "end": end, "type": type_, "text": doc.text[begin:end]}
    # The check only makes sense when the canonical mention is another span.
    if info is not None and (info.canonical_doc, info.canonical_begin,
                             info.canonical_end) != (doc.doc_id, begin, end):
        data["canonical"] = {"text": info.canonical_text, "doc_id": info.canonical_doc,
                             "same_doc": info.canonical_doc == doc.doc_id}
    if info is not None and info.link:
        data["link"] = info.link
    return data


def relation_item(qid: int, doc: DocView, subject: tuple[int, int, str],
                  obj: tuple[int, int, str], subject_info: EntityInfo | None = None,
                  object_info: EntityInfo | None = None) -> dict:
    """One relation-verification question: the pair in its sentence and context."""
    si = doc.sentence_of(subject[0], subject[1])
    lo, hi = max(0, si - CONTEXT_SENTENCES), min(len(doc.sentences), si + CONTEXT_SENTENCES + 1)
    context = [{"begin": b, "end": e, "text": doc.text[b:e], "target": i == si}
               for i, (b, e, _) in enumerate(doc.sentences[lo:hi], start=lo)]
    return {
        "id": qid, "doc_id": doc.doc_id, "title": doc.title, "context": context,
        "subject": _mention(doc, *subject, subject_info),
        "object": _mention(doc, *obj, object_info),
        "options": relation_options(subject[2], obj[2]),
    }


def document_data(doc: DocView) -> dict:
    """A document for the entity and exhaustive pages: text, sentences, tokens."""
    return {
        "doc_id": doc.doc_id, "title": doc.title, "text": doc.text,
        "sentences": [{"begin": b, "end": e, "tokens": t} for b, e, t in doc.sentences],
    }


def exhaustive_data(doc: DocView, mentions: Sequence[MentionSpan],
                    pairs: Sequence[CandidatePair] | None = None) -> dict:
    """A document, its aggregated mentions, and every candidate pair with its options."""
    if pairs is None:
        pairs = pairs_from_mentions(mentions, [(b, e) for b, e, _ in doc.sentences])
    data = document_data(doc)
    data["mentions"] = [{"begin": m.begin, "end": m.end, "type": m.type, "entity": m.entity,
                         "text": doc.text[m.begin:m.end]}
                        for m in sorted(set(mentions), key=lambda m: (m.begin, m.end))]
    data["pairs"] = [{
        "index": i, "sentence": p.sentence_index,
        "subject": {"begin": p.subject.begin, "end": p.subject.end, "type": p.subject.type,
                    "text": doc.text[p.subject.begin:p.subject.end]},
        "object": {"begin": p.object.begin, "end": p.object.end, "type": p.object.type,
                   "text": doc.text[p.object.begin:p.object.end]},
        "options": relation_options(p.subject.type, p.object.type),
    } for i, p in enumerate(pairs)]
    return data


# --- Built-in examples for the "try it" pages when no corpus is loaded ------------------

EXAMPLE_TEXT = (
    "Ada Byron was born in London in 1815. She married William King, a landowner, in "
    "1835. Byron later worked with Charles Babbage, a professor at Cambridge University, "
    "on the Analytical Engine. Babbage founded the Analytical Society with John Herschel. "
    "The society was based in Cambridge. Ada Byron died in London in 1852."
)
EXAMPLE_DOC = DocView.from_text("EXAMPLE_DOC", "Ada Byron and the Analytical Engine",
                                EXAMPLE_TEXT)

# (text, occurrence, type, entity)
_EXAMPLE_MENTIONS: list[tuple[str, int, str, str]] = [
    ("Ada Byron", 0, "PER", "ada"), ("London", 0, "GPE", "london"), ("1815", 0, "DATE", ""),
    ("William King", 0, "PER", "king"), ("landowner", 0, "TITLE", ""),
    ("Byron", 1, "PER", "ada"), ("Charles Babbage", 0, "PER", "babbage"),
    ("professor", 0, "TITLE", ""), ("Cambridge University", 0, "ORG", "cu"),
    ("Babbage", 1, "PER", "babbage"), ("Analytical Society", 0, "ORG", "society"),
    ("John Herschel", 0, "PER", "herschel"), ("Cambridge", 1, "GPE", "cambridge"),
    ("Ada Byron", 1, "PER", "ada"), ("London", 1, "GPE", "london"), ("1852", 0, "DATE", ""),
]


def _find(text: str, needle: str, nth: int) -> tuple[int, int]:
    start = -1
    for _ in range(nth + 1):
        start = text.index(needle, start + 1)
    return start, start + len(needle)


def example_mentions() -> list[MentionSpan]:
    out = []
    for i, (needle, nth, type_, entity) in enumerate(_EXAMPLE_MENTIONS):
        b, e = _find(EXAMPLE_TEXT, needle, nth)
        out.append(MentionSpan(b, e, type_, entity or f"filler-{i}"))
    return out


def example_relation_items() -> list[dict]:
    """Three relation questions about the example document."""
    m = {(EXAMPLE_TEXT[x.begin:x.end], x.begin): x for x in example_mentions()}
    by_text = {}
    for (text, _), x in sorted(m.items(), key=lambda kv: kv[1].begin):
        by_text.setdefault(text, x)
    ada, london = by_text["Ada Byron"], by_text["London"]
    byron = next(x for x in m.values() if EXAMPLE_TEXT[x.begin:x.end] == "Byron")
    babbage, cu = by_text["Charles Babbage"], by_text["Cambridge University"]
    ada_info = EntityInfo("Ada Byron", EXAMPLE_DOC.doc_id, ada.begin, ada.end,
                          "Wikipedia:Ada_Lovelace")
    return [
        relation_item(1, EXAMPLE_DOC, (ada.begin, ada.end, "PER"),
                      (london.begin, london.end, "GPE"), ada_info,
                      EntityInfo("London", EXAMPLE_DOC.doc_id, london.begin, london.end,
                                 "Wikipedia:London")),
        relation_item(2, EXAMPLE_DOC, (babbage.begin, babbage.end, "PER"),
                      (cu.begin, cu.end, "ORG"),
                      EntityInfo("Charles Babbage", EXAMPLE_DOC.doc_id, babbage.begin,
                                 babbage.end, "Wikipedia:Charles_Babbage"),
                      EntityInfo("Cambridge University", EXAMPLE_DOC.doc_id, cu.begin, cu.end,
                                 "Wikipedia:University_of_Cambridge")),
        relation_item(3, EXAMPLE_DOC, (byron.begin, byron.end, "PER"),
                      (babbage.begin, babbage.end, "PER"), ada_info, None),
    ]
