"""At most KBPO_MAX_RELATIONS_PER_ANSWER relations per pair in one answer: ticking every
box must not make a worker "right" on every pair. The intake refuses more (the worker's
fault, `invalid`), on the relation page and the exhaustive page alike."""

from __future__ import annotations

import json

import pytest

from annotations.interfaces.intake import (
    IntakeError,
    min_work_seconds,
    parse_answers,
    submit_assignment,
    work_units,
    worker_for,
)
from annotations.models import Response, TaskKind
from tests.annotations.interfaces.builders import document_hit, relation_hit
from tests.annotations.interfaces.test_document_answers import doc_of, judged, submit
from tests.annotations.interfaces.test_intake import answers_for
from tests.factories import span

pytestmark = pytest.mark.django_db

PER_GPE = ["per:place_of_birth", "per:place_of_death", "per:place_of_residence"]


def test_default_cap_is_two_relations(settings) -> None:
    assert settings.KBPO_MAX_RELATIONS_PER_ANSWER == 2


def test_relation_answer_over_the_cap_is_refused_naming_the_field() -> None:
    hit = relation_hit()
    worker = worker_for("mturk", "W1")
    with pytest.raises(IntakeError) as err:
        submit_assignment(hit=hit, worker=worker, assignment_id="A1",
                          answers=answers_for(hit, [PER_GPE, ["per:spouse"]]))
    assert (err.value.field, err.value.code, err.value.status) == (
        "answers[0].choices", "invalid", 400)
    assert "3 relations are marked for one pair; mark at most 2" in err.value.message
    assert not Response.objects.exists()
    # Two relations (a founder who is also an employee) are still an answer.
    submit_assignment(hit=hit, worker=worker, assignment_id="A1",
                      answers=answers_for(hit, [PER_GPE[:2], ["per:spouse"]]))
    assert Response.objects.count() == 2


def test_the_cap_follows_the_setting(settings) -> None:
    settings.KBPO_MAX_RELATIONS_PER_ANSWER = 1
    hit = relation_hit()
    with pytest.raises(IntakeError) as err:
        submit_assignment(hit=hit, worker=worker_for("mturk", "W1"), assignment_id="A1",
                          answers=answers_for(hit, [["per:place_of_birth"],
                                                    ["per:other_family", "per:spouse"]]))
    assert err.value.field == "answers[1].choices" and "mark at most 1" in err.value.message


def test_page_post_over_the_cap_is_refused_at_once(client) -> None:
    """The MTurk page's post is checked before the page forwards to MTurk: the worker
    reads the rule on the page (400, field named) and nothing is kept."""
    hit = relation_hit()
    body = {"assignmentId": "A1", "workerId": "W1", "hitId": hit.external_id,
            "turkSubmitTo": "https://workersandbox.mturk.com",
            "answers": [{"question": 0, "choices": PER_GPE},
                        {"question": 1, "choices": ["per:spouse"]}]}
    response = client.post(f"/annotate/hit/{hit.url_key}/answers/", data=json.dumps(body),
                           content_type="application/json")
    assert response.status_code == 400
    assert response.json()["field"] == "answers[0].choices"
    assert "mark at most 2" in response.json()["error"]


def test_exhaustive_judgement_over_the_cap_is_refused() -> None:
    hit = document_hit(TaskKind.EXHAUSTIVE)
    doc = doc_of(hit)
    key = (span(doc, "Ada Byron"), span(doc, "London"))
    extra = judged(hit, {key: PER_GPE})
    at = next(j for j, r in enumerate(extra["relations"])
              if (tuple(r["subject"]), tuple(r["object"])) == key)
    with pytest.raises(IntakeError) as err:
        submit(hit, extra)
    assert err.value.field == f"answers[0].extra.relations[{at}].choices"
    assert err.value.code == "invalid" and "mark at most 2" in err.value.message
    assert not Response.objects.exists()
    submit(hit, judged(hit, {key: PER_GPE[:2]}))
    assert Response.objects.count() == 1


def test_a_document_task_is_timed_by_its_sentences(settings) -> None:
    """An exhaustive or entity HIT is one question but a whole document to read: the
    least time counted is KBPO_MIN_SECONDS_PER_QUESTION per sentence of it."""
    hit = document_hit(TaskKind.EXHAUSTIVE)
    doc = doc_of(hit)
    sentences = doc.sentences.count()
    assert sentences >= 3  # else one question and one sentence could not be told apart
    assert work_units([hit.items.get().question]) == sentences
    qid = hit.items.get().question_id
    answers = parse_answers({"answers": [{"question": qid, "choices": ["done"],
                                          "extra": judged(hit)}]})
    with pytest.raises(IntakeError) as err:
        submit_assignment(hit=hit, worker=worker_for("mturk", "W1"), assignment_id="A1",
                          answers=answers, work_seconds=sentences - 0.5)
    assert (err.value.code, err.value.field) == ("too_fast", "workTime")
    assert f"{sentences} question(s) or sentence(s)" in err.value.message
    assert not Response.objects.exists()
    submit_assignment(hit=hit, worker=worker_for("mturk", "W2"), assignment_id="A2",
                      answers=answers, work_seconds=sentences + 0.5)
    assert Response.objects.count() == 1
    settings.KBPO_MIN_SECONDS_PER_QUESTION = 0  # off: nothing is too fast
    assert min_work_seconds(work_units([hit.items.get().question])) == 0


def test_a_relation_task_is_timed_by_its_pairs() -> None:
    hit = relation_hit()
    questions = [item.question for item in hit.items.select_related("question")]
    assert work_units(questions) == len(questions) == 2
