"""The simulated crowd on a DocRED corpus: DocRED gold read by its content, answers over
all the schema's relations, labels on the document-level pairs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.crowd.simulation import GoldKey
from annotations.interfaces.intake import allowed_choices
from annotations.models import PairLabel, Question
from kbpo.core.schema import NO_RELATION
from tests.annotations.exhaustive.test_gold_import_docred_native import docs_with_labels
from tests.annotations.interfaces.builders import docred_pairs
from tests.core.test_docred_load import write
from tests.factories import make_hit


def test_a_docred_file_is_a_gold_key_on_the_entity_anchors(tmp_path: Path) -> None:
    labels = docs_with_labels()[:1]
    labels[0]["labels"] = labels[0]["labels"][:3]  # the valid ones
    key = GoldKey.load(write(tmp_path / "dev.json", labels))
    text = "Ada Byron (born 1815) was born in London. Her father, Lord Byron, left"
    ada, born, london = (0, 9), (text.index("1815"), text.index("1815") + 4), \
        (text.index("London"), text.index("London") + 6)
    byron = (4, 9)  # Lord Byron's first mention in text order: "Byron" of "Ada Byron"
    doc = "Ada_Byron_a_life"
    assert key.truth((doc, *ada, *byron)) == {"P22"}
    assert key.truth((doc, *ada, *born)) == {"P569"}
    assert key.truth((doc, *ada, *london)) == {"P19"}
    assert key.truth((doc, *byron, *ada)) == {NO_RELATION}  # directed
    bad = docs_with_labels()[:1]
    with pytest.raises(ValueError, match=r"\[0\].labels\[4\]: needs entity indices"):
        GoldKey.load(write(tmp_path / "bad.json", bad))


@pytest.mark.django_db
def test_the_simulated_crowd_labels_document_level_pairs(tmp_path: Path) -> None:
    # the corpus is DOCS (its loader ignores labels); the crowd reads the gold from its own file
    father, reverse = docred_pairs((0, 3), (3, 0))
    corpus = father.document.corpus
    make_hit(corpus, [father, reverse])
    question = Question.objects.get(pair=father)
    # every relation of the schema is an answer, whatever the entity types
    assert {"P22", "P17", "P1441", NO_RELATION} <= allowed_choices(question)
    gold = write(tmp_path / "gold.json", [dict(docs_with_labels()[0],
                                               labels=docs_with_labels()[0]["labels"][:3])])
    call_command("simulate_crowd", "--gold", str(gold), "--error-rate", "0", "--spammers", "0",
                 "--workers", "5", stdout=io.StringIO())
    assert PairLabel.objects.get(pair=father).predicates == ["P22"]
    assert PairLabel.objects.get(pair=reverse).predicates == [NO_RELATION]
