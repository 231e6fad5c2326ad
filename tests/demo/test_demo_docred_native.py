"""`demo --world docred`: the DocRED-native world end to end — a DocRED corpus on its
own schema, the file's labels as complete gold, systems uploaded in the DocRED result
format, the simulated crowd answering in DocRED relation ids, scores next to truth."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import GoldRelation, PairLabel
from estimation.models import SystemScore
from kbpo.core.models import Corpus, DocumentEntity
from kbpo.core.schemas import DOCRED, get_schema
from submissions.models import RelationInstance, State, Submission

from .docred_source import written_source


@pytest.mark.django_db(transaction=True)
def test_demo_docred_runs_the_native_world(tmp_path: Path) -> None:
    out = tmp_path / "world"
    log = io.StringIO()
    call_command("demo", world="docred", source=str(written_source(tmp_path)), out=str(out),
                 docs=2, systems=2, seed=1, crowd_error=0.0, stdout=log)
    corpus = Corpus.objects.get(tag="docred")
    assert corpus.schema == DOCRED
    assert DocumentEntity.objects.filter(document__corpus=corpus).count() == 14
    labels = {(d["title"], lab["h"], lab["t"], lab["r"])
              for d in json.loads((out / "docs.json").read_text()) for lab in d["labels"]}
    assert GoldRelation.objects.filter(document__corpus=corpus).count() == len(labels) == 18
    # the systems' own files, in the DocRED result format, accepted whole
    subs = list(Submission.objects.filter(corpus=corpus).order_by("name"))
    assert [s.name for s in subs] == ["docred_sys_1", "docred_sys_2"]
    assert not list((out / "systems").glob("*.kb"))
    for sub in subs:
        rows = json.loads((out / "systems" / f"{sub.name}.json").read_text())
        assert sub.state == State.SCORED and sub.n_relations == len(rows)
        assert {i.predicate for i in RelationInstance.objects.filter(submission=sub)} <= set(
            get_schema(DOCRED).relations)
        assert SystemScore.objects.filter(submission=sub, scheme="instance").exists()
    # the crowd labelled the drawn document-level pairs in DocRED's relation ids
    predicates = {p for label in PairLabel.objects.filter(pair__document__corpus=corpus)
                  for p in label.predicates}
    assert predicates and predicates <= {*get_schema(DOCRED).relations, "no_relation"}
    text = log.getvalue()
    assert "intervals contain the truth" in text and "docred_sys_1" in text


@pytest.mark.django_db(transaction=True)
def test_demo_docred_tac_keeps_the_mapped_world(tmp_path: Path) -> None:
    """The same text mapped to TAC KBP: the real-text run of the sentence-level pipeline
    (TAC KB files, mention pairs, the two-stage exhaustive sample)."""
    out = tmp_path / "world"
    call_command("demo", world="docred-tac", source=str(written_source(tmp_path)),
                 out=str(out), docs=2, systems=2, seed=1, stdout=io.StringIO())
    corpus = Corpus.objects.get(tag="docred-tac")
    assert corpus.schema == "tac_kbp"
    subs = Submission.objects.filter(corpus=corpus)
    assert subs.count() == 2 and {s.state for s in subs} == {State.SCORED}
    assert all(":" in p for p in RelationInstance.objects.filter(
        submission__corpus=corpus).values_list("predicate", flat=True))
