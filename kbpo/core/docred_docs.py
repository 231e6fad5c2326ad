"""DocRED documents as a DocRED-schema corpus keeps them, without Django: the text
rebuilt from the tokens (`kbpo.core.docred.detokenize`), DocRED's own sentences and
tokens, and every vertexSet entity with all its mentions, under its index (predictions
and labels refer to entities by that index, so none may be dropped or renumbered).

An entity pair is stored, like a TAC mention pair, as two spans: each entity's
*anchor*, its first mention in text order that is not an earlier entity's anchor (an
empty span inside its first mention when DocRED lists the same mentions twice).
The pair (head anchor, tail anchor) then identifies one (document, head, tail) for
predictions, gold and crowd labels alike.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .docred import detokenize, docred_doc_id
from .jsonlist import Where
from .schemas import get_schema

DOCRED_ENTITY_TYPES = frozenset(get_schema("docred").entity_types)


class DocredProblem(ValueError):
    """A document that cannot be loaded: the message names the JSON path and the fix."""


@dataclass(frozen=True)
class DocredEntity:
    index: int
    type: str
    name: str
    mentions: tuple[tuple[int, int, int], ...]  # (sentence index, begin, end), text order
    anchor: tuple[int, int]


@dataclass(frozen=True)
class DocredDocument:
    where: Where
    doc_id: str
    title: str
    text: str
    sentences: list[list[tuple[int, int]]]  # token spans per sentence
    entities: list[DocredEntity]
    labels: list[object]  # as read; gold import checks them


def _entity_type(types: list[str]) -> str:
    """The most frequent of the mentions' types, the first on ties."""
    counts = Counter(types)
    return max(types, key=lambda t: (counts[t], -types.index(t)))


def parse_document(where: Where, rec: object, seen: Counter) -> DocredDocument:
    """Check one DocRED record and build its document; DocredProblem names the field.

    `seen` counts document ids given so far in the file: a repeated title gets `_2`,
    `_3`, ... (as `import_gold --format docred` names them)."""
    p = where.path
    at = f" (document starting at line {where.line})"
    if not isinstance(rec, dict):
        raise DocredProblem(f"{p}: expected a document object with title, sents and "
                            f"vertexSet{at}")
    title = rec.get("title")
    if not isinstance(title, str) or not title.strip():
        raise DocredProblem(f"{p}.title: expected a non-empty string{at}")
    sents = rec.get("sents")
    if not isinstance(sents, list) or not sents:
        raise DocredProblem(f"{p}.sents: expected a non-empty list of token lists{at}")
    for k, sent in enumerate(sents):
        if not isinstance(sent, list) or not sent:
            raise DocredProblem(f"{p}.sents[{k}]: expected a non-empty list of tokens{at}")
        for j, tok in enumerate(sent):
            if not isinstance(tok, str) or not tok:  # (a token may be a no-break space)
                raise DocredProblem(f"{p}.sents[{k}][{j}]: expected a non-empty token "
                                    f"string, got {tok!r}{at}")
    vertex_set = rec.get("vertexSet")
    if not isinstance(vertex_set, list):
        raise DocredProblem(f"{p}.vertexSet: expected a list of entities (each a list of "
                            f"mentions){at}")
    labels = rec.get("labels", [])
    if not isinstance(labels, list):
        raise DocredProblem(f"{p}.labels: expected a list{at}")
    text, offsets = detokenize(sents)
    entities: list[DocredEntity] = []
    anchors: set[tuple[int, int]] = set()
    for e, vertex in enumerate(vertex_set):
        vp = f"{p}.vertexSet[{e}]"
        if not isinstance(vertex, list) or not vertex:
            raise DocredProblem(f"{vp}: expected a non-empty list of mentions{at}")
        mentions: list[tuple[int, int, int]] = []
        types: list[str] = []
        names: list[str] = []
        for j, m in enumerate(vertex):
            mp = f"{vp}[{j}]"
            if not isinstance(m, dict):
                raise DocredProblem(f"{mp}: expected a mention object with sent_id, pos "
                                    f"and type{at}")
            sid, pos, mtype = m.get("sent_id"), m.get("pos"), m.get("type")
            if not isinstance(sid, int) or isinstance(sid, bool) or not 0 <= sid < len(sents):
                raise DocredProblem(f"{mp}.sent_id: {sid!r} is not a sentence index (the "
                                    f"document has {len(sents)} sentences, 0 to "
                                    f"{len(sents) - 1}){at}")
            if (not isinstance(pos, list) or len(pos) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in pos)
                    or not 0 <= pos[0] < pos[1] <= len(sents[sid])):
                raise DocredProblem(f"{mp}.pos: {pos!r} must be [start, end) token positions "
                                    f"with 0 <= start < end <= {len(sents[sid])} (the length "
                                    f"of sentence {sid}){at}")
            if mtype not in DOCRED_ENTITY_TYPES:
                raise DocredProblem(f"{mp}.type: {mtype!r} is not a DocRED entity type "
                                    f"({', '.join(sorted(DOCRED_ENTITY_TYPES))}){at}")
            begin, end = offsets[sid][pos[0]][0], offsets[sid][pos[1] - 1][1]
            mentions.append((sid, begin, end))
            types.append(mtype)
            names.append(m["name"] if isinstance(m.get("name"), str) else text[begin:end])
        ordered = sorted(set(mentions), key=lambda m: (m[1], m[2]))
        anchor = next(((b, e) for _, b, e in ordered if (b, e) not in anchors), None)
        if anchor is None:
            # Every mention is an earlier entity's anchor (DocRED lists a few entities
            # twice): an empty span inside the first mention keeps the pair apart.
            b0, e0 = ordered[0][1], ordered[0][2]
            anchor = next((x, x) for x in range(b0, e0 + 1) if (x, x) not in anchors)
        anchors.add(anchor)
        entities.append(DocredEntity(e, _entity_type(types), names[0], tuple(ordered), anchor))
    base = docred_doc_id(title)
    seen[base] += 1
    doc_id = base if seen[base] == 1 else f"{base}_{seen[base]}"
    return DocredDocument(where, doc_id, title, text, offsets, entities, labels)
