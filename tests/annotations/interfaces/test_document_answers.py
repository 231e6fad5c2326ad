"""Document-task answers: candidate pairs and the intake's validation of their payloads."""

from __future__ import annotations

import pytest

from annotations.interfaces.candidates import MentionSpan, document_pairs, pairs_from_mentions
from annotations.interfaces.intake import IntakeError, parse_answers, submit_assignment, worker_for
from annotations.models import Response, TaskKind
from tests.annotations.interfaces.builders import document_hit
from tests.factories import span


def test_pairs_are_canonical_same_sentence_and_typed() -> None:
    sentences = [(0, 50), (51, 100)]
    mentions = [MentionSpan(0, 4, "ORG", "acme"), MentionSpan(10, 14, "PER", "ada"),
                MentionSpan(20, 24, "PER", "ada"),           # same entity as 10-14
                MentionSpan(30, 34, "DATE", "d"), MentionSpan(40, 44, "GPE", "g"),
                MentionSpan(60, 64, "PER", "tom")]            # alone in sentence 2
    pairs = pairs_from_mentions(mentions, sentences)
    keys = [(p.subject.type, p.key) for p in pairs]
    assert keys == [  # reading order of the subject, then of the object
        ("ORG", ((0, 4), (30, 34))),
        ("ORG", ((0, 4), (40, 44))),
        ("PER", ((10, 14), (0, 4))),      # PER is the subject although ORG comes first
        ("PER", ((10, 14), (30, 34))),
        ("PER", ((10, 14), (40, 44))),
        ("PER", ((20, 24), (0, 4))),
        ("PER", ((20, 24), (30, 34))),
        ("PER", ((20, 24), (40, 44))),
    ]  # never PER-PER of one entity, never DATE-GPE (no relation takes them)


@pytest.fixture
def entity_hit(db):
    return document_hit(TaskKind.ENTITY)


@pytest.fixture
def exhaustive_hit(db):
    return document_hit(TaskKind.EXHAUSTIVE)


def doc_of(hit):
    return hit.items.get().question.document


def submit(hit, extra: dict, choices=("done",), assignment="A1"):
    qid = hit.items.get().question_id
    answers = parse_answers({"answers": [{"question": qid, "choices": list(choices),
                                          "extra": extra}]})
    return submit_assignment(hit=hit, worker=worker_for("mturk", "W1"),
                             assignment_id=assignment, answers=answers)


def mention(doc, text, nth=0, type_="PER", entity="E1", canonical=True, link=""):
    b, e = span(doc, text, nth)
    return {"begin": b, "end": e, "type": type_, "entity": entity, "canonical": canonical,
            "link": link}


def test_entity_answer_is_stored(entity_hit) -> None:
    doc = doc_of(entity_hit)
    extra = {"mentions": [mention(doc, "Ada Byron", link="Wikipedia:Ada_Lovelace"),
                          mention(doc, "Ada Byron", 1, canonical=False,
                                  link="Wikipedia:Ada_Lovelace"),
                          mention(doc, "London", type_="GPE", entity="E2")]}
    submit(entity_hit, extra)
    submit(entity_hit, extra)  # idempotent
    assert Response.objects.get().extra == extra


def test_entity_answer_retry_with_other_spans_is_refused(entity_hit) -> None:
    doc = doc_of(entity_hit)
    submit(entity_hit, {"mentions": [mention(doc, "Ada Byron")]})
    with pytest.raises(IntakeError) as err:
        submit(entity_hit, {"mentions": [mention(doc, "London", type_="GPE")]})
    assert err.value.status == 409


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda d, m: m.update(begin=m["begin"] + 1), "answers[0].extra.mentions[0]", "token"),
    (lambda d, m: m.update(end=span(d, "London")[1]), "answers[0].extra.mentions[0]",
     "sentence"),
    (lambda d, m: m.update(type="LOC"), "answers[0].extra.mentions[0].type", "PER"),
    (lambda d, m: m.update(entity=""), "answers[0].extra.mentions[0].entity", "label"),
    (lambda d, m: m.update(canonical="yes"), "answers[0].extra.mentions[0].canonical", "true"),
    (lambda d, m: m.update(link="http://x"), "answers[0].extra.mentions[0].link",
     "Wikipedia:"),
])
def test_entity_answer_errors_name_the_field(entity_hit, change, field, words) -> None:
    doc = doc_of(entity_hit)
    m = mention(doc, "Ada Byron")
    if "sentence" in words:
        m = mention(doc, "Ada Byron", 0)
        m["end"] = span(doc, "Ada Byron", 1)[1]   # crosses into the next sentence
    else:
        change(doc, m)
    with pytest.raises(IntakeError) as err:
        submit(entity_hit, {"mentions": [m]})
    assert err.value.field == field
    assert words in err.value.message


