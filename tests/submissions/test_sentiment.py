"""TAC 2017 Cold Start KBs hold sentiment assertions between entities (the BeSt track's
`per:likes`, `gpe:is_disliked_by`, …). They are not evaluated: every such line is
skipped with the warning SENTIMENT_NOT_EVALUATED, whatever its arguments, and never
becomes a relation. They were refused as UNKNOWN_PREDICATE, which refused a whole real
2017 KB unless drop-invalid was ticked."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from kbpo.core import schema
from kbpo.core.models import Corpus
from submissions.kbformat import CODES
from submissions.models import RelationInstance, Submission

from .kb import api_ingested, ingest, mention, sentence, to_bytes, valid_lines
from .test_drop_invalid import facts

# The holder of each family, in the valid KB: E1 and E4 are PER, E3 ORG, E2 GPE.
HOLDER = {"per": ":E1", "org": ":E3", "gpe": ":E2"}
SENTIMENTS = [f"{family}:{feeling}" for family in ("per", "org", "gpe")
              for feeling in ("likes", "dislikes", "is_liked_by", "is_disliked_by")]
SKIPPED = "sentiment assertions"


def warned(sub: Submission) -> list[int]:
    return [p["line"] for p in sub.report if p["code"] == "SENTIMENT_NOT_EVALUATED"]


def sentiment_lines() -> list[str]:
    """Every sentiment predicate, forward and inverse, between entities of its family's
    type and another, as a TAC 2017 KB writes them."""
    return [f"{HOLDER[pred[:3]]}\t{pred}\t{':E4' if pred[:3] != 'per' else ':E3'}\t"
            f"{sentence('D1', 1)}\t0.7" for pred in SENTIMENTS]


def test_sentiment_predicates_are_known_but_never_relations() -> None:
    assert len(schema.SENTIMENT) == 12 and set(SENTIMENTS) == schema.SENTIMENT
    for pred in SENTIMENTS:
        assert schema.is_sentiment(pred) and not schema.is_known(pred)
        assert not schema.is_unsupported(pred)
        assert pred not in schema.CANONICAL_PREDICATES
        assert all(pred not in schema.predicates_for(s, o) for s in schema.ENTITY_TYPES
                   for o in schema.ENTITY_TYPES)
    assert not schema.is_sentiment("PER:likes") and not schema.is_sentiment("per:loves")
    assert CODES["SENTIMENT_NOT_EVALUATED"][0] == "warning"


@pytest.mark.django_db
def test_every_sentiment_line_is_skipped_with_a_warning(
        stored: Callable[..., Submission]) -> None:
    plain = ingest(stored, to_bytes(valid_lines()), name="plain")
    n = len(valid_lines())
    sub = ingest(stored, to_bytes([*valid_lines(), *sentiment_lines()]))
    assert sub.state == "ingested", [p for p in sub.report if p["severity"] == "error"]
    assert facts(sub) == facts(plain) and sub.n_relations == plain.n_relations
    assert warned(sub) == list(range(n + 1, n + 13))
    first = next(p for p in sub.report if p["code"] == "SENTIMENT_NOT_EVALUATED")
    assert first["severity"] == "warning"
    assert "per:likes is a sentiment assertion" in first["message"]
    assert "not evaluated" in first["message"] and "skipped" in first["hint"]
    assert sub.stats["skipped"][SKIPPED] == 12
    assert sub.report_counts["SENTIMENT_NOT_EVALUATED"] == 12
    stored_predicates = set(RelationInstance.objects.filter(submission=sub)
                            .values_list("predicate", flat=True))
    assert not stored_predicates & schema.SENTIMENT


@pytest.mark.django_db
def test_sentiment_lines_with_any_arguments_never_refuse_a_file(
        stored: Callable[..., Submission]) -> None:
    """A FAC holder, an event, an undeclared node, types the family does not name, a
    string object, a missing confidence, a provenance in no sentence: all skipped."""
    n = len(valid_lines())
    odd = [
        ":F1\ttype\tFAC", mention(":F1", "D1", "London"),
        ":Ev1\ttype\tCONFLICT.ATTACK", mention(":Ev1", "D1", "born", 0, "mention.actual"),
        f":F1\tper:likes\t:E1\t{sentence('D1', 0)}\t0.5",  # a FAC holder
        f":E1\tper:dislikes\t:F1\t{sentence('D1', 0)}\t0.5",  # a FAC target
        f":Ev1\tgpe:is_liked_by\t:E1\t{sentence('D1', 0)}\t0.5",  # an event
        f":E3\tper:likes\t:E2\t{sentence('D1', 1)}\t0.5",  # ORG holder of per:likes
        f":E1\torg:is_disliked_by\t:E404\t{sentence('D1', 1)}\t0.5",  # undeclared
        f':E1\tper:likes\t"Lisbon"\t{sentence("D1", 1)}',  # a string, no confidence
        ":E1\tper:dislikes\t:E4\tD9:0-5\t2.0",  # unknown document, bad confidence
    ]
    sub = ingest(stored, to_bytes([*valid_lines(), *odd]))
    assert sub.state == "ingested", [p for p in sub.report if p["severity"] == "error"]
    assert warned(sub) == list(range(n + 5, n + 12))
    assert sub.stats["skipped"][SKIPPED] == 7
    assert sub.n_relations == 8


@pytest.mark.django_db
def test_a_file_of_only_sentiment_lines_has_no_relations(
        stored: Callable[..., Submission]) -> None:
    entities = [line for line in valid_lines() if "\ttype\t" in line or "mention\t" in line]
    sub = ingest(stored, to_bytes([valid_lines()[0], *entities, *sentiment_lines()]))
    assert sub.state == "rejected"
    assert [p["code"] for p in sub.report if p["severity"] == "error"] == ["NO_RELATIONS"]
    assert len(warned(sub)) == 12


@pytest.mark.django_db
def test_upper_case_sentiment_predicates_get_the_lower_case_hint(
        stored: Callable[..., Submission]) -> None:
    sub = ingest(stored, to_bytes([*valid_lines(),
                                   f":E1\tPER:likes\t:E4\t{sentence('D1', 2)}\t0.7"]))
    [error] = [p for p in sub.report if p["severity"] == "error"]
    assert error["code"] == "UNKNOWN_PREDICATE" and error["line"] == len(valid_lines()) + 1
    assert "did you mean per:likes?" in error["message"]


@pytest.mark.django_db
def test_drop_invalid_skips_a_dropped_entitys_sentiment_lines(
        stored: Callable[..., Submission]) -> None:
    """A sentiment line naming an entity that drop-invalid drops is still only skipped
    with its warning: it is no relation that was lost with the entity."""
    n = len(valid_lines())
    lines = [*valid_lines(), ":E9\ttype\tANIMAL", mention(":E9", "D1", "Tom King"),
             f":E9\tper:likes\t:E1\t{sentence('D1', 2)}\t0.7"]
    sub = ingest(stored, to_bytes(lines), drop_invalid=True)
    assert sub.state == "ingested", sub.report
    assert [line for line, _, _ in sub.dropped] == [n + 1, n + 2]
    assert warned(sub) == [n + 3]


@pytest.mark.django_db
def test_the_api_accepts_a_2017_kb_and_reports_its_sentiment_lines(
        user: User, corpus: Corpus, django_capture_on_commit_callbacks) -> None:
    data = to_bytes([*valid_lines(), *sentiment_lines()[:2]], gz=True)
    body = api_ingested(user, corpus, data, "s", django_capture_on_commit_callbacks)
    assert body["state"] == "ingested"
    rows = [r for r in body["report"] if r["code"] == "SENTIMENT_NOT_EVALUATED"]
    n = len(valid_lines())
    assert [r["line"] for r in rows] == [n + 1, n + 2]
    assert rows[0]["hint"] == CODES["SENTIMENT_NOT_EVALUATED"][1]
    assert body["report_counts"]["SENTIMENT_NOT_EVALUATED"] == 2


@pytest.mark.django_db
def test_the_format_page_lists_the_sentiment_predicates(client) -> None:
    html = client.get(reverse("submission-format")).content.decode()
    assert all(f"<code>{pred}</code>" in html for pred in SENTIMENTS)
    assert 'id="SENTIMENT_NOT_EVALUATED"' in html
