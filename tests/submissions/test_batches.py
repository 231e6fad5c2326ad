"""Ingestion reads the file in batches of lines, keeping entity state in the database:
the outcome (rows, report and its order under the cap, stats, dropped lines) must not
depend on where the batch boundaries fall."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from submissions import ingest_lines, ingest_nodes, staging
from submissions.models import RelationInstance, Submission, SubmissionEntity, SubmissionMention
from submissions.processing import run_ingestion

from .kb import mention, sentence, span, to_bytes, valid_lines


def reordered() -> list[str]:
    """The valid file with its relations first (entities used before their lines), a
    type line after the entity's mentions, a repeated type line far from the first,
    links, and a FAC entity in a relation."""
    lines = valid_lines()
    head, entities, relations = lines[0], lines[1:21], lines[21:]
    e1 = [entities.pop(0)]  # :E1's type line goes last
    return [head, *relations, ":E5\ttype\tFAC", mention(":E5", "D1", "London"),
            f":E1\tper:place_of_birth\t:E5\t{sentence('D1', 0)}", *entities,
            ":E3\tlink\tWikipedia:Acme", ":E3\tlink\tWikipedia:Other", *e1,
            ":E2\ttype\tGPE"]


def with_errors() -> list[str]:
    """Errors of every pass across the file: entity types given twice differently (far
    apart), an entity without type, an unknown type, FAC after PER, unknown nodes,
    malformed lines, a bad mention."""
    lines = reordered()
    return [*lines[:5], ":E1\ttype\tORG", "E9\ttype\tPER", mention(":E6", "D1", "engineer"),
            ":E7\ttype\tANIMAL", *lines[5:20], ":E4\ttype\tFAC", ":E4\ttype\tLOC",
            f":E1\tper:siblings\t:E9\t{sentence('D2', 2)}", ':E1\tmention\t"Ada"\tD9:0-2',
            *lines[20:], ":E1\ttype\tORG", ":E8\tlink\t", ":E8\ttype\tPER"]


def snapshot(stored: Callable[..., Submission], data: bytes, batch: int,
             monkeypatch: pytest.MonkeyPatch, **fields: object) -> dict[str, object]:
    monkeypatch.setattr(ingest_lines, "BATCH_LINES", batch)
    sub = stored(data, **fields)
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    entities = list(SubmissionEntity.objects.filter(submission=sub).order_by("id").values_list(
        "node", "type", "link", "canonical_document_id", "canonical_begin", "canonical_end"))
    mentions = sorted(SubmissionMention.objects.filter(submission=sub).values_list(
        "entity__node", "document_id", "begin", "end", "type", "is_canonical"),
        key=repr)
    rels = sorted((r.pair.pair_key, r.predicate, r.subject_entity.node,
                   r.object_entity.node if r.object_entity else None, r.confidence, r.line)
                  for r in RelationInstance.objects.filter(submission=sub).select_related(
                      "pair__document", "subject_entity", "object_entity"))
    return {"state": sub.state, "report": sub.report, "counts": sub.report_counts,
            "stats": sub.stats, "dropped": sub.dropped, "entities": entities,
            "mentions": mentions, "relations": rels,
            "n": (sub.n_entities, sub.n_mentions, sub.n_relations, sub.n_warnings,
                  sub.n_errors)}


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["accepted", "rejected", "dropped"])
def test_outcome_does_not_depend_on_batch_boundaries(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch, settings,
        case: str) -> None:
    settings.KBPO_SUBMISSION_REPORT_MAX = 6  # which problems are kept depends on order
    lines = reordered() if case == "accepted" else with_errors()
    data = to_bytes(lines)
    fields = {"drop_invalid": True} if case == "dropped" else {}
    whole = snapshot(stored, data, 100_000, monkeypatch, **fields)
    expected_state = "rejected" if case == "rejected" else "ingested"
    assert whole["state"] == expected_state, whole["report"]
    if case == "accepted":
        assert whole["n"] == (4, 16, 8, 3, 0), whole["report"]
        ada = next(e for e in whole["entities"] if e[0] == ":E1")
        assert ada[2] == "Wikipedia:Ada_Lovelace"
        acme = next(e for e in whole["entities"] if e[0] == ":E3")
        assert acme[2] == "Wikipedia:Acme"  # the first link line wins
    elif case == "rejected":
        assert whole["counts"]["INCONSISTENT_ENTITY_TYPE"] >= 1
        assert len(whole["report"]) == 6 < whole["n"][4]  # the cap bites
    else:
        codes = [code for _, code, _ in whole["dropped"]]
        assert "INCONSISTENT_ENTITY_TYPE" in codes and whole["n"][2] > 0
        assert len(codes) > 6  # the report shows the first 6 dropped lines only
    for batch in (1, 2, 3, 7, 16):
        assert snapshot(stored, data, batch, monkeypatch, **fields) == whole, batch


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["accepted", "rejected"])
def test_known_node_filter_never_changes_the_outcome(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch, settings,
        case: str) -> None:
    """Pass 1 looks up only the nodes whose bit is set (`NodeStore.seen`): with one bit
    for every node (all collide: always looked up) or many, the outcome is the same."""
    settings.KBPO_SUBMISSION_REPORT_MAX = 6
    data = to_bytes(reordered() if case == "accepted" else with_errors())
    whole = snapshot(stored, data, 100_000, monkeypatch)
    for bits in (8, 1 << 24):
        monkeypatch.setattr(ingest_nodes, "SEEN_BITS", bits)
        monkeypatch.setattr(ingest_nodes, "SEEN_MASK", bits - 1)
        for batch in (1, 3):
            assert snapshot(stored, data, batch, monkeypatch) == whole, (bits, batch)


@pytest.mark.django_db
def test_pass2_skips_only_entity_lines(stored: Callable[..., Submission],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass 2 reads only the relation lines pass 1 spooled; a kind column padded with
    non-ASCII whitespace (str.strip removes it, bytes.strip does not) still counts as
    an entity line, and entity lines that are not UTF-8 are reported once (pass 1)."""
    lines = reordered()
    plain = snapshot(stored, to_bytes(lines), 100_000, monkeypatch)
    assert plain["state"] == "ingested"
    padded = [line.replace("\ttype\t", "\t\u00a0type\u2003\t", 1) if line.startswith(":E1\t")
              else line for line in lines]
    assert padded != lines
    odd = snapshot(stored, to_bytes(padded), 3, monkeypatch)
    assert odd == plain
    bad = to_bytes(lines) + b":E9\ttype\t\xffPER\n:E9\tmention\t\"x\x00\"\tD1:0-0\n"
    got = snapshot(stored, bad, 2, monkeypatch)
    assert got["state"] == "rejected"
    assert got["counts"] == {**plain["counts"], "NOT_UTF8": 1, "MALFORMED_LINE": 1}


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["accepted", "rejected"])
def test_repeated_spans_merged_per_batch_keep_their_lines(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch,
        case: str) -> None:
    """Pass 1 stages a span its entity repeats within a batch once: the canonical span
    is still the first canonical_mention's (here not the span's first line), and a
    type conflict on the span is still reported at the span's last line."""
    lines = valid_lines()
    e1 = [mention(":E1", "D1", "Ada Byron", 0), mention(":E1", "D1", "Ada Byron", 1,
                                                       "canonical_mention")]
    if case == "rejected":  # an ORG on the same span, between E1's two lines for it
        e1 += [":E9\ttype\tORG", mention(":E9", "D1", "Ada Byron", 0)]
    e1 += [mention(":E1", "D1", "Ada Byron", 0, "canonical_mention"),
           mention(":E1", "D1", "Ada Byron", 0)]
    lines = [*lines[:2], *e1, *lines[4:]]
    whole = snapshot(stored, to_bytes(lines), 100_000, monkeypatch)
    if case == "accepted":
        assert whole["state"] == "ingested", whole["report"]
        ada = next(e for e in whole["entities"] if e[0] == ":E1")
        assert (ada[4], ada[5]) == span("D1", "Ada Byron", 1)
    else:
        last = 2 + len(e1)  # the span's last line: E1's plain mention
        assert [(p["line"], p["code"]) for p in whole["report"]
                if p["code"] == "INCONSISTENT_ENTITY_TYPE"] == [(last, "INCONSISTENT_ENTITY_TYPE")]
    assert snapshot(stored, to_bytes(lines), 1, monkeypatch) == whole  # nothing merged


@pytest.mark.django_db
def test_lookahead_thread_never_interrupts_a_copy(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass 2 looks the next batch up in a helper thread on the same connection while
    relation rows are copied: with a COPY for every staged row and two-line batches,
    the outcome is still the one-batch outcome (no `COPY terminated by new PQexec`)."""
    data = to_bytes(reordered())
    whole = snapshot(stored, data, 100_000, monkeypatch)
    monkeypatch.setattr(staging, "STAGE_BATCH", 1)
    for _ in range(3):
        assert snapshot(stored, data, 2, monkeypatch) == whole