def test_entity_clusters_are_consistent(entity_hit) -> None:
    doc = doc_of(entity_hit)
    cases = [
        ([mention(doc, "Ada Byron"), mention(doc, "Ada Byron", 1, type_="ORG",
                                             canonical=False)], "mixes types"),
        ([mention(doc, "Ada Byron"), mention(doc, "Ada Byron", 1)], "exactly one canonical"),
        ([mention(doc, "Ada Byron", canonical=False)], "exactly one canonical"),
        ([mention(doc, "Ada Byron"), mention(doc, "Ada Byron")], "marked twice"),
        ([mention(doc, "Ada Byron", link="Wikipedia:A"),
          mention(doc, "Ada Byron", 1, canonical=False, link="Wikipedia:B")], "two different"),
    ]
    for mentions, words in cases:
        with pytest.raises(IntakeError) as err:
            submit(entity_hit, {"mentions": mentions})
        assert words in err.value.message
    with pytest.raises(IntakeError) as err:
        submit(entity_hit, {"mentions": []}, choices=("per:spouse",))
    assert err.value.field == "answers[0].choices"
    with pytest.raises(IntakeError):
        submit(entity_hit, {})


def judged(hit, override: dict | None = None) -> dict:
    rels = []
    for p in document_pairs(doc_of(hit)):
        rels.append({"subject": list(p.key[0]), "object": list(p.key[1]),
                     "choices": (override or {}).get(p.key, ["no_relation"])})
    return {"relations": rels}


def test_exhaustive_answer_is_stored(exhaustive_hit) -> None:
    doc = doc_of(exhaustive_hit)
    key = (span(doc, "Ada Byron"), span(doc, "London"))
    extra = judged(exhaustive_hit, {key: ["per:place_of_birth", "per:place_of_residence"]})
    assert len(extra["relations"]) == 6
    submit(exhaustive_hit, extra)
    assert Response.objects.get().extra == extra


def test_exhaustive_answer_errors(exhaustive_hit) -> None:
    doc = doc_of(exhaustive_hit)
    full = judged(exhaustive_hit)
    missing = {"relations": full["relations"][1:]}
    swapped = judged(exhaustive_hit)
    first = swapped["relations"][0]
    first["subject"], first["object"] = first["object"], first["subject"]
    twice = {"relations": full["relations"] + full["relations"][:1]}
    bad_choice = judged(exhaustive_hit, {(span(doc, "Ada Byron"), span(doc, "London")):
                                         ["per:spouse"]})
    mixed = judged(exhaustive_hit, {(span(doc, "Ada Byron"), span(doc, "London")):
                                    ["no_relation", "per:place_of_birth"]})
    for extra, field, words in [
        (missing, "answers[0].extra.relations", "no judgement"),
        (swapped, "answers[0].extra.relations[0]", "not a candidate pair"),
        (twice, "answers[0].extra.relations[6]", "judged twice"),
        (bad_choice, "answers[0].extra.relations[0].choices", "not an option"),
        (mixed, "answers[0].extra.relations[0].choices", "cannot be combined"),
        ({"relations": [{"subject": [5, 2], "object": [0, 1], "choices": ["x"]}]},
         "answers[0].extra.relations[0].subject", "begin < end"),
    ]:
        with pytest.raises(IntakeError) as err:
            submit(exhaustive_hit, extra)
        assert (err.value.field, words in err.value.message) == (field, True), err.value.message
    assert not Response.objects.exists()
