"""On a DocRED corpus one answer may mark three relations for a pair (Re-DocRED has 263
dev pairs with three): the page says so, the intake takes three and refuses four, the
simulated crowd marks all three, and such pairs serve as controls. TAC KBP keeps
KBPO_MAX_RELATIONS_PER_ANSWER (2)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotations.crowd.controls import control_pool
from annotations.interfaces.caps import relation_cap
from annotations.models import Backend, PairLabel
from kbpo.core.models import Corpus, DocumentEntity
from kbpo.core.schemas import DOCRED, TAC_KBP
from submissions.models import MentionPair
from tests.annotations.interfaces.builders import annotator, docred_relation_hit, relation_hit
from tests.annotations.interfaces.test_task_views import SANDBOX, config, page_url, post
from tests.core.test_docred_load import DOCS, write
from tests.factories import make_hit

THREE = ["P22", "P26", "P3373"]  # three relations on Ada Byron → Lord Byron


def answer(choices: list[list[str]]) -> dict:
    return {"answers": [{"question": i, "choices": c, "extra": {
        "subject_ok": True, "object_ok": True, "link_ok": None}, "seconds": 2.0}
        for i, c in enumerate(choices)]}


def test_the_cap_is_per_schema(settings) -> None:
    assert relation_cap(DOCRED) == 3
    assert relation_cap(TAC_KBP) == 2
    settings.KBPO_MAX_RELATIONS_PER_ANSWER = 1
    assert (relation_cap(DOCRED), relation_cap(TAC_KBP)) == (3, 1)


@pytest.mark.django_db
def test_pages_say_their_cap(client) -> None:
    for hit, cap in ((docred_relation_hit(), 3), (relation_hit(), 2)):
        response = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                       workerId="W1", turkSubmitTo=SANDBOX))
        assert config(response)["max_relations"] == cap
        assert f"at most {cap}" in response.content.decode()


@pytest.mark.django_db
def test_the_intake_takes_three_relations_and_refuses_four() -> None:
    hit = docred_relation_hit(backend=Backend.LOCAL, external_id=None)
    local = Client()
    local.force_login(annotator())
    response = post(local, hit, answer([[*THREE, "P40"], ["P17"]]))
    assert response.status_code == 400
    assert "mark at most 3" in response.json()["error"]
    response = post(local, hit, answer([THREE, ["P17"]]))
    assert response.status_code == 200, response.content


def _corpus_with_three(tmp_path: Path) -> tuple[Path, MentionPair]:
    docs = json.loads(json.dumps(DOCS))
    docs[0]["labels"] = [{"h": 0, "t": 3, "r": r, "evidence": [1]} for r in THREE]
    path = write(tmp_path / "dev.json", docs)
    call_command("load_corpus", "--tag", "redocred", "--format", "docred", str(path),
                 "--quiet-progress")
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", str(path),
                 stdout=io.StringIO(), stderr=io.StringIO())
    ents = {e.index: e for e in DocumentEntity.objects.filter(document__doc_id="Ada_Byron_a_life")}
    head, tail = ents[0], ents[3]
    pair = MentionPair.objects.create(
        document=head.document, sentence=head.document.sentences.first(),
        subject_begin=head.anchor_begin, subject_end=head.anchor_end,
        object_begin=tail.anchor_begin, object_end=tail.anchor_end,
        subject_type=head.type, object_type=tail.type)
    return path, pair


@pytest.mark.django_db
def test_the_simulated_crowd_marks_three_relations(tmp_path: Path) -> None:
    path, pair = _corpus_with_three(tmp_path)
    make_hit(Corpus.objects.get(tag="redocred"), [pair])
    call_command("simulate_crowd", "--gold", str(path), "--error-rate", "0", "--spammers", "0",
                 "--workers", "5", stdout=io.StringIO())
    assert sorted(PairLabel.objects.get(pair=pair).predicates) == sorted(THREE)


@pytest.mark.django_db
def test_a_pair_with_three_relations_can_be_a_control(tmp_path: Path) -> None:
    _, pair = _corpus_with_three(tmp_path)
    pool = dict(control_pool(Corpus.objects.get(tag="redocred").pk))
    assert sorted(pool[pair.pk]) == sorted(THREE)
