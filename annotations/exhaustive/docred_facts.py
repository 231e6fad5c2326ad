"""The crowd's exhaustive sample on a DocRED-schema corpus: every true (head entity, tail
entity, relation) fact of a document, recorded by workers who add facts one by one.

A DocRED document's entities are part of the corpus (its vertexSet), so there is no
entity step. A document of n entities has n(n-1) ordered pairs (about 380 for a
Re-DocRED document): no page can ask about each. Instead the entities are split into
groups of at most `KBPO_EXHAUSTIVE_DOCRED_HEADS_PER_HIT` heads (consecutive vertexSet
indexes, so each group is roughly one stretch of the document), one question and one
HIT per group: "every fact whose head is one of these entities". A worker adds facts
(head, tail, relation), sees the list, removes what is wrong and submits; a pair left
out is a "no relation" from that worker.

Aggregation follows `workflow.aggregate_relations`: a fact holds when more than half of
the question's counted workers listed it. The union over a document's groups becomes
its gold exactly as `import_gold --format docred` stores it (`docred_gold`): a fact is
the pair of the head's and the tail's anchors, every mention of every entity a gold
mention, so recall reads crowd gold and imported gold alike.

Django-light: this module reads `DocumentEntity` rows and plain answer payloads; the
workflow (`workflow.py`) creates the tasks and stores the result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from kbpo.core.docred import MentionIn, RelationIn
from kbpo.core.models import Corpus, Document, DocumentEntity
from kbpo.core.schemas import ENTITY_PAIR, get_schema

Fact = tuple[int, int, str]  # (head index, tail index, relation id)


def is_document_level(corpus: Corpus) -> bool:
    """Whether the corpus's instances are entity pairs (DocRED): no entity step."""
    return get_schema(corpus.schema).unit == ENTITY_PAIR


def head_groups(n_entities: int, per_hit: int | None = None) -> list[list[int]]:
    """The entity indexes 0..n-1 in consecutive groups of at most `per_hit`, their sizes
    differing by at most one (13 entities, 5 per HIT: 5, 4, 4). No group when fewer
    than two entities: nothing can be related."""
    per = max(1, per_hit or settings.KBPO_EXHAUSTIVE_DOCRED_HEADS_PER_HIT)
    if n_entities < 2:
        return []
    k = -(-n_entities // per)
    base, extra = divmod(n_entities, k)
    out, start = [], 0
    for i in range(k):
        size = base + (1 if i < extra else 0)
        out.append(list(range(start, start + size)))
        start += size
    return out


@dataclass(frozen=True)
class Entity:
    index: int
    type: str
    name: str
    anchor: tuple[int, int]
    mentions: tuple[tuple[int, int], ...]


def document_entities(document: Document) -> list[Entity]:
    return [Entity(e.index, e.type, e.name, (e.anchor_begin, e.anchor_end),
                   tuple((b, end) for _, b, end in e.mention_spans()))
            for e in DocumentEntity.objects.filter(document=document).order_by("index")]


def entity_mentions(entities: Sequence[Entity]) -> list[MentionIn]:
    """Every mention of every entity as a gold mention (a span DocRED lists under two
    entities belongs to the first), as `docred_gold.document_gold` stores them."""
    mentions: dict[tuple[int, int], MentionIn] = {}
    for e in entities:
        for b, end in e.mentions:
            if (b, end) not in mentions:
                mentions[(b, end)] = MentionIn(b, end, e.type, f"E{e.index}",
                                               (b, end) == e.anchor)
    return sorted(mentions.values(), key=lambda m: (m.begin, m.end))


def answer_facts(extra: object) -> set[Fact]:
    """One worker's facts from a stored answer's `extra`; malformed items dropped (the
    intake refused them already: this only guards aggregation)."""
    items = extra.get("facts") if isinstance(extra, dict) else None
    out: set[Fact] = set()
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict):
            continue
        h, t, r = item.get("h"), item.get("t"), item.get("r")
        if (isinstance(h, int) and not isinstance(h, bool) and isinstance(t, int)
                and not isinstance(t, bool) and isinstance(r, str)):
            out.add((h, t, r))
    return out


def aggregate_facts(heads: Sequence[int], n_entities: int, relations: set[str] | frozenset[str],
                    answers: Sequence[object]) -> set[Fact]:
    """The facts of one head group that more than half of its workers listed.

    As in `aggregate_relations`: a fact a worker did not list is a "no" from that worker,
    several relations of one pair may hold, and facts the question could not take (a
    head outside the group, a tail out of range, a relation not in the schema) are
    ignored."""
    k = len(answers)
    group = set(heads)
    votes: Counter = Counter()
    for a in answers:
        votes.update(f for f in answer_facts(a)
                     if f[0] in group and 0 <= f[1] < n_entities and f[0] != f[1]
                     and f[2] in relations)
    return {f for f, n in votes.items() if 2 * n > k}


def gold_relations(entities: Sequence[Entity], facts: set[Fact]) -> list[RelationIn]:
    """Facts as gold relations on the anchors' pair, as imported DocRED gold is."""
    return [RelationIn(entities[h].anchor, entities[t].anchor, r, f"E{h}")
            for h, t, r in sorted(facts)]


__all__ = ["Entity", "Fact", "aggregate_facts", "answer_facts", "document_entities",
           "entity_mentions", "gold_relations", "head_groups", "is_document_level"]
