"""Answer intake: validation, idempotence, and who may answer what."""

from __future__ import annotations

import pytest

from annotations.interfaces.intake import (
    AnswerIn,
    IntakeError,
    answers_stored,
    parse_answers,
    submit_assignment,
    worker_for,
)
from annotations.models import HitState, Response
from kbpo.core.models import Document
from tests.factories import make_corpus, make_hit, make_pair, span


@pytest.fixture
def hit(db):
    corpus = make_corpus()
    doc = Document.objects.get(doc_id="D1")
    p1 = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    p2 = make_pair(doc, span(doc, "Ada Byron", 1), "PER", span(doc, "Tom King"), "PER")
    return make_hit(corpus, [p1, p2])


def answers_for(hit, choices: list[list[str]]) -> list[AnswerIn]:
    qids = [hq.question_id for hq in hit.items.order_by("position")]
    return [AnswerIn(q, tuple(sorted(c))) for q, c in zip(qids, choices, strict=True)]


def test_stores_and_is_idempotent(hit, django_capture_on_commit_callbacks) -> None:
    worker = worker_for("simulated", "w1")
    answers = answers_for(hit, [["per:place_of_birth"], ["per:spouse"]])
    received = []
    answers_stored.connect(lambda **kw: received.append(kw["question_ids"]), weak=False,
                           dispatch_uid="test-intake")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            a1 = submit_assignment(hit=hit, worker=worker, assignment_id="A1", answers=answers)
        a2 = submit_assignment(hit=hit, worker=worker, assignment_id="A1", answers=answers)
    finally:
        answers_stored.disconnect(dispatch_uid="test-intake")
    assert a1.pk == a2.pk
    assert Response.objects.count() == 2
    assert len(received) == 1
    assert sorted(Response.objects.values_list("choices", flat=True)) == [
        ["per:place_of_birth"], ["per:spouse"]]


@pytest.mark.parametrize(("choices", "field"), [
    ([["per:spouse"], ["per:spouse"]], "answers[0].choices"),     # not an option for PER-GPE
    ([["no_relation", "per:place_of_birth"], ["per:spouse"]], "answers[0].choices"),
    ([["per:place_of_birth"], ["made_up"]], "answers[1].choices"),
])
def test_invalid_choices_name_the_field(hit, choices, field) -> None:
    with pytest.raises(IntakeError) as err:
        submit_assignment(hit=hit, worker=worker_for("simulated", "w1"), assignment_id="A1",
                          answers=answers_for(hit, choices))
    assert err.value.field == field
    assert not Response.objects.exists()


def test_every_question_must_be_answered_once(hit) -> None:
    worker = worker_for("simulated", "w1")
    full = answers_for(hit, [["per:place_of_birth"], ["per:spouse"]])
    with pytest.raises(IntakeError, match="has no answer"):
        submit_assignment(hit=hit, worker=worker, assignment_id="A1", answers=full[:1])
    with pytest.raises(IntakeError, match="twice"):
        submit_assignment(hit=hit, worker=worker, assignment_id="A1", answers=[*full, full[0]])
    with pytest.raises(IntakeError, match="not part of this HIT"):
        submit_assignment(hit=hit, worker=worker, assignment_id="A1",
                          answers=[*full, AnswerIn(10**6, ("per:spouse",))])


def test_other_workers_assignment_and_closed_hits_are_refused(hit) -> None:
    answers = answers_for(hit, [["no_relation"], ["per:spouse"]])
    submit_assignment(hit=hit, worker=worker_for("simulated", "w1"), assignment_id="A1",
                      answers=answers)
    with pytest.raises(IntakeError) as err:
        submit_assignment(hit=hit, worker=worker_for("simulated", "w2"), assignment_id="A1",
                          answers=answers)
    assert err.value.status == 403
    with pytest.raises(IntakeError, match="other answers"):
        submit_assignment(hit=hit, worker=worker_for("simulated", "w1"), assignment_id="A1",
                          answers=answers_for(hit, [["no_relation"], ["per:siblings"]]))
    with pytest.raises(IntakeError, match="already answered this HIT"):
        submit_assignment(hit=hit, worker=worker_for("simulated", "w1"), assignment_id="A9",
                          answers=answers)
    blocked = worker_for("simulated", "w3")
    blocked.blocked = True
    blocked.save()
    with pytest.raises(IntakeError, match="no longer"):
        submit_assignment(hit=hit, worker=blocked, assignment_id="A3", answers=answers)
    hit.state = HitState.EXPIRED
    hit.save()
    with pytest.raises(IntakeError, match="takes no answers"):
        submit_assignment(hit=hit, worker=worker_for("simulated", "w4"), assignment_id="A4",
                          answers=answers)


def test_an_on_site_hit_takes_no_answer_past_its_slots(hit) -> None:
    """Nothing else keeps an on-site HIT to its slots (MTurk does that for its own):
    one more answer would be counted and paid beyond the HIT's cost. Refused work
    (paid, not counted) leaves its slot to a replacement."""
    from annotations.models import Assignment, Refusal

    answers = answers_for(hit, [["no_relation"], ["per:spouse"]])
    assert hit.max_assignments == 3
    for i in range(3):
        submit_assignment(hit=hit, worker=worker_for("simulated", f"w{i}"),
                          assignment_id=f"A{i}", answers=answers)
    with pytest.raises(IntakeError, match="already has all the answers") as err:
        submit_assignment(hit=hit, worker=worker_for("simulated", "w9"), assignment_id="A9",
                          answers=answers)
    assert (err.value.status, err.value.code, err.value.field) == (409, "closed", "hitId")
    assert Assignment.objects.filter(hit=hit).count() == 3
    Assignment.objects.filter(external_id="A0").update(refusal=Refusal.PAY)
    submit_assignment(hit=hit, worker=worker_for("simulated", "w9"), assignment_id="A9",
                      answers=answers)


@pytest.mark.parametrize(("payload", "field"), [
    ([], "answers"),
    ({"answers": [5]}, "answers[0]"),
    ({"answers": [{"question": "1", "choices": ["x"]}]}, "answers[0].question"),
    ({"answers": [{"question": 1, "choices": []}]}, "answers[0].choices"),
    ({"answers": [{"question": 1, "choices": ["x"], "seconds": -1}]}, "answers[0].seconds"),
])
def test_parse_answers_errors(payload, field) -> None:
    with pytest.raises(IntakeError) as err:
        parse_answers(payload)
    assert err.value.field == field


def test_parse_answers_normalises_choices() -> None:
    [a] = parse_answers({"answers": [{"question": 3, "choices": ["b", "a", "b"]}]})
    assert a.choices == ("a", "b")
