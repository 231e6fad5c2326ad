"""Answer posts the database cannot store or the parser cannot read: each is a 4xx that
names the field, never a 500, and nothing is kept."""

from __future__ import annotations

import json

import pytest

from annotations.interfaces.intake import IntakeError, parse_answers, submit_assignment, worker_for
from annotations.models import Assignment, PagePost, Response, TaskKind
from tests.annotations.interfaces.builders import document_hit, relation_hit
from tests.annotations.interfaces.test_task_views import mturk_body, post, relation_answers


@pytest.fixture(autouse=True)
def _no_rate_limits(settings) -> None:
    settings.KBPO_ANSWER_RATE_PER_IP = 10**6
    settings.KBPO_ANSWER_RATE_PER_WORKER = 10**6


def _with_extra(hit, extra: dict) -> list[dict]:
    answers = relation_answers(hit)
    answers[0]["extra"] = extra
    return answers


@pytest.mark.django_db
@pytest.mark.parametrize(("overrides", "field"), [
    ({"workerId": "W\x00"}, "workerId"),
    ({"workerId": "W\ud800"}, "workerId"),
    ({"workerId": "W\n1"}, "workerId"),
    ({"assignmentId": "A\x00"}, "assignmentId"),
    ({"assignmentId": "A\udfff"}, "assignmentId"),
])
def test_ids_the_database_cannot_store_are_refused(client, overrides, field) -> None:
    hit = relation_hit()
    response = post(client, hit, {**mturk_body(hit, relation_answers(hit)), **overrides})
    assert (response.status_code, response.json()["field"]) == (400, field)
    assert not PagePost.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("extra", [{"note": "a\x00b"}, {"no\x00te": 1}, {"l": ["\ud800"]},
                                   {"deep": json.loads("[" * 30 + "]" * 30)}])
def test_extra_the_database_cannot_store_is_refused(client, extra) -> None:
    hit = relation_hit()
    response = post(client, hit, mturk_body(hit, _with_extra(hit, extra)))
    assert (response.status_code, response.json()["field"]) == (400, "answers[0].extra")
    assert not PagePost.objects.exists()


@pytest.mark.django_db
def test_entity_labels_with_nul_are_refused(client) -> None:
    hit = document_hit(TaskKind.ENTITY)
    qid = hit.items.get().question_id
    answers = [{"question": qid, "choices": ["done"], "extra": {"mentions": [
        {"begin": 0, "end": 3, "type": "PER", "entity": "a\x00", "canonical": True,
         "link": ""}]}}]
    response = post(client, hit, mturk_body(hit, answers))
    assert (response.status_code, response.json()["field"]) == (400, "answers[0].extra")


@pytest.mark.django_db
def test_deeply_nested_json_is_a_bad_request(client) -> None:
    hit = relation_hit()
    response = client.post(f"/annotate/hit/{hit.url_key}/answers/",
                           data="[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert (response.status_code, response.json()["field"]) == (400, "body")


@pytest.mark.django_db
def test_oversized_body_is_413_json(client, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    hit = relation_hit()
    body = mturk_body(hit, _with_extra(hit, {"pad": "x" * 20_000}))
    response = post(client, hit, body)
    assert response.status_code == 413
    assert response.json()["field"] == "body" and "10,000" in response.json()["error"]


def test_seconds_must_be_a_number_not_a_boolean() -> None:
    with pytest.raises(IntakeError) as exc:
        parse_answers({"answers": [{"question": 1, "choices": ["no_relation"],
                                    "seconds": True}]})
    assert exc.value.field == "answers[0].seconds"


@pytest.mark.django_db
def test_confirmed_path_refuses_unstorable_ids() -> None:
    """The sync and the local intake go through `submit_assignment` and `worker_for`."""
    hit = relation_hit()
    with pytest.raises(IntakeError) as exc:
        worker_for("mturk", "W\x00")
    assert exc.value.field == "workerId"
    answers = parse_answers({"answers": relation_answers(hit)})
    with pytest.raises(IntakeError) as exc:
        submit_assignment(hit=hit, worker=worker_for("mturk", "W1"), assignment_id="A\x00",
                          answers=answers)
    assert exc.value.field == "assignmentId"
    assert not Assignment.objects.exists() and not Response.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("value", [["https://www.mturk.com"], 5, {"a": 1}, True])
def test_turk_submit_to_of_the_wrong_type_is_a_bad_request(client, value) -> None:
    hit = relation_hit()
    response = post(client, hit, {**mturk_body(hit, relation_answers(hit)),
                                  "turkSubmitTo": value})
    assert (response.status_code, response.json()["field"]) == (400, "turkSubmitTo")


@pytest.mark.django_db
@pytest.mark.parametrize("choice", ["x\x00", "\ud800"])
def test_unstorable_choices_on_a_confirmed_assignment_are_refused(client, choice) -> None:
    """A replay of an assignment MTurk already confirmed, under its worker's id, with a
    choice Postgres cannot store: a 400, not a 500 from the insert of the page post."""
    hit = relation_hit()
    Assignment.objects.create(hit=hit, worker=worker_for("mturk", "W1"), external_id="A1")
    answers = relation_answers(hit)
    answers[0]["choices"] = [choice]
    response = post(client, hit, mturk_body(hit, answers))
    assert (response.status_code, response.json()["field"]) == (400, "answers[0].choices")
    assert not PagePost.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "field"), [
    (lambda a: a[0].update(choices=["per:made_up"]), "answers[0].choices"),
    (lambda a: a[0].update(question=10**6), "answers[0].question"),
    (lambda a: a.pop(), "answers[0].question"),
])
def test_replays_on_a_confirmed_assignment_are_checked_like_any_post(client, change,
                                                                     field) -> None:
    """Once MTurk confirmed A1 as W1's, W1's ids are no licence to skip the checks:
    a made-up label, another HIT's question or a missing answer is a 400."""
    hit = relation_hit()
    Assignment.objects.create(hit=hit, worker=worker_for("mturk", "W1"), external_id="A1")
    answers = relation_answers(hit)
    change(answers)
    response = post(client, hit, mturk_body(hit, answers))
    assert (response.status_code, response.json()["field"]) == (400, field)
    assert not PagePost.objects.exists()
    assert post(client, hit, mturk_body(hit, relation_answers(hit))).status_code == 200


@pytest.mark.django_db
def test_errors_never_name_a_question_id(client) -> None:
    """The page numbers its questions 0, 1, … so that a control's id cannot give it
    away; no refusal may name an id either, or a worker could probe for them."""
    hit = relation_hit()
    qids = list(hit.items.order_by("position", "pk").values_list("question_id", flat=True))
    one = {"choices": ["no_relation"]}
    guessed = post(client, hit, mturk_body(hit, [{"question": qids[1], **one}])).json()
    wrong = post(client, hit, mturk_body(hit, [{"question": 10**6, **one}])).json()
    assert guessed["field"] == wrong["field"] == "answers[0].question"
    assert guessed["error"].replace(str(qids[1]), "X") == wrong["error"].replace(
        str(10**6), "X")
    short = post(client, hit, mturk_body(hit, [{"question": 0, **one}]))
    assert short.status_code == 400
    assert short.json()["error"] == ("question 2 of 2 (numbered 1 in the answers) has no "
                                     "answer")
    assert not PagePost.objects.exists()
