"""Predictions in the DocRED result format: recognised, validated, ingested as
document-level instances, through the form, the API and `manage.py submit`."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.models import GoldRelation
from kbpo.core.docred_load import load_docred_corpus
from kbpo.core.models import Corpus, Document, DocumentEntity
from submissions.docred_format import DOCRED, TAC_KB, sniff
from submissions.models import MentionPair, RelationInstance, Submission, SubmissionEntity
from submissions.processing import run_ingestion
from tests.core.test_docred_load import DOCS, write

from .kb import to_bytes, valid_lines

ADA, ACME = "Ada Byron: a life", "Acme"
GOOD = [
    {"title": ADA, "h_idx": 0, "t_idx": 3, "r": "P22", "evidence": [1]},
    {"title": ADA, "h_idx": 0, "t_idx": 1, "r": "P569"},
    {"title": ACME, "h_idx": 0, "t_idx": 1, "r": "P159", "evidence": [0]},
]


@pytest.fixture
def docred(db, tmp_path: Path) -> Corpus:
    load_docred_corpus("redocred", write(tmp_path / "dev.json", DOCS))
    return Corpus.objects.get(tag="redocred")


def result(preds: object, gz: bool = False, indent: int | None = None) -> bytes:
    data = json.dumps(preds, indent=indent).encode()
    return gzip.compress(data) if gz else data


def submit(tmp_path: Path, data: bytes, *args: str) -> Submission:
    path = tmp_path / "result.json"
    path.write_bytes(data)
    call_command("submit", str(path), "--user", "ada", "--corpus", "redocred", "--name", "sys",
                 *args, stdout=io.StringIO())
    sub = Submission.objects.latest("pk")
    # (the test's transaction never commits: run the ingestion the command queued)
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    return sub


def submit_rejected(tmp_path: Path, data: bytes, *args: str) -> Submission:
    sub = submit(tmp_path, data, *args)
    assert sub.state == "rejected"
    return sub


@pytest.mark.parametrize(("data", "found"), [
    (b'[{"title": "x"}]', DOCRED), (b"\xef\xbb\xbf \n [\n]", DOCRED),
    (gzip.compress(b'  [ {"title": "x"}'), DOCRED),
    (b"run_1\n:E1\ttype\tPER\n", TAC_KB), (b"[run]\n:E1\ttype\tPER\n", TAC_KB),
])
def test_the_format_is_recognised_by_content(data: bytes, found: str) -> None:
    assert sniff(io.BytesIO(data)) == found


@pytest.mark.parametrize("gz", [False, True])
def test_predictions_become_document_level_instances(tmp_path: Path, user: User,
                                                     docred: Corpus, gz: bool) -> None:
    sub = submit(tmp_path, result(GOOD, gz))
    assert (sub.state, sub.n_relations, sub.n_errors) == ("ingested", 3, 0)
    ada = Document.objects.get(doc_id="Ada_Byron_a_life")
    ents = {e.index: e for e in DocumentEntity.objects.filter(document=ada)}
    father = RelationInstance.objects.get(submission=sub, predicate="P22")
    pair = father.pair
    # the pair is head anchor -> tail anchor, in the prediction's direction
    assert (pair.subject_begin, pair.subject_end) == (ents[0].anchor_begin, ents[0].anchor_end)
    assert (pair.object_begin, pair.object_end) == (ents[3].anchor_begin, ents[3].anchor_end)
    assert (pair.subject_type, pair.object_type) == ("PER", "PER")
    assert father.line == 1
    assert father.evidence.sentences == [1]  # kept for the crowd page to emphasise
    assert not hasattr(RelationInstance.objects.get(submission=sub, predicate="P569"),
                       "evidence")
    # the entity scheme's entity: the head entity within its document
    assert father.subject_entity.node == "Ada_Byron_a_life#0"
    assert father.object_entity.node == "Ada_Byron_a_life#3"
    # every mention of a used entity is a mention of the submission
    assert father.object_entity.mentions.count() == 2
    assert sub.stats["instances_by_predicate"] == {"P159": 1, "P22": 1, "P569": 1}
    assert SubmissionEntity.objects.filter(submission=sub).count() == 5


def test_pairs_meet_the_gold_of_the_same_fact(tmp_path: Path, user: User,
                                             docred: Corpus) -> None:
    gold = json.loads(json.dumps(DOCS))
    gold[0]["labels"] = [{"h": 0, "t": 3, "r": "P22", "evidence": [1]}]
    call_command("import_gold", "--format", "docred", "--corpus", "redocred",
                 str(write(tmp_path / "gold.json", gold)), stdout=io.StringIO())
    submit(tmp_path, result(GOOD))
    g = GoldRelation.objects.get()
    assert MentionPair.objects.filter(
        document=g.document, subject_begin=g.subject_begin, subject_end=g.subject_end,
        object_begin=g.object_begin, object_end=g.object_end,
        instances__predicate=g.predicate).exists()
    # a second system's same fact shares the pair (labels are reused)
    submit(tmp_path, result([*GOOD[:1], {"title": ACME, "h_idx": 1, "t_idx": 0, "r": "P17"}]))
    assert MentionPair.objects.count() == 4


@pytest.mark.parametrize(("pred", "code", "message"), [
    ({"title": "Ada Byron: A Life", "h_idx": 0, "t_idx": 3, "r": "P22"}, "UNKNOWN_TITLE",
     "[1].title: no document of the corpus has the title 'Ada Byron: A "
     "Life'; did you mean 'Ada Byron: a life'?"),
    ({"title": ADA, "h_idx": 0, "t_idx": 6, "r": "P22"}, "ENTITY_INDEX_OUT_OF_RANGE",
     "[1].t_idx: 6 is not an entity of 'Ada Byron: a life', which has 6 "
     "(0 to 5)"),
    ({"title": ADA, "h_idx": 2, "t_idx": 2, "r": "P17"}, "SELF_RELATION",
     "h_idx and t_idx are both 2"),
    ({"title": ADA, "h_idx": 0, "t_idx": 3, "r": "p22"}, "UNKNOWN_RELATION",
     "'p22' is not a relation of the DocRED (96 Wikidata relations) schema; did you mean P22 "
     "(father)?"),
    ({"title": ADA, "h_idx": 0, "t_idx": 3, "r": "per:parents"}, "UNKNOWN_RELATION",
     "[1].r: 'per:parents' is not a relation"),
    ({"title": ADA, "h_idx": 0, "t_idx": 3, "r": "P22", "evidence": [2]}, "BAD_EVIDENCE",
     "[1].evidence[0]: 2 is not a sentence of 'Ada Byron: a life', which "
     "has 2 (0 to 1)"),
    ({"title": ADA, "h_idx": "0", "t_idx": 3, "r": "P22"}, "MALFORMED_PREDICTION",
     "[1].h_idx: expected an integer entity index, got \"'0'\""),
    ({"title": ADA, "h_idx": 0, "r": "P22"}, "MALFORMED_PREDICTION", "[1]: missing 't_idx'"),
    ([ADA, 0, 3, "P22"], "MALFORMED_PREDICTION", "expected an object"),
])
def test_each_invalid_prediction_is_named_and_drop_invalid_keeps_the_rest(
        tmp_path: Path, user: User, docred: Corpus, pred: object, code: str,
        message: str) -> None:
    preds = [GOOD[0], pred, *GOOD[1:]]
    sub = submit_rejected(tmp_path, result(preds))
    assert sub.n_errors == 1
    (problem,) = sub.report
    assert (problem["line"], problem["code"]) == (2, code)  # the prediction's position
    assert message in problem["message"], problem["message"]
    kept = submit(tmp_path, result(preds), "--drop-invalid")
    assert (kept.state, kept.n_relations, kept.n_dropped) == ("ingested", 3, 1)
    assert kept.dropped[0][:2] == [2, code]


def test_a_syntax_error_names_its_prediction_byte_and_line(tmp_path: Path, user: User,
                                                           docred: Corpus) -> None:
    """A prediction's problem names its path (`[3].t_idx`); a syntax error, where the
    parser stopped, also the byte, line and column (ijson does not say where an element
    starts)."""
    preds = [*GOOD, {"title": ACME, "h_idx": 0, "t_idx": 9, "r": "P159"}]
    sub = submit_rejected(tmp_path, result(preds, indent=2))
    assert sub.report[0]["message"].startswith("[3].t_idx: 9 is not an entity of")
    text = json.dumps(preds, indent=2).replace('"t_idx": 9', '"t_idx": 9 9')
    sub = submit_rejected(tmp_path, text.encode())
    cut = text.index("9 9") + 2
    line = text[:cut].count("\n") + 1
    (problem,) = sub.report
    assert problem["code"] == "MALFORMED_JSON"
    assert problem["message"].startswith("[3]: not valid JSON (after key and value, inside "
                                         "map, I expect ',' or '}') near byte "), problem
    assert f" (line {line}, column " in problem["message"]


def test_duplicates_are_merged_with_a_warning(tmp_path: Path, user: User,
                                              docred: Corpus) -> None:
    dup = dict(GOOD[0], evidence=[0])
    sub = submit(tmp_path, result([*GOOD, dup]))
    merged = RelationInstance.objects.get(submission=sub, predicate="P22")
    assert (merged.line, merged.evidence.sentences) == (1, [0, 1])
    assert (sub.state, sub.n_relations, sub.n_warnings) == ("ingested", 3, 1)
    assert sub.report[0]["code"] == "DUPLICATE_PREDICTION" and sub.report[0]["line"] == 4
    assert sub.report[0]["message"].startswith("[3] repeats [0]")
    assert sub.stats["duplicates_merged"] == 1


@pytest.mark.parametrize(("data", "message"), [
    (b'[{"title": "x", "h_idx": 0,\n "t_idx": 1 "r": "P17"}]',
     "[0]: not valid JSON (after key and value, inside map, I expect ',' or '}') near byte "
     "42 (line 2, column 15)"),
    (b'[{"title": "x"}', "the file ends early"),
    (b"[]", "the file contains no valid prediction"),
    (b'[{"title": "\xff"}]', "byte 12 (line 1, column 13, in [0]) is not UTF-8"),
])
def test_whole_file_problems_reject_it_even_with_drop_invalid(
        tmp_path: Path, user: User, docred: Corpus, data: bytes, message: str) -> None:
    sub = submit_rejected(tmp_path, data, "--drop-invalid")
    assert any(message in p["message"] for p in sub.report), sub.report


def test_the_format_must_be_the_corpus_s(tmp_path: Path, user: User, docred: Corpus,
                                         corpus: Corpus) -> None:
    with pytest.raises(CommandError, match="This is a TAC KB file, but corpus redocred is "
                                           "evaluated on the DocRED schema"):
        submit(tmp_path, to_bytes(valid_lines()))
    with pytest.raises(CommandError, match="not in the TAC KB format you chose"):
        submit(tmp_path, result(GOOD), "--format", "tac")
    path = tmp_path / "r.json"
    path.write_bytes(result(GOOD))
    with pytest.raises(CommandError, match=r"This is a DocRED result file .* but corpus tiny "
                                           r"is evaluated on the TAC KBP schema"):
        call_command("submit", str(path), "--user", "ada", "--corpus", "tiny", "--name", "x")
    assert submit(tmp_path, result(GOOD), "--format", "docred").state == "ingested"
    assert not Submission.objects.filter(corpus=corpus).exists()


def test_the_upload_form_recognises_a_docred_file(client: Client, user: User,
                                                 docred: Corpus,
                                                 django_capture_on_commit_callbacks) -> None:
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(reverse("submission-new"), {
            "name": "docred-sys", "corpus": "redocred", "public": "",
            "file": SimpleUploadedFile("result.json.gz", result(GOOD, gz=True))})
    assert resp.status_code == 302
    sub = Submission.objects.get()
    assert (sub.state, sub.n_relations, sub.run_id) == ("ingested", 3, "")
    page = client.get(resp["Location"]).content.decode()
    assert "P22" in page
    bad = client.post(reverse("submission-new"), {
        "name": "tac", "corpus": "redocred", "public": "",
        "file": SimpleUploadedFile("kb.tsv", to_bytes(valid_lines()))})
    assert bad.status_code == 400
    assert "evaluated on the DocRED schema" in bad.content.decode()


def test_the_api_takes_a_docred_file_with_or_without_its_format(
        user: User, docred: Corpus, django_capture_on_commit_callbacks) -> None:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    url = reverse("api-submission-list")
    with django_capture_on_commit_callbacks(execute=True):
        ok = api.post(url, {"name": "a", "corpus": "redocred", "format": "docred",
                            "file": SimpleUploadedFile("r.json", result(GOOD))},
                      format="multipart")
    assert ok.status_code == 201, ok.json()
    with django_capture_on_commit_callbacks(execute=True):
        bad = api.post(url, {"name": "b", "corpus": "redocred",
                             "file": SimpleUploadedFile("r.json", result(
                                 [{"title": ADA, "h_idx": 0, "t_idx": 1, "r": "P0"}]))},
                       format="multipart")
    # validated once the upload commits (the asynchronous case): rejected, with its report
    assert bad.status_code == 201
    rejected = Submission.objects.get(pk=bad.json()["id"])
    assert rejected.state == "rejected" and rejected.report[0]["code"] == "UNKNOWN_RELATION"
    wrong = api.post(url, {"name": "c", "corpus": "redocred", "format": "tac",
                           "file": SimpleUploadedFile("r.json", result(GOOD[:1]))},
                     format="multipart")
    assert wrong.status_code == 400 and "format you chose" in wrong.json()["file"][0]


def test_the_format_page_lists_the_docred_relations(client: Client, docred: Corpus) -> None:
    html = client.get(reverse("submission-format")).content.decode()
    assert 'id="docred"' in html and "<code>redocred</code>" in html
    assert "<code>P1441</code></td><td>present in work</td><td>X appears in the work Y." in html
