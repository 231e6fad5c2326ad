"""KB files as other people's tools write them: layouts the format allows, and inputs
that must be refused with an error naming the line, never an internal failure."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile

from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus
from submissions.kbformat import SyntaxProblem, parse_confidence
from submissions.models import Submission, SubmissionEvent
from submissions.processing import run_ingestion

from .kb import DOCS, ingest, mention, prov, sentence, to_bytes, valid_lines
from .test_drop_invalid import facts

VALID_FACTS = 8  # instances of the valid file (tests/submissions/kb.py)


@pytest.mark.django_db
def test_a_tab_ending_every_line_is_no_extra_column(stored: Callable[..., Submission]) -> None:
    plain = ingest(stored, to_bytes(valid_lines()))
    # Writers that emit "col<TAB>" per column, and an empty confidence column.
    tabbed = ingest(stored, ("\n".join(line + "\t" for line in valid_lines()) + "\n"
                             ).encode(), name="tabbed")
    assert tabbed.state == "ingested", tabbed.report
    assert facts(tabbed) == facts(plain) and tabbed.n_relations == VALID_FACTS
    # Trailing tabs do not hide a missing column: a mention still needs its span.
    bare = ingest(stored, to_bytes([*valid_lines(), ':E1\tmention\t"Ada Byron"\t\t']),
                  name="bare")
    assert [(p["line"], p["code"]) for p in bare.report if p["severity"] == "error"] == [
        (len(valid_lines()) + 1, "MENTION_WITHOUT_PROVENANCE")]
    # An empty link (a NIL entity), with or without its tab, is no link, as before.
    nil = ingest(stored, to_bytes([*valid_lines(), ":E2\tlink\t", ":E4\tlink\t\t"]),
                 name="nil")
    assert nil.state == "ingested", nil.report


def long_node_lines(node: str) -> list[str]:
    return [*valid_lines(), f"{node}\ttype\tPER", mention(node, "D2", "Tom King", 1),
            f"{node}\tper:siblings\t:E1\t{sentence('D2', 2)}"]


@pytest.mark.django_db
def test_an_overlong_node_is_a_line_error_not_an_internal_failure(
        stored: Callable[..., Submission]) -> None:
    n = len(valid_lines())
    node = ":" + "x" * 200  # 201 characters: one more than a node column holds
    sub = ingest(stored, to_bytes(long_node_lines(node)))
    assert sub.state == "rejected", (sub.state, sub.error[-500:])
    errors = [(p["line"], p["code"]) for p in sub.report if p["severity"] == "error"]
    assert errors == [(n + 1, "MALFORMED_LINE"), (n + 2, "MALFORMED_LINE"),
                      (n + 3, "MALFORMED_LINE")]
    assert "201 characters long; nodes are at most 200" in sub.report[1]["message"]
    # With drop-invalid the node's lines go and the rest is kept.
    kept = ingest(stored, to_bytes(long_node_lines(node)), drop_invalid=True, name="kept")
    assert kept.state == "ingested" and kept.n_relations == VALID_FACTS
    assert [line for line, _, _ in kept.dropped] == [n + 1, n + 2, n + 3]
    # The longest node that fits is stored whole.
    fits = ingest(stored, to_bytes(long_node_lines(node[:200])), name="fits")
    assert fits.state == "ingested" and fits.n_entities == kept.n_entities + 1
    assert fits.entities.filter(node=node[:200]).exists()


ACCENTED = "José Martí was born in Havana. He wrote in Bogotá."


@pytest.fixture
def accented(user: User, tmp_path: Path) -> Callable[[list[str]], Submission]:
    """Ingest lines on a one-document corpus stored composed (NFC), as most are."""
    path = tmp_path / "accents.jsonl"
    path.write_text(json.dumps({"id": "A1", "title": "A1", "text": ACCENTED}) + "\n",
                    encoding="utf-8")
    load_corpus("accents", path, workers=1)
    corpus = Corpus.objects.get(tag="accents")

    def make(lines: list[str]) -> Submission:
        sub = Submission(owner=user, corpus=corpus, name="accents", file_size=0)
        sub.file.save("kb.tsv", ContentFile(to_bytes(lines)), save=False)
        sub.save()
        SubmissionEvent.objects.create(submission=sub, to_state="uploaded")
        run_ingestion(sub.pk)
        sub.refresh_from_db()
        return sub

    return make


def quoted_span(needle: str, form: str) -> str:
    """`"text"<TAB>A1:b-e` of `needle` in ACCENTED, the text in normal form `form`."""
    begin = ACCENTED.index(needle)
    return f'"{unicodedata.normalize(form, needle)}"\tA1:{begin}-{begin + len(needle) - 1}'


@pytest.mark.django_db
def test_decomposed_text_matches_the_composed_document(
        accented: Callable[[list[str]], Submission]) -> None:
    def lines(form: str) -> list[str]:
        return ["run", ":E1\ttype\tPER", f":E1\tmention\t{quoted_span('José Martí', form)}",
                ":E2\ttype\tGPE", f":E2\tmention\t{quoted_span('Havana', form)}",
                ":E1\tper:place_of_birth\t:E2\tA1:0-29"]

    assert unicodedata.normalize("NFD", "José Martí") != "José Martí"
    sub = accented(lines("NFD"))
    assert sub.state == "ingested", sub.report
    assert sub.n_relations == 1 and sub.n_mentions == 2
    # A different text is still refused, with both texts named.
    wrong = lines("NFC")
    wrong[2] = wrong[2].replace("Martí", "Marti")
    sub = accented(wrong)
    assert sub.state == "rejected"
    assert sub.report[0]["code"] == "MENTION_TEXT_MISMATCH" and sub.report[0]["line"] == 3
    assert "'José Martí', not 'José Marti'" in sub.report[0]["message"]


@pytest.mark.django_db
def test_a_byte_order_mark_is_no_part_of_line_one(stored: Callable[..., Submission]) -> None:
    bom = "\ufeff".encode()
    with_run_id = ingest(stored, bom + to_bytes(valid_lines()))
    assert with_run_id.state == "ingested" and with_run_id.run_id == "test_run_1"
    # Without a run id, the marked first line was taken for one and the entity's type
    # line lost (ENTITY_WITHOUT_TYPE on line 2); it is a KB line missing its run id.
    without = ingest(stored, bom + to_bytes(valid_lines()[1:]), name="without")
    assert [(p["line"], p["code"]) for p in without.report if p["severity"] == "error"] == [
        (1, "MISSING_RUN_ID")]
    assert "':E1\\ttype\\tPER'" in without.report[0]["message"]


@pytest.mark.django_db
def test_a_predicate_or_type_in_the_wrong_case_is_named_with_the_right_one(
        stored: Callable[..., Submission]) -> None:
    n = len(valid_lines())
    sub = ingest(stored, to_bytes([
        *valid_lines(), f":E1\tPER:Siblings\t:E4\t{sentence('D2', 2)}", ":E5\ttype\tper",
        f":E1\tper:favourite\t:E4\t{sentence('D2', 2)}"]))
    messages = {p["line"]: p["message"] for p in sub.report if p["severity"] == "error"}
    assert messages == {
        n + 1: "unknown predicate 'PER:Siblings'; predicates are lower case: did you mean "
               "per:siblings?",
        n + 2: "entity type 'per' is not one of PER, ORG, GPE, DATE, TITLE (types are upper "
               "case: did you mean PER?)",
        n + 3: "unknown predicate 'per:favourite'"}


@pytest.mark.django_db
def test_a_provenance_of_many_spans_keeps_its_message_short(
        stored: Callable[..., Submission]) -> None:
    """Every span was listed in the message, so a line of thousands of spans stored (and
    the API served) a message of its size for each such line."""
    b, e = (int(x) for x in sentence("D1", 1).split(":")[1].split("-"))
    spans = ",".join(f"D1:{i}-{i}" for i in range(b + 10, e))  # one character each: no mention fits
    sub = ingest(stored, to_bytes([*valid_lines(), f":E1\tper:siblings\t:E4\t{spans}"]))
    [problem] = [p for p in sub.report if p["severity"] == "error"]
    assert problem["code"] == "SUBJECT_NOT_IN_PROVENANCE"
    n = e - b - 10
    assert problem["message"] == (f":E1 has no mention inside the provenance D1:{b + 10}-"
                                  f"{b + 10}, D1:{b + 11}-{b + 11}, D1:{b + 12}-{b + 12} and "
                                  f"{n - 3} more spans")


@pytest.mark.django_db
def test_a_mention_must_lie_inside_one_provenance_span(
        stored: Callable[..., Submission]) -> None:
    """Across two touching spans is not inside the provenance; inside either one is,
    whatever the order of the spans."""
    b, _ = (int(x) for x in sentence("D2", 2).split(":")[1].split("-"))
    tom = DOCS["D2"].index("Tom King", b)
    ada = DOCS["D2"].index("Ada Byron", b)
    split_tom = f"D2:{tom}-{tom + 3},D2:{tom + 4}-{ada + 8}"  # cuts "Tom King" in two
    sub = ingest(stored, to_bytes([*valid_lines(),
                                   f":E4\tper:spouse\t:E1\t{split_tom}"]), name="split")
    assert [(p["code"]) for p in sub.report if p["severity"] == "error"] == [
        "SUBJECT_NOT_IN_PROVENANCE"]
    whole = f"D2:{ada}-{ada + 8},D2:{b}-{b + 3},D2:{tom}-{tom + 7}"
    sub = ingest(stored, to_bytes([*valid_lines()[:29], f":E4\tper:siblings\t:E1\t{whole}"]),
                 name="whole")
    assert sub.state == "ingested", sub.report
    assert sub.instances.filter(line=30, predicate="per:siblings").exists()


def test_a_decimal_comma_in_a_confidence_is_named() -> None:
    with pytest.raises(SyntaxProblem, match=r"^confidence '0,75' \(column 5\) has a decimal "
                                            r"comma; write 0\.75$"):
        parse_confidence("0,75")
    for value in ("1,2,3", "high", ","):
        with pytest.raises(SyntaxProblem, match=r"is not a number$"):
            parse_confidence(value)


@pytest.mark.django_db
def test_a_filler_written_after_its_context_is_named(
        stored: Callable[..., Submission]) -> None:
    engineer = prov("D1", "engineer")
    sub = ingest(stored, to_bytes([
        *valid_lines()[:24], f':E1\tper:title\t"engineer"\t{sentence("D1", 1)},{engineer}']))
    [problem] = [p for p in sub.report if p["severity"] == "error"]
    assert (problem["line"], problem["code"]) == (25, "MENTION_TEXT_MISMATCH")
    assert problem["message"].endswith(
        f"; the filler's span must come first in the provenance, and {engineer} holds it")


@pytest.mark.django_db
def test_a_document_id_in_the_wrong_case_is_named_with_the_right_one(
        stored: Callable[..., Submission]) -> None:
    sub = ingest(stored, to_bytes([*valid_lines(), mention(":E1", "D1", "Ada Byron", 1)
                                   .replace("\tD1:", "\td1:"), ':E1\tmention\t"x"\tD9:0-0']))
    messages = [p["message"] for p in sub.report if p["code"] == "UNKNOWN_DOCUMENT"]
    assert messages == ["document 'd1' is not in corpus tiny; document ids are "
                        "case-sensitive: did you mean D1?",
                        "document 'D9' is not in corpus tiny"]


def event_lines() -> list[str]:
    """What a TAC 2017 Cold Start++ system (or an AIDA one, with ontology URIs) writes
    beside its entities: event nodes with realis mentions, arguments in both directions."""
    return [
        ":Event_000001\ttype\tCONFLICT.ATTACK",
        mention(":Event_000001", "D1", "born", 0, "mention.actual"),
        mention(":Event_000001", "D1", "born", 0, "canonical_mention.actual"),
        f":Event_000001\tconflict.attack:attacker.actual\t:E1\t{sentence('D1', 0)}\t0.8",
        f":E1\tconflict.attack_attacker.actual\t:Event_000001\t{sentence('D1', 0)}\t0.8",
        ":Event_000002\ttype\thttps://tac.nist.gov/tracks/SM-KBP/2019/ontologies/"
        "LDCOntology#Life.Die.DeathCausedByViolentEvents",
        mention(":Event_000002", "D2", "founded", 0, "mention.generic"),
        ":Event_000002\thttps://tac.nist.gov/tracks/SM-KBP/2019/ontologies/LDCOntology#"
        f"Life.Die.DeathCausedByViolentEvents_Victim.actual\t:E1\t{sentence('D2', 1)}\t0.4",
    ]


@pytest.mark.django_db
def test_event_nodes_are_skipped_with_a_warning(stored: Callable[..., Submission]) -> None:
    """Event nodes (a dotted event type or an ontology URI) are not evaluated: their type
    lines warn once per node, and their mentions and arguments — whatever predicate
    names they use — are skipped like a FAC/LOC entity's lines; the entities and their
    relations are ingested as without them. An event node mistyped as a plain word is
    still an error, and so is an unknown predicate between entities."""
    plain = ingest(stored, to_bytes(valid_lines()), name="plain")
    sub = ingest(stored, to_bytes([*valid_lines(), *event_lines()]), name="events")
    assert sub.state == "ingested", [p for p in sub.report if p["severity"] == "error"]
    assert facts(sub) == facts(plain)
    n = len(valid_lines())
    warned = [(p["line"], p["code"]) for p in sub.report if p["code"] == "UNSUPPORTED_NODE_TYPE"]
    assert warned == [(n + 1, "UNSUPPORTED_NODE_TYPE"), (n + 6, "UNSUPPORTED_NODE_TYPE")]
    assert "CONFLICT.ATTACK" in sub.report[[p["line"] for p in sub.report].index(n + 1)][
        "message"]
    assert sub.stats["skipped"]["lines of skipped nodes (FAC/LOC entities, events)"] == 6
    word = ingest(stored, to_bytes([*valid_lines(), ":Event_9\ttype\tATTACK"]), name="word")
    assert [p["code"] for p in word.report if p["severity"] == "error"] == [
        "UNKNOWN_ENTITY_TYPE"]
    unknown = ingest(stored, to_bytes([*valid_lines(),
                                       f":E1\tper:loves\t:E2\t{sentence('D1', 0)}"]),
                     name="unknown")
    assert [p["code"] for p in unknown.report if p["severity"] == "error"] == [
        "UNKNOWN_PREDICATE"]
    # TAC 2017 sentiment between entities is skipped with its own warning (test_sentiment).
    sentiment = ingest(stored, to_bytes([*valid_lines(),
                                         f":E1\tper:likes\t:E2\t{sentence('D1', 0)}"]),
                       name="sentiment")
    assert sentiment.state == "ingested" and "SENTIMENT_NOT_EVALUATED" in {
        p["code"] for p in sentiment.report}
