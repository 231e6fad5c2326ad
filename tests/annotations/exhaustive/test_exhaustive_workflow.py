"""The exhaustive workflow end to end: tasks, simulated crowd, aggregation, completion."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from annotations.exhaustive.sampling import plan_exhaustive
from annotations.exhaustive.simulation import simulate_exhaustive
from annotations.exhaustive.workflow import (
    aggregate_relations,
    exhaustive_candidate_pairs,
    progress,
)
from annotations.interfaces.intake import AnswerIn, submit_assignment, worker_for
from annotations.models import (
    Assignment,
    Backend,
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldMention,
    GoldRelation,
    Hit,
    HitState,
    Question,
    QuestionState,
    TaskKind,
)
from annotations.signals import labels_changed
from kbpo.core.corpus import load_corpus
from kbpo.core.gold import canonical_relations
from kbpo.core.models import Corpus, Sentence
from tests.factories import make_corpus, span


def gold_by_doc(world: Path) -> dict[str, dict]:
    return {d["doc"]: d for d in map(json.loads, (world / "gold.jsonl").read_text().splitlines())}


def relations_of(corpus: Corpus, stage: str) -> set[tuple]:
    return set(GoldRelation.objects.filter(
        document__exhaustive__corpus=corpus, document__exhaustive__stage=stage).values_list(
        "document__doc_id", "subject_begin", "subject_end", "object_begin", "object_end",
        "predicate"))


def truth_of(gold: dict[str, dict], doc_ids: set[str]) -> set[tuple]:
    """The gold relations of some documents, canonical as the crowd's labels are."""
    out = set()
    for d in doc_ids:
        types = {tuple(m["span"]): m["type"] for m in gold[d]["mentions"]}
        stated = [(tuple(r["subject"]), r["predicate"], tuple(r["object"]))
                  for r in gold[d]["relations"]]
        out |= {(d, *pair, p) for pair, preds in
                canonical_relations(d, types, stated).items() for p in preds}
    return out


