"""Relation schemas as data (kbpo.core.schemas) and the corpus that records one."""

from __future__ import annotations

import pytest

from kbpo.core import schema as tac
from kbpo.core.models import Corpus
from kbpo.core.schemas import DOCRED, ENTITY_PAIR, MENTION_PAIR, TAC_KBP, get_schema


def test_docred_schema_has_the_96_relations_each_with_a_definition_and_example() -> None:
    s = get_schema(DOCRED)
    assert s.unit == ENTITY_PAIR
    assert len(s.relations) == 96
    # A few ids and Wikidata labels, as DocRED's rel_info.json gives them.
    assert s.label("P17") == "country"
    assert s.label("P576") == "dissolved, abolished or demolished"
    assert s.label("P1441") == "present in work"
    assert s.label("P3373") == "sibling"
    for rel in s.relations.values():
        assert rel.definition.strip() and rel.example.strip(), rel.id
        # The example names the head and the tail it illustrates.
        assert rel.example_head in rel.example and rel.example_tail in rel.example, rel.id
        assert rel.head_types and set(rel.head_types) <= set(s.entity_types), rel.id
        assert rel.tail_types and set(rel.tail_types) <= set(s.entity_types), rel.id
    assert len({r.definition for r in s.relations.values()}) == 96


def test_docred_definitions_keep_the_head_to_tail_direction() -> None:
    # Checked against Re-DocRED dev sentences (docs/researchers/docred.md): the tail is the father,
    # the child, the earlier item, the containing place.
    s = get_schema(DOCRED)
    assert s.relation("P22").definition.startswith("Y is the father of X")
    assert s.relation("P40").definition.startswith("Y is a child of X")
    assert "Y is X's predecessor" in s.relation("P155").definition
    assert s.relation("P361").definition == "X is a part of Y."
    assert s.relation("P527").definition.startswith("Y is a part of X")


def test_docred_candidates_follow_the_entity_types() -> None:
    s = get_schema(DOCRED)
    per_per = {r.id for r in s.candidates("PER", "PER")}
    assert {"P22", "P25", "P26", "P40", "P3373"} <= per_per
    assert "P17" not in per_per
    assert {r.id for r in s.candidates("PER", "TIME")} == {"P569", "P570"}


def test_closest_id_suggests_what_the_user_meant() -> None:
    s = get_schema(DOCRED)
    assert s.closest_id("p17") == "P17"
    assert s.closest_id("17") == "P17"
    assert s.closest_id("Place of Birth") == "P19"
    assert s.closest_id("P9999") is None


def test_tac_schema_is_the_canonical_kbp_schema() -> None:
    s = get_schema(TAC_KBP)
    assert s.unit == MENTION_PAIR
    assert set(s.relations) == set(tac.CANONICAL_PREDICATES)
    for (stype, otype), preds in tac.CANONICAL.items():
        assert {r.id for r in s.candidates(stype, otype)} == set(preds)
    assert s.relation("per:spouse").definition == tac.DESCRIPTIONS["per:spouse"][0]


def test_unknown_schema_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="docred, tac_kbp"):
        get_schema("ace2005")


@pytest.mark.django_db
def test_a_corpus_is_tac_by_default_and_records_its_schema() -> None:
    tac_corpus = Corpus.objects.create(tag="old-style")
    assert tac_corpus.schema == TAC_KBP
    assert tac_corpus.relation_schema is get_schema(TAC_KBP)
    docred = Corpus.objects.create(tag="redocred", schema=DOCRED)
    docred.refresh_from_db()
    assert docred.relation_schema.unit == ENTITY_PAIR
