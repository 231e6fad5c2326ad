"""Relation schemas as data: what a corpus evaluates, read by everything that must not
assume TAC KBP (validation, task pages, aggregation, scores, CSVs, the API).

Two are built in:

- `tac_kbp` (the default): the reduced TAC KBP schema of `kbpo.core.schema`, over
  mention pairs inside one sentence, predicates in canonical direction;
- `docred`: DocRED's 96 Wikidata relations (`docred.json` beside this file), over
  (document, head entity, tail entity) pairs, relations directed from head to tail.

A corpus records its schema by name (`Corpus.schema`). Django-free, so the demo-world
generator and the parsers share it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from .. import schema as tac

TAC_KBP = "tac_kbp"
DOCRED = "docred"
DEFAULT = TAC_KBP
SCHEMA_CHOICES: list[tuple[str, str]] = [
    (TAC_KBP, "TAC KBP (reduced slot-filling schema, sentence-level mention pairs)"),
    (DOCRED, "DocRED (96 Wikidata relations, document-level entity pairs)"),
]

# What one evaluated instance is: a (subject, object) mention pair inside one sentence,
# or a (head, tail) pair of a document's entities (all their mentions).
MENTION_PAIR = "mention_pair"
ENTITY_PAIR = "entity_pair"


@dataclass(frozen=True)
class Relation:
    """One relation of a schema, with what a task page shows about it."""

    id: str
    label: str
    definition: str
    example: str
    # The entity types it usually takes: candidates to offer first, not a constraint
    # for DocRED (its annotation relates whatever the text supports).
    head_types: tuple[str, ...]
    tail_types: tuple[str, ...]
    example_head: str = ""
    example_tail: str = ""


@dataclass(frozen=True)
class RelationSchema:
    name: str
    title: str
    unit: str
    entity_types: dict[str, str]
    relations: dict[str, Relation]
    # Relations one crowd answer may mark for one pair; None: KBPO_MAX_RELATIONS_PER_ANSWER.
    max_relations_per_answer: int | None = None

    def is_relation(self, relation_id: str) -> bool:
        return relation_id in self.relations

    def relation(self, relation_id: str) -> Relation:
        return self.relations[relation_id]

    def label(self, relation_id: str) -> str:
        """A relation's readable name (its id when the schema does not know it)."""
        rel = self.relations.get(relation_id)
        return rel.label if rel else relation_id

    def candidates(self, head_type: str, tail_type: str) -> list[Relation]:
        """The relations usually holding between these types, in schema order."""
        return [r for r in self.relations.values()
                if head_type in r.head_types and tail_type in r.tail_types]

    def closest_id(self, value: str) -> str | None:
        """A relation id the user probably meant (`p17`, `17`, a label), or None."""
        text = value.strip()
        upper = text.upper()
        for guess in (upper, f"P{text}"):
            if guess in self.relations:
                return guess
        by_label = {r.label.lower(): r.id for r in self.relations.values()}
        return by_label.get(text.lower())


def _tac_schema() -> RelationSchema:
    rels: dict[str, Relation] = {}
    for (stype, otype), preds in sorted(tac.CANONICAL.items(),
                                        key=lambda kv: tuple(map(tac.TYPE_RANK.get, kv[0]))):
        for pred in sorted(preds):
            old = rels.get(pred)
            heads = (old.head_types if old else ()) + ((stype,) if not old or stype not in
                                                        old.head_types else ())
            tails = (old.tail_types if old else ()) + ((otype,) if not old or otype not in
                                                        old.tail_types else ())
            definition, example = tac.DESCRIPTIONS.get(pred, (pred, ""))
            rels[pred] = Relation(pred, tac.slot(pred).replace("_", " "), definition, example,
                                  heads, tails)
    types = {tac.PER: "a person", tac.ORG: "an organisation",
             tac.GPE: "a geo-political entity: country, state or province, city",
             tac.DATE: "a date or year", tac.TITLE: "a job title or position"}
    return RelationSchema(TAC_KBP, "TAC KBP (reduced)", MENTION_PAIR, types,
                          dict(sorted(rels.items())))


def _docred_schema() -> RelationSchema:
    data = json.loads((Path(__file__).with_name("docred.json")).read_text(encoding="utf-8"))
    rels = {r["id"]: Relation(r["id"], r["label"], r["definition"], r["example"],
                              tuple(r["head_types"]), tuple(r["tail_types"]),
                              r["example_head"], r["example_tail"])
            for r in data["relations"]}
    return RelationSchema(DOCRED, data["title"], ENTITY_PAIR, dict(data["entity_types"]), rels,
                          data["max_relations_per_answer"])


_BUILDERS = {TAC_KBP: _tac_schema, DOCRED: _docred_schema}


def offered_relations(schema_name: str, head_type: str, tail_type: str) -> list[str]:
    """The relations a relation question offers for a pair of these types (no_relation
    aside): on TAC KBP the pair's canonical predicates; on DocRED every relation of the
    schema, whatever the types (they only order the list: DocRED relates whatever the
    text supports)."""
    if schema_name == DOCRED:
        return list(get_schema(DOCRED).relations)
    return tac.predicates_for(head_type, tail_type)


@functools.cache
def get_schema(name: str) -> RelationSchema:
    """The built-in schema called `name`; KeyError naming the known ones otherwise."""
    try:
        return _BUILDERS[name]()
    except KeyError:
        raise KeyError(f"unknown relation schema {name!r}; known: "
                       f"{', '.join(sorted(_BUILDERS))}") from None
