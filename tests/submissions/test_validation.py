"""One hand-written malformed file per validation rule: exact code and line number."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import pytest

from submissions.models import RelationInstance, Submission, SubmissionMention

from .kb import ingest, mention, prov, sentence, to_bytes, valid_lines

N = len(valid_lines())  # a line appended to the valid file gets number N + 1
assert N == 31


def plus(*extra: str) -> bytes:
    return to_bytes(valid_lines() + list(extra))


def replace(index: int, line: str) -> bytes:
    lines = valid_lines()
    lines[index] = line
    return to_bytes(lines)


ERROR_CASES: list[tuple[str, Callable[[], bytes], int]] = [
    ("EMPTY_FILE", lambda: b"", 1),
    ("MISSING_RUN_ID", lambda: to_bytes(valid_lines()[1:]), 1),
    ("MISSING_RUN_ID", lambda: b"\n" + to_bytes(valid_lines()[1:]), 1),
    ("NOT_UTF8", lambda: plus() + b':E1\tmention\t"caf\xe9"\tD1:0-3\n', N + 1),
    ("MALFORMED_LINE", lambda: plus(":E1\ttype"), N + 1),
    ("MALFORMED_LINE", lambda: plus("E1\ttype\tPER"), N + 1),
    ("MALFORMED_LINE", lambda: plus(":E1\ttype\tPER\textra"), N + 1),
    ("MALFORMED_LINE", lambda: plus(f":E1\tper:spouse\tE4\t{sentence('D2', 2)}\t0.5"), N + 1),
    ("MALFORMED_LINE", lambda: plus(f":E1\tmention\tAda Byron\t{prov('D1', 'Ada Byron')}"),
     N + 1),
    ("MALFORMED_LINE", lambda: plus(f":E1\tper:spouse\t:E4\t{sentence('D2', 2)}\t0.5\tx"),
     N + 1),
    ("BAD_PROVENANCE", lambda: plus(':E1\tmention\t"Ada Byron"\tD1:8-0'), N + 1),
    ("BAD_PROVENANCE", lambda: plus(':E1\tmention\t"Ada Byron"\tD1-0-8'), N + 1),
    ("BAD_PROVENANCE", lambda: plus(':E1\tmention\t"Ada Byron"\tD1:0-8,D1:30-38'), N + 1),
    ("BAD_CONFIDENCE", lambda: plus(f":E1\tper:siblings\t:E4\t{sentence('D2', 2)}\t1.5"),
     N + 1),
    ("BAD_CONFIDENCE", lambda: plus(f":E1\tper:siblings\t:E4\t{sentence('D2', 2)}\thigh"),
     N + 1),
    ("MENTION_WITHOUT_PROVENANCE", lambda: plus(':E1\tmention\t"Ada Byron"'), N + 1),
    ("UNKNOWN_DOCUMENT", lambda: plus(':E1\tmention\t"Ada Byron"\tD9:0-8'), N + 1),
    ("OFFSETS_OUT_OF_RANGE", lambda: plus(':E1\tmention\t"Ada Byron"\tD1:1000-1008'), N + 1),
    ("MENTION_TEXT_MISMATCH",
     lambda: plus(f':E1\tmention\t"Ada Lovelace"\t{prov("D1", "Ada Byron")}'), N + 1),
    ("MENTION_TEXT_MISMATCH",
     lambda: plus(f':E1\tper:title\t"doctor"\t{prov("D1", "engineer")}\t0.5'), N + 1),
    # Case matters: "ada byron" is not the "Ada Byron" at those offsets (same_text).
    ("MENTION_TEXT_MISMATCH",
     lambda: plus(f':E1\tmention\t"ada byron"\t{prov("D1", "Ada Byron")}'), N + 1),
    ("UNKNOWN_ENTITY_TYPE", lambda: plus(":E5\ttype\tANIMAL"), N + 1),
    ("ENTITY_WITHOUT_TYPE", lambda: plus(mention(":E5", "D1", "engineer")), N + 1),
    ("INCONSISTENT_ENTITY_TYPE", lambda: plus(":E1\ttype\tORG"), N + 1),
    ("INCONSISTENT_ENTITY_TYPE",
     lambda: plus(":E5\ttype\tORG", mention(":E5", "D1", "Ada Byron")), N + 2),
    ("UNKNOWN_ENTITY", lambda: plus(f":E1\tper:siblings\t:E9\t{sentence('D2', 2)}"), N + 1),
    ("UNKNOWN_PREDICATE", lambda: plus(f":E1\tper:favourite\t:E4\t{sentence('D2', 2)}"),
     N + 1),
    ("ARGUMENT_TYPES_MISMATCH", lambda: plus(f":E1\tper:spouse\t:E3\t{sentence('D1', 1)}"),
     N + 1),
    ("ARGUMENT_TYPES_MISMATCH",
     lambda: plus(f':E1\tper:spouse\t"engineer"\t{prov("D1", "engineer")}'), N + 1),
    ("SELF_RELATION", lambda: plus(f":E1\tper:spouse\t:E1\t{sentence('D1', 1)}"), N + 1),
    ("SELF_RELATION",
     lambda: plus(":E5\ttype\tPER", mention(":E5", "D2", "Tom King", 1),
                  f":E4\tper:spouse\t:E5\t{sentence('D2', 2)}"), N + 3),
    ("CONFLICTING_RELATIONS",  # the reverse of line 26 (a parent cycle)
     lambda: plus(f":E1\tper:children\t:E4\t{sentence('D1', 2)}"), N + 1),
    ("CONFLICTING_RELATIONS",  # two exclusive family relations
     lambda: plus(f":E4\tper:spouse\t:E1\t{sentence('D2', 2)}"), N + 1),
    ("SUBJECT_NOT_IN_PROVENANCE",
     lambda: plus(f":E4\tper:place_of_birth\t:E2\t{sentence('D1', 0)}"), N + 1),
    ("SUBJECT_NOT_IN_PROVENANCE",  # filler: subject must be in the filler's sentence
     lambda: plus(f':E4\tper:title\t"engineer"\t{prov("D1", "engineer")}'), N + 1),
    ("OBJECT_NOT_IN_PROVENANCE",
     lambda: plus(f":E1\tper:place_of_residence\t:E2\t{sentence('D1', 2)}"), N + 1),
    ("PROVENANCE_CROSSES_SENTENCES",
     lambda: plus(":E1\tper:place_of_residence\t:E2\tD1:0-80"), N + 1),
    ("PROVENANCE_CROSSES_SENTENCES",
     lambda: plus(f":E1\tper:siblings\t:E4\t{sentence('D2', 2)},{sentence('D2', 0)}"), N + 1),
    ("PROVENANCE_CROSSES_SENTENCES",
     lambda: plus(f":E1\tper:siblings\t:E4\t{sentence('D2', 2)},{sentence('D1', 1)}"), N + 1),
    ("NO_RELATIONS", lambda: to_bytes(valid_lines()[:21]), 21),
]


def problems(sub: Submission) -> set[tuple[str, int]]:
    return {(p["code"], p["line"]) for p in sub.report}


@pytest.mark.django_db
@pytest.mark.parametrize(("code", "make", "line"), ERROR_CASES,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(ERROR_CASES)])
def test_each_error_rule_rejects_with_code_and_line(
        stored: Callable[..., Submission], code: str, make: Callable[[], bytes],
        line: int) -> None:
    sub = ingest(stored, make())
    assert sub.state == "rejected", sub.report
    assert (code, line) in problems(sub), sub.report
    errors = {c for c, _ in problems(sub) if c != "UNSUPPORTED_PREDICATE"}
    assert errors == {code}, "each malformed file should trip exactly its own rule"
    assert sub.n_errors >= 1 and sub.report_counts[code] >= 1
    hint = next(p["hint"] for p in sub.report if p["code"] == code)
    assert hint and hint[0].isupper()
    assert not RelationInstance.objects.filter(submission=sub).exists()
    assert not SubmissionMention.objects.filter(submission=sub).exists()


@pytest.mark.django_db
def test_line_too_long_and_file_too_large(stored: Callable[..., Submission], settings) -> None:
    settings.KBPO_SUBMISSION_MAX_LINE_BYTES = 300
    sub = ingest(stored, plus(":E1\tlink\t" + "x" * 1000))
    assert problems(sub) >= {("LINE_TOO_LONG", N + 1)} and sub.state == "rejected"
    settings.KBPO_SUBMISSION_MAX_BYTES = 500
    sub = ingest(stored, plus())
    assert sub.state == "rejected"
    [(code, line)] = problems(sub)
    assert code == "FILE_TOO_LARGE" and 1 < line < N


@pytest.mark.django_db
def test_corrupt_gzip_is_rejected(stored: Callable[..., Submission]) -> None:
    data = gzip.compress(plus())
    sub = ingest(stored, data[: len(data) // 2])
    assert sub.state == "rejected"
    assert {c for c, _ in problems(sub)} == {"GZIP_CORRUPT"}


WARNING_CASES: list[tuple[str, Callable[[], bytes], int]] = [
    ("UNSUPPORTED_PREDICATE", plus, N),
    ("DUPLICATE_TYPE_LINE", lambda: plus(":E1\ttype\tPER"), N + 1),
    ("UNSUPPORTED_ENTITY_TYPE",
     lambda: plus(":E5\ttype\tFAC", mention(":E5", "D1", "London"),
                  f":E1\tper:place_of_birth\t:E5\t{sentence('D1', 0)}"), N + 1),
    ("UNSUPPORTED_NODE_TYPE",
     lambda: plus(":Event_1\ttype\tCONFLICT.ATTACK",
                  mention(":Event_1", "D1", "born", 0, "mention.actual")), N + 1),
    # A second mention of :E1 inside line 23's provenance.
    ("AMBIGUOUS_MENTION", lambda: plus(mention(":E1", "D1", "Byron", 1)), 23),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("code", "make", "line"), WARNING_CASES,
                         ids=[c for c, _, _ in WARNING_CASES])
def test_warnings_are_kept_with_an_accepted_submission(
        stored: Callable[..., Submission], code: str, make: Callable[[], bytes],
        line: int) -> None:
    sub = ingest(stored, make())
    assert sub.state == "ingested", sub.report
    assert (code, line) in problems(sub)
    assert all(p["severity"] == "warning" for p in sub.report)
    assert sub.n_warnings == len(sub.report) and sub.n_relations == 8


@pytest.mark.django_db
def test_report_is_capped_but_counts_are_complete(stored: Callable[..., Submission],
                                                  settings) -> None:
    settings.KBPO_SUBMISSION_REPORT_MAX = 50
    garbage = [f":E1\tmention\t\"x\"\tD9:{i}-{i}" for i in range(400)]
    sub = ingest(stored, plus(*garbage))
    assert len(sub.report) == 50
    assert sub.report_counts["UNKNOWN_DOCUMENT"] == 400 and sub.n_errors == 400
