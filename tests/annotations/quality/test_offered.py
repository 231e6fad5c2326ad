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
