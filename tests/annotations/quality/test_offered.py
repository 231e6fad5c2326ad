"""The answers each relation question offered and its stratum (`workers.offered`), as the
quality pass and the correction's replicates model them."""

from __future__ import annotations

import pytest

from annotations.models import Question, QuestionState, TaskKind
from annotations.quality.workers import offered
from kbpo.core.schema import predicates_for
from tests.factories import make_corpus, make_pair, span


@pytest.mark.django_db
def test_offered_answers_and_strata_per_question() -> None:
    """`workers.offered`: per question the answers its pair's types allow (+ none) and a
    stratum per type pair, numbered as the questions first show them; a question the
    database lacks offers two answers in a stratum of its own."""
    corpus = make_corpus("lt-offered")
    doc = corpus.documents.get(doc_id="D1")
    per_gpe = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    per_org = make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG")
    org_gpe = make_pair(doc, span(doc, "Acme", 1), "ORG", span(doc, "London", 1), "GPE")
    qs = [Question.objects.create(corpus=corpus, kind=TaskKind.RELATION, pair=p,
                                  state=QuestionState.COMPLETE).pk
          for p in (per_org, per_gpe, per_org, org_gpe)]
    missing = max(qs) + 1000
    k, strata = offered([qs[0], qs[1], missing, qs[2], qs[3]])
    assert strata.tolist() == [0, 1, 2, 0, 3]
    assert k.tolist() == [len(predicates_for("PER", "ORG")) + 1,
                          len(predicates_for("PER", "GPE")) + 1, 2,
                          len(predicates_for("PER", "ORG")) + 1,
                          len(predicates_for("ORG", "GPE")) + 1]
    assert len(set(k.tolist())) > 2  # the types really differ in what they allow
    empty_k, empty_strata = offered([])
    assert len(empty_k) == 0 and len(empty_strata) == 0


@pytest.mark.django_db
def test_a_docred_question_offers_every_relation_whatever_its_types() -> None:
    """The DocRED page offers all 96 relations and none for any pair; the model counted
    TAC's predicates for the pair's types instead (1 answer for LOC-LOC, which leaves a
    wrong answer no probability at all). A DocRED PER-ORG pair is a stratum of its own,
    apart from a TAC corpus's PER-ORG pairs."""
    from kbpo.core.models import Corpus
    from kbpo.core.schemas import DOCRED, get_schema

    tac = make_corpus("lt-offered-tac")
    docred = make_corpus("lt-offered-docred")
    Corpus.objects.filter(pk=docred.pk).update(schema=DOCRED)
    qs = []
    for corpus, (head, tail), types in (
            (tac, (("Tom King", 1), ("Acme", 0)), ("PER", "ORG")),
            (docred, (("Tom King", 1), ("Acme", 0)), ("PER", "ORG")),
            (docred, (("Ada Byron", 0), ("London", 0)), ("LOC", "LOC"))):
        doc = corpus.documents.get(doc_id="D1")
        pair = make_pair(doc, span(doc, *head), types[0], span(doc, *tail), types[1])
        qs.append(Question.objects.create(corpus=corpus, kind=TaskKind.RELATION, pair=pair,
                                          state=QuestionState.COMPLETE).pk)
    k, strata = offered(qs)
    everything = len(get_schema(DOCRED).relations) + 1
    assert everything == 97
    assert k.tolist() == [len(predicates_for("PER", "ORG")) + 1, everything, everything]
    assert strata.tolist() == [0, 1, 2]


@pytest.mark.django_db
def test_an_answer_outside_the_offered_relations_is_refused_and_moves_nothing(
        django_capture_on_commit_callbacks) -> None:
    """The intake refuses a relation the pair's types do not offer; one stored anyway
    (written before the check, or by hand) is left out of the quality pass's model and
    counted as refused: every label's posterior is what it was without it."""
    from annotations.interfaces.intake import IntakeError, worker_for
    from annotations.models import Assignment, PairLabel, Response
    from annotations.quality.workers import update_worker_quality
    from tests.annotations.crowd.helpers import answer
    from tests.annotations.crowd.test_hostile_crowd import TRUTH, plan

    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    outside = "org:founded_by"  # offered on no PER-x pair
    with pytest.raises(IntakeError, match="choices"):
        answer(hit, "w0", lambda q: [outside])
    assert not Response.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        for w in ("w1", "w2", "w3"):
            answer(hit, w, lambda q: TRUTH[q.pair.object_type])
    clean = update_worker_quality(hit.corpus_id)
    assert clean.refused == 0 and clean.answers == 9
    before = dict(PairLabel.objects.values_list("pair_id", "posterior"))
    # A fourth worker's answers naming it, stored past the intake.
    assignment = Assignment.objects.get(worker__external_id="w3")
    assignment.pk, assignment.external_id = None, "by-hand-w4"
    assignment.worker = worker_for("simulated", "w4")
    assignment.save()
    for q in Question.objects.filter(hit_items__hit=hit):
        Response.objects.create(assignment=assignment, question=q,
                                worker=assignment.worker, choices=[outside])
    report = update_worker_quality(hit.corpus_id)
    assert report.refused == 3 and report.answers == 9
    assert dict(PairLabel.objects.values_list("pair_id", "posterior")) == before
