"""Partial acceptance (drop-invalid) and the resolution of ambiguous mentions."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from kbpo.core.gold import closest_pair
from kbpo.core.models import Corpus
from submissions.kbformat import Report
from submissions.models import RelationInstance, Submission
from submissions.processing import run_ingestion

from .kb import mention, prov, sentence, to_bytes, valid_lines

E4_LINES = {18, 19, 20, 21, 26, 29, 30}  # :E4's type, mentions and relations


def ingest(stored: Callable[..., Submission], lines: list[str], **fields: object
           ) -> Submission:
    sub = stored(to_bytes(lines), **fields)
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    return sub


def facts(sub: Submission) -> set[tuple]:
    """What the kept lines mean: pair spans, predicate, confidence."""
    return set(RelationInstance.objects.filter(submission=sub).values_list(
        "pair__document__doc_id", "pair__subject_begin", "pair__subject_end",
        "pair__object_begin", "pair__object_end", "predicate", "confidence"))


def broken() -> list[str]:
    lines = valid_lines()
    lines[17] = ":E4\ttype\tPERSON"                      # line 18: bad type
    lines[9] = ':E2\tmention\t"Londres"\t' + prov("D1", "London")  # line 10: bad text
    lines.append(f":E1\tper:spouse\t:E3\t{sentence('D1', 1)}")    # line 32: bad types
    return lines


@pytest.mark.django_db
def test_without_the_choice_one_bad_line_rejects_the_whole_file(
        stored: Callable[..., Submission]) -> None:
    sub = ingest(stored, broken())
    assert sub.state == "rejected" and sub.n_relations == 0 and sub.n_dropped == 0
    assert not RelationInstance.objects.exists()


@pytest.mark.django_db
def test_dropping_keeps_the_meaning_of_every_kept_line(
        stored: Callable[..., Submission]) -> None:
    sub = ingest(stored, broken(), drop_invalid=True)
    assert sub.state == "ingested", sub.report
    dropped = {line: code for line, code, _ in sub.dropped}
    # The bad type takes the entity's mentions and relations with it; the bad mention
    # line takes the relation that needed it (found in a second round).
    assert dropped == {18: "UNKNOWN_ENTITY_TYPE", 19: "DROPPED_WITH_ENTITY",
                       20: "DROPPED_WITH_ENTITY", 21: "DROPPED_WITH_ENTITY",
                       26: "DROPPED_WITH_ENTITY", 29: "DROPPED_WITH_ENTITY",
                       30: "DROPPED_WITH_ENTITY", 10: "MENTION_TEXT_MISMATCH",
                       22: "OBJECT_NOT_IN_PROVENANCE", 32: "ARGUMENT_TYPES_MISMATCH"}
    assert sub.n_dropped == 10
    assert {(p["line"], p["code"]) for p in sub.report if p["severity"] == "dropped"} == {
        (line, code) for line, code in dropped.items()}
    # The same facts as a clean file holding only the kept lines.
    kept = [line for i, line in enumerate(valid_lines(), start=1)
            if i not in dropped and i not in E4_LINES]
    clean = ingest(stored, kept, name="clean")
    assert clean.state == "ingested" and clean.n_dropped == 0
    assert facts(sub) == facts(clean)
    assert len(facts(sub)) == sub.n_relations == clean.n_relations == 4


@pytest.mark.django_db
def test_problems_of_the_whole_file_still_reject(stored: Callable[..., Submission]) -> None:
    lines = [*valid_lines()[:21], f":E1\tper:spouse\t:E3\t{sentence('D1', 1)}"]
    sub = ingest(stored, lines, drop_invalid=True)
    assert sub.state == "rejected" and "NO_RELATIONS" in sub.report_counts
    sub = ingest(stored, valid_lines()[1:], drop_invalid=True)
    assert sub.state == "rejected" and "MISSING_RUN_ID" in sub.report_counts


@pytest.mark.django_db
def test_dropped_lines_show_on_the_page_tsv_and_api(
        client: Client, user: User, corpus: Corpus, django_capture_on_commit_callbacks) -> None:
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(reverse("submission-new"), {
            "name": "partial", "corpus": "tiny", "drop_invalid": "on",
            "file": SimpleUploadedFile("kb.tsv", to_bytes(broken()))})
    assert resp.status_code == 302
    sub = Submission.objects.get()
    assert sub.drop_invalid and sub.state == "ingested" and sub.n_dropped == 10
    html = client.get(resp["Location"]).content.decode()
    assert "10 lines dropped" in html and "dropped.tsv" in html
    report = client.get(reverse("submission-evaluation", args=[sub.pk])).content.decode()
    assert "10 invalid lines of the file were dropped" in report
    tsv = client.get(reverse("submission-dropped-tsv", args=[sub.pk])).content.decode()
    rows = [r.split("\t") for r in tsv.splitlines()]
    assert rows[0] == ["line", "code", "message"] and len(rows) == 11
    assert rows[1][:2] == ["10", "MENTION_TEXT_MISMATCH"]

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    with django_capture_on_commit_callbacks(execute=True):
        made = api.post("/api/submissions/", {
            "name": "api", "corpus": "tiny", "drop_invalid": "true",
            # another run of the same system: the same bytes twice would be a duplicate
            "file": SimpleUploadedFile("kb.tsv", to_bytes(["api_run", *broken()[1:]]))},
            format="multipart")
    assert made.status_code == 201 and made.json()["drop_invalid"] is True
    detail = api.get(f"/api/submissions/{made.json()['id']}/").json()
    assert detail["n_dropped"] == 10 and detail["dropped"][0][:2] == [10,
                                                                      "MENTION_TEXT_MISMATCH"]


@pytest.mark.django_db(transaction=True)
def test_submit_command_drops_invalid_lines(user: User, corpus: Corpus, tmp_path) -> None:
    path = tmp_path / "kb.tsv"
    path.write_bytes(to_bytes(broken()))
    out = io.StringIO()
    call_command("submit", str(path), user=user.username, corpus="tiny", name="cli",
                 drop_invalid=True, ignore_limits=True, stdout=out)
    assert "10 lines dropped" in out.getvalue()
    assert "line 18: dropped UNKNOWN_ENTITY_TYPE" in out.getvalue()


@pytest.mark.django_db
def test_ambiguous_mention_takes_the_closest_pair_with_a_warning(
        stored: Callable[..., Submission]) -> None:
    # :E1 gets a second mention ("Byron", inside "Ada Byron") in line 23's sentence:
    # both end 15 characters before "Acme Corp", so the tie goes to the earliest span.
    lines = [*valid_lines(), mention(":E1", "D1", "Byron", 1)]
    sub = ingest(stored, lines)
    assert sub.state == "ingested", sub.report
    [warning] = [p for p in sub.report if p["code"] == "AMBIGUOUS_MENTION"
                 and p["line"] == 23]
    assert warning["line"] == 23 and warning["severity"] == "warning"
    assert f"'Ada Byron' at {prov('D1', 'Ada Byron', 1)}" in warning["message"]
    assert f"'Acme Corp' at {prov('D1', 'Acme Corp', 0)}" in warning["message"]


def test_closest_pair_is_deterministic_and_prefers_distinct_spans() -> None:
    subjects, objects = [(0, 5), (40, 45)], [(30, 35), (50, 55)]
    assert closest_pair(subjects, objects) == ((40, 45), (30, 35))
    assert closest_pair(subjects[::-1], objects[::-1]) == ((40, 45), (30, 35))
    # equal gaps: the earliest subject, then the earliest object
    assert closest_pair([(10, 20), (30, 40)], [(20, 30)]) == ((10, 20), (20, 30))
    # a shared span is used only when nothing else exists
    assert closest_pair([(0, 5), (10, 15)], [(0, 5)]) == ((10, 15), (0, 5))
    assert closest_pair([(0, 5)], [(0, 5)]) == ((0, 5), (0, 5))


@pytest.mark.django_db
def test_a_mostly_invalid_file_is_refused_not_kept_as_its_few_good_lines(
        stored: Callable[..., Submission], settings) -> None:
    """Every invalid line was kept in memory and in the stored list, so a large file of
    another corpus with one valid line took gigabytes and overflowed the JSON column."""
    settings.KBPO_SUBMISSION_MAX_DROPPED = 5
    n = len(valid_lines())
    bad = [f':E1\tmention\t"x"\tD9:{i}-{i}' for i in range(6)]
    sub = ingest(stored, [*valid_lines(), *bad], drop_invalid=True)
    assert sub.state == "rejected" and sub.n_dropped == 0 and sub.dropped == []
    [limit] = [p for p in sub.report if p["code"] == "TOO_MANY_INVALID_LINES"]
    assert limit["line"] == n + 6 and "more than 5 lines are invalid" in limit["message"]
    assert not RelationInstance.objects.filter(submission=sub).exists()
    # At the limit the file is kept.
    sub = ingest(stored, [*valid_lines(), *bad[:5]], drop_invalid=True, name="five")
    assert sub.state == "ingested" and sub.n_dropped == 5
    # Lines dropped with an entity count too: :E4's bad type line takes six more.
    lines = valid_lines()
    lines[17] = ":E4\ttype\tPERSON"
    sub = ingest(stored, lines, drop_invalid=True, name="cascade")
    assert sub.state == "rejected" and "instances_by_predicate" not in sub.stats
    assert sub.stats["lines"] == n
    assert [p["line"] for p in sub.report if p["code"] == "TOO_MANY_INVALID_LINES"] == [29]
    # The lines that made it so are listed, with why, not only the verdict.
    listed = {(p["line"], p["code"]) for p in sub.report}
    assert (18, "UNKNOWN_ENTITY_TYPE") in listed
    assert sum(code == "DROPPED_WITH_ENTITY" for _, code in listed) == 6
    assert not RelationInstance.objects.filter(submission=sub).exists()


def test_error_lines_kept_in_memory_are_bounded() -> None:
    report = Report(cap=2, max_error_lines=3)
    for line in range(1, 11):
        report.add(line, "UNKNOWN_DOCUMENT", "x")
    assert sorted(report.error_lines) == [1, 2, 3] and report.error_lines_full
    assert report.errors == 10 and len(report.problems) == 2


@pytest.mark.django_db
def test_a_public_report_names_the_dropped_lines_without_a_login_wall(
        stored: Callable[..., Submission], user: User) -> None:
    """Visitors read a public report; the submission page listing the lines is for
    signed-in users, so the report itself says what was dropped."""
    from django.test import Client

    sub = ingest(stored, broken(), drop_invalid=True, public=True)
    page = Client().get(f"/submissions/{sub.pk}/report/")
    assert page.status_code == 200
    note = page.content.decode().split('id="dropped-note"')[1].split("</p>")[0]
    codes = Counter(p["code"] for p in sub.report if p["severity"] == "dropped")
    assert codes
    for code, n in codes.items():
        assert f"<code>{code}</code> × {n}" in note, note
    assert "for signed-in users" in note
    form = Client()
    form.force_login(user)
    assert "anyone, signed in or not" in form.get("/submissions/new/").content.decode()
