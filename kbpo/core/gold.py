"""Gold relations in canonical form, one definition for every reader of gold.

Gold annotation may state a fact in either direction and with any accepted predicate
name: `per:parents(B, A)` or `per:children(A, B)`, `per:siblings` either way round,
`org:founded_by(ORG, PER)` or `per:organizations_founded(PER, ORG)`, fine-grained TAC
slots such as `per:city_of_birth`. Submissions are stored in canonical direction
(`kbpo.core.schema.canonicalize`), so gold must be too, or a true instance stated the
other way round reads as `no_relation`. The gold import, the simulated crowds and the
real-text demo's truth all call `canonical_relations`.

`closest_pair` is how an argument with several mentions in one sentence is resolved,
by ingestion (whole-sentence provenance) and by the DocRED mapping alike.

Pure Python: the demo-world generator imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import schema

SpanPair = tuple[int, int, int, int]  # subject begin, end, object begin, end (half-open)


@dataclass(frozen=True)
class GoldRelation:
    """One gold relation in canonical direction."""

    subject: tuple[int, int]
    object: tuple[int, int]
    predicate: str
    subject_type: str
    object_type: str


class GoldProblem(ValueError):
    """A gold relation that cannot be canonicalized (the message says why)."""


def canonical_relation(doc_id: str, subject: tuple[int, int], predicate: str,
                       obj: tuple[int, int], types: Mapping[tuple[int, int], str]
                       ) -> GoldRelation:
    """Orient one gold relation canonically, its argument types read from `types`
    (span -> entity type). Raises GoldProblem naming the span or the predicate."""
    for role, span in (("subject", subject), ("object", obj)):
        if span not in types:
            raise GoldProblem(f"{role} {list(span)} is not among the document's mentions")
    st, ot = types[subject], types[obj]
    try:
        c = schema.canonicalize((doc_id, *subject), st, predicate, (doc_id, *obj), ot)
    except (ValueError, KeyError):
        raise GoldProblem(f"{predicate} does not relate a {st} subject to a {ot} "
                          "object") from None
    return GoldRelation((c.subject[1], c.subject[2]), (c.object[1], c.object[2]),
                        c.predicate, c.subject_type, c.object_type)


def canonical_relations(doc_id: str, types: Mapping[tuple[int, int], str],
                        relations: Iterable[tuple[tuple[int, int], str, tuple[int, int]]]
                        ) -> dict[SpanPair, frozenset[str]]:
    """Every relation `(subject span, predicate, object span)` of a document, canonical:
    the canonical pair -> its canonical predicates. Raises GoldProblem on the first bad
    relation (callers that skip bad relations call `canonical_relation` themselves)."""
    out: dict[SpanPair, set[str]] = {}
    for subject, predicate, obj in relations:
        r = canonical_relation(doc_id, subject, predicate, obj, types)
        out.setdefault((*r.subject, *r.object), set()).add(r.predicate)
    return {k: frozenset(v) for k, v in out.items()}


def closest_pair(subjects: Iterable[tuple[int, int]], objects: Iterable[tuple[int, int]]
                 ) -> tuple[tuple[int, int], tuple[int, int]]:
    """The subject/object spans closest in characters (the gap between them), preferring
    distinct spans; ties go to the earliest subject, then the earliest object, so the
    choice never depends on the order of the file's lines."""

    def key(pair: tuple[tuple[int, int], tuple[int, int]]) -> tuple:
        (sb, se), (ob, oe) = pair
        gap = max(0, max(sb, ob) - min(se, oe))
        return (pair[0] == pair[1], gap, pair)

    objects = list(objects)
    return min(((s, o) for s in subjects for o in objects), key=key)