# reset_sequences: the simulated crowd seeds each answer with the question's primary key,
# so without it the answers (and the F1 checked below) depend on which tests ran first.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_simulated_crowd_completes_both_stages(world: Path, settings) -> None:
    settings.KBPO_CROWD_BACKEND = "simulated"
    changed: list[int] = []

    def on_change(sender: object, corpus_id: int, **kw: object) -> None:
        changed.append(corpus_id)

    labels_changed.connect(on_change, dispatch_uid="test-exh-workflow")
    try:
        load_corpus("wf", world / "corpus.jsonl", workers=1)
        corpus = Corpus.objects.get(tag="wf")
        gold = gold_by_doc(world)
        plan_exhaustive(corpus, 8, 0.5, seed=2)
        hits = Hit.objects.filter(corpus=corpus, kind=TaskKind.ENTITY)
        assert hits.count() == 4 and all(h.state == HitState.POSTED for h in hits)
        for hit in hits:  # reward per token, three assignments
            doc = hit.items.get().question.document
            tokens = sum(len(s.tokens) // 2 for s in Sentence.objects.filter(document=doc))
            assert hit.reward == (Decimal(tokens) * Decimal("0.002")).quantize(Decimal("0.01"))
            assert hit.max_assignments == 3 and hit.cost_estimate == hit.reward * 3
        assert set(ExhaustiveDocument.objects.values_list("state", flat=True)) == {"entities"}

        # a perfect crowd reproduces the gold exactly
        report = simulate_exhaustive(corpus, world / "gold.jsonl", error_rate=0.0, seed=1,
                                     spammer_fraction=0.0)
        assert not report.refused, report.refused
        assert report.kinds == {"entity": 12, "exhaustive": 12}
        seeds = set(ExhaustiveDocument.objects.filter(stage=ExhaustiveStage.SEED)
                    .values_list("document__doc_id", flat=True))
        assert set(ExhaustiveDocument.objects.values_list("state", flat=True)) == {"complete"}
        assert relations_of(corpus, ExhaustiveStage.SEED) == truth_of(gold, seeds)
        for doc_id in seeds:
            got = set(GoldMention.objects.filter(document__doc_id=doc_id, document__corpus=corpus)
                      .values_list("begin", "end", "type"))
            assert got == {(*m["span"], m["type"]) for m in gold[doc_id]["mentions"]}
        assert changed.count(corpus.pk) == 4
        exhaustive_hit = Hit.objects.filter(kind=TaskKind.EXHAUSTIVE).first()
        n_pairs = len(exhaustive_candidate_pairs(exhaustive_hit.items.get().question.document))
        assert exhaustive_hit.reward == max(Decimal("0.01"), Decimal(n_pairs) * Decimal("0.02"))
        assert set(Hit.objects.values_list("state", flat=True)) == {HitState.COMPLETE}
        # every worker of the finished document tasks was approved and paid
        assert set(Assignment.objects.values_list("state", flat=True)) == {"approved"}
        assert all(a.paid == a.hit.reward for a in Assignment.objects.select_related("hit"))

        # stage 2 with a noisy crowd (10% errors, a spammer): close to the gold
        second = plan_exhaustive(corpus, 8, 0.5, seed=2)
        assert second.created == 4
        noisy = simulate_exhaustive(corpus, world / "gold.jsonl", error_rate=0.1, seed=5)
        assert not noisy.refused, noisy.refused
        matched = set(ExhaustiveDocument.objects.filter(stage=ExhaustiveStage.MATCHED)
                      .values_list("document__doc_id", flat=True))
        got, want = relations_of(corpus, ExhaustiveStage.MATCHED), truth_of(gold, matched)
        f1 = 2 * len(got & want) / (len(got) + len(want))
        assert f1 > 0.85, f1
        p = progress(corpus)
        assert p["complete"] == p["documents"] == 8 and p["open_hits"] == 0
        assert p["relations"] == len(relations_of(corpus, ExhaustiveStage.SEED)) + len(got)
        assert p["spent_usd"] == sum(h.reward * 3 for h in Hit.objects.all())
    finally:
        labels_changed.disconnect(dispatch_uid="test-exh-workflow")


@pytest.mark.django_db(transaction=True)
def test_answers_wait_for_three_workers_and_aggregate_once(settings) -> None:
    settings.KBPO_CROWD_BACKEND = "simulated"
    corpus = make_corpus("one")
    doc = corpus.documents.get()
    plan_exhaustive(corpus, 1, 1.0, seed=0)
    hit = Hit.objects.get(kind=TaskKind.ENTITY)
    q = hit.items.get().question

    def mention(text: str, typ: str, entity: str, nth: int = 0) -> dict:
        b, e = span(doc, text, nth)
        return {"begin": b, "end": e, "type": typ, "entity": entity, "canonical": nth == 0,
                "link": ""}

    people = [mention("Ada Byron", "PER", "a"), mention("London", "GPE", "l"),
              mention("Ada Byron", "PER", "a", 1), mention("Tom King", "PER", "t")]
    for i in range(3):
        submit_assignment(hit=hit, worker=worker_for(Backend.SIMULATED, f"w{i}"),
                          assignment_id=f"a{i}",
                          answers=[AnswerIn(q.pk, ("done",), {"mentions": people})])
        q.refresh_from_db()
        assert q.state == (QuestionState.COMPLETE if i == 2 else QuestionState.OPEN)
    assert GoldMention.objects.filter(document=doc).count() == 4
    ex_q = Question.objects.get(kind=TaskKind.EXHAUSTIVE)
    pairs = exhaustive_candidate_pairs(doc)
    # Ada Byron–London (sentence 1); Ada Byron–Tom King (sentence 2); mentions of one
    # entity are never paired
    assert [(doc.text[slice(*c.subject)], doc.text[slice(*c.object)]) for c in pairs] == [
        ("Ada Byron", "London"), ("Ada Byron", "Tom King")]
    ex_hit = ex_q.hits.get()
    born, wed = pairs

    def rel(c, choices: list[str]) -> dict:
        return {"subject": list(c.subject), "object": list(c.object), "choices": choices}

    answers = [[rel(born, ["per:place_of_birth"]), rel(wed, ["per:spouse"])],
               [rel(born, ["per:place_of_birth", "per:place_of_residence"]),
                rel(wed, ["no_relation"])],
               [rel(born, ["per:place_of_birth"]), rel(wed, ["no_relation"])]]
    for i, rels in enumerate(answers):
        submit_assignment(hit=ex_hit, worker=worker_for(Backend.SIMULATED, f"w{i}"),
                          assignment_id=f"x{i}",
                          answers=[AnswerIn(ex_q.pk, ("done",), {"relations": rels})])
    got = set(GoldRelation.objects.values_list("predicate", "subject_entity"))
    assert got == {("per:place_of_birth", "E1")}
    assert ExhaustiveDocument.objects.get().state == "complete"
    # a redelivered aggregation task finds nothing to do
    from annotations.exhaustive.workflow import complete_document_question
    assert complete_document_question(ex_q.pk).startswith("skipped")


def test_relation_majority_ignores_invalid_choices() -> None:
    from annotations.exhaustive.workflow import CandidatePair

    c = CandidatePair((0, 3), "PER", (10, 16), "GPE", 1, "E1")
    answers = [{"relations": [{"subject": [0, 3], "object": [10, 16],
                               "choices": ["per:spouse", "per:place_of_death"]}]},
               {"relations": [{"subject": [0, 3], "object": [10, 16],
                               "choices": ["per:spouse", "per:place_of_death"]}]},
               {"relations": "garbage"}]
    assert aggregate_relations([c], answers) == {c: ["per:place_of_death"]}


@pytest.mark.django_db(transaction=True)
def test_a_rejected_assignments_document_answers_do_not_count(settings) -> None:
    """Document questions read only answers that count (crowd/discount.py): with one of
    three answers discounted (its assignment rejected), the question waits for a third."""
    from annotations.models import Response

    settings.KBPO_CROWD_BACKEND = "simulated"
    corpus = make_corpus("one")
    doc = corpus.documents.get()
    plan_exhaustive(corpus, 1, 1.0, seed=0)
    hit = Hit.objects.get(kind=TaskKind.ENTITY)
    q = hit.items.get().question
    b, e = span(doc, "Ada Byron")
    people = [{"begin": b, "end": e, "type": "PER", "entity": "a", "canonical": True,
               "link": ""}]

    def answer(i: int) -> None:
        submit_assignment(hit=hit, worker=worker_for(Backend.SIMULATED, f"w{i}"),
                          assignment_id=f"a{i}",
                          answers=[AnswerIn(q.pk, ("done",), {"mentions": people})])
        q.refresh_from_db()

    answer(0)
    Response.objects.filter(question=q).update(counted=False)  # its assignment rejected
    answer(1)
    answer(2)
    assert q.state == QuestionState.OPEN
    Hit.objects.filter(pk=hit.pk).update(max_assignments=4)  # a slot for the missing answer
    answer(3)
    assert q.state == QuestionState.COMPLETE
