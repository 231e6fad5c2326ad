"""Answers to the DocRED exhaustive page (`extra.facts`): every malformed, hostile or
out-of-task fact is a 400 naming its field, never a 500, and nothing is kept."""

from __future__ import annotations

import pytest

from annotations.interfaces.intake import AnswerIn, IntakeError, submit_assignment, worker_for
from annotations.models import Backend, PagePost, Response
from tests.annotations.interfaces.builders import docred_fact_hit
from tests.annotations.interfaces.test_task_views import mturk_body, post


@pytest.fixture(autouse=True)
def _no_rate_limits(settings) -> None:
    settings.KBPO_ANSWER_RATE_PER_IP = 10**6
    settings.KBPO_ANSWER_RATE_PER_WORKER = 10**6


def body(hit, extra: object, choices: object = ("done",)) -> dict:
    return mturk_body(hit, [{"question": 0, "choices": list(choices) if isinstance(
        choices, tuple) else choices, "extra": extra, "seconds": 40}])


def fact(h: object = 0, t: object = 3, r: object = "P22") -> dict:
    return {"h": h, "t": t, "r": r}


@pytest.mark.django_db
def test_good_answers_are_kept(client) -> None:
    hit = docred_fact_hit()
    facts = [fact(0, 3, "P22"), fact(0, 1, "P569"), fact(0, 2, "P19"), fact(2, 4, "P17"),
             fact(0, 2, "P20")]
    response = post(client, hit, body(hit, {"facts": facts}))
    assert response.status_code == 200, response.json()
    assert PagePost.objects.get().payload["answers"][0]["extra"] == {"facts": facts}


@pytest.mark.django_db
def test_no_fact_at_all_is_an_answer(client) -> None:
    hit = docred_fact_hit()
    assert post(client, hit, body(hit, {"facts": []})).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(("extra", "field", "words"), [
    ({}, "answers[0].extra.facts", "expected a list of facts"),
    ({"facts": {"h": 0}}, "answers[0].extra.facts", "expected a list of facts"),
    ({"facts": [], "relations": []}, "answers[0].extra", "unknown field 'relations'"),
    ({"facts": ["P22"]}, "answers[0].extra.facts[0]", "expected an object"),
    ({"facts": [fact() | {"evidence": [1]}]}, "answers[0].extra.facts[0]", "unknown field"),
    ({"facts": [fact(h=None)]}, "answers[0].extra.facts[0].h", "entity index"),
    ({"facts": [fact(h="0")]}, "answers[0].extra.facts[0].h", "entity index"),
    ({"facts": [fact(h=True)]}, "answers[0].extra.facts[0].h", "entity index"),
    ({"facts": [fact(h=0.0)]}, "answers[0].extra.facts[0].h", "entity index"),
    ({"facts": [fact(t=6)]}, "answers[0].extra.facts[0].t", "6 entities, 0 to 5"),
    ({"facts": [fact(t=-1)]}, "answers[0].extra.facts[0].t", "out of range"),
    ({"facts": [fact(t=10**30)]}, "answers[0].extra.facts[0].t", "out of range"),
    ({"facts": [fact(h=3, t=0)]}, "answers[0].extra.facts[0].h", "heads are 0, 1, 2"),
    ({"facts": [fact(h=2, t=2, r="P17")]}, "answers[0].extra.facts[0]", "both 2"),
    ({"facts": [fact(r="P9999")]}, "answers[0].extra.facts[0].r", "not a relation offered"),
    ({"facts": [fact(r="p22")]}, "answers[0].extra.facts[0].r", "did you mean P22"),
    ({"facts": [fact(r="no_relation")]}, "answers[0].extra.facts[0].r", "not a relation"),
    ({"facts": [fact(r=22)]}, "answers[0].extra.facts[0].r", "relation id"),
    ({"facts": [fact(r="x" * 5000)]}, "answers[0].extra.facts[0].r", "not a relation"),
    ({"facts": [fact(), fact()]}, "answers[0].extra.facts[1]", "listed twice"),
    ({"facts": [fact(0, 3, r) for r in ("P22", "P25", "P26", "P40")]},
     "answers[0].extra.facts[3]", "more than 3 relations"),
    ({"facts": [fact(r="P22\x00")]}, "answers[0].extra", "NUL"),
])
def test_bad_facts_are_refused_with_their_field(client, extra, field, words) -> None:
    hit = docred_fact_hit()
    response = post(client, hit, body(hit, extra))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert words in response.json()["error"]
    assert not PagePost.objects.exists()


@pytest.mark.django_db
def test_too_many_facts_and_wrong_choices_are_refused(client) -> None:
    hit = docred_fact_hit(heads=(0,))
    many = [fact(0, t, r) for t in range(1, 6) for r in ("P22", "P25", "P26")] + [fact(0, 1, "P19")]
    response = post(client, hit, body(hit, {"facts": many}))
    assert response.status_code == 400
    assert "more than this task's 1 head" in response.json()["error"]
    response = post(client, hit, body(hit, {"facts": []}, choices=["P22"]))
    assert (response.status_code, response.json()["field"]) == (400, "answers[0].choices")


@pytest.mark.django_db
def test_the_intake_refuses_the_same_for_every_source() -> None:
    """Simulated and synced answers take the same checks as page posts."""
    hit = docred_fact_hit(backend=Backend.SIMULATED, external_id=None)
    qid = hit.items.get().question_id
    with pytest.raises(IntakeError, match="not a head entity"):
        submit_assignment(hit=hit, worker=worker_for(Backend.SIMULATED, "s1"),
                          assignment_id="sim-1",
                          answers=[AnswerIn(qid, ("done",), {"facts": [fact(4, 0, "P17")]})])
    assert not Response.objects.exists()
