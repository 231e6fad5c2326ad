"""Hostile DocRED result files: the limits TAC KB files have (issue 41) hold for the
JSON format too. The file is read as a stream, so a gzip of millions of tiny
predictions or a 50 MB string costs the caps, not the file; what Python's json module
reads but JSON forbids (repeated keys, NaN) is named; nothing becomes a 500 or an
internal error."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import time
import tracemalloc
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from kbpo.core.models import Corpus
from submissions.models import Submission, SubmissionEvent
from submissions.processing import run_ingestion

from .test_docred_predictions import ADA, GOOD, docred, result, submit_rejected

__all__ = ["docred"]  # the fixture, imported for the tests here


def stored(corpus: Corpus, owner: User, data: bytes, **fields: object) -> Submission:
    """`data` stored as an uploaded submission to `corpus`, past the upload checks."""
    sub = Submission(owner=owner, corpus=corpus, name=fields.pop("name", "sys"),
                     compressed=data[:2] == b"\x1f\x8b", file_size=len(data), **fields)
    sub.file.save("result.json", ContentFile(data), save=False)
    sub.save()
    SubmissionEvent.objects.create(submission=sub, to_state="uploaded")
    return sub


def ingested(corpus: Corpus, owner: User, data: bytes, **fields: object) -> Submission:
    sub = stored(corpus, owner, data, **fields)
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    return sub


def peak_bytes(fn: object) -> tuple[object, int, float]:
    """fn()'s result, the peak of Python allocations while it ran, and its seconds."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        out = fn()  # type: ignore[operator]
        return out, tracemalloc.get_traced_memory()[1], time.monotonic() - started
    finally:
        tracemalloc.stop()


def api(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(client: APIClient, data: bytes, name: str = "sys", corpus: str = "redocred",
           filename: str = "result.json.gz") -> object:
    return client.post("/api/submissions/", {
        "name": name, "corpus": corpus, "file": SimpleUploadedFile(filename, data)},
        format="multipart")


@pytest.mark.django_db
def test_a_gzip_of_millions_of_tiny_predictions_stops_at_the_cap(
        docred: Corpus, user: User, settings) -> None:
    """20 million `{}` are 60 MB of JSON in a 60 kB gzip. The old reader decoded all
    of it into memory (bytes and text) and checked every element; the stream stops at
    prediction MAX_PREDICTIONS + 1, having read a few chunks."""
    settings.KBPO_SUBMISSION_MAX_PREDICTIONS = 10_000
    data = gzip.compress(b"[" + b"{}," * 20_000_000 + b"{}]")
    assert len(data) < 100_000
    sub, peak, seconds = peak_bytes(lambda: ingested(docred, user, data))
    assert sub.state == "rejected"
    (stop,) = [p for p in sub.report if p["code"] == "TOO_MANY_PREDICTIONS"]
    assert stop["line"] == 10_001
    assert stop["message"] == "[10000]: the file has more than 10,000 predictions, the limit"
    assert sub.stats["predictions"] == 10_000
    assert peak < 20_000_000, peak  # the old reader held > 120 MB
    assert seconds < 60, seconds


@pytest.mark.django_db
def test_junk_predictions_stop_at_the_error_limit(docred: Corpus, user: User,
                                                  settings) -> None:
    """As for TAC KB files: past the invalid predictions even drop-invalid accepts, the
    file is refused whatever follows, and the rest is not read."""
    settings.KBPO_SUBMISSION_MAX_DROPPED = 500
    data = gzip.compress(b"[" + b"{}," * 200_000 + b"{}]")
    sub = ingested(docred, user, data)
    assert sub.state == "rejected"
    assert sub.report_counts["TOO_MANY_ERRORS"] == 1
    # (Report keeps MAX_DROPPED + 1 error lines: the one after those stops the check.)
    assert sub.report_counts["MALFORMED_PREDICTION"] == 502
    stop = next(p for p in sub.report if p["code"] == "TOO_MANY_ERRORS")
    assert stop["line"] == 502
    assert "more than 500 predictions have errors" in stop["message"]
    kept = ingested(docred, user, data, drop_invalid=True, name="drop")
    assert kept.state == "rejected" and "TOO_MANY_INVALID_LINES" in kept.report_counts


@pytest.mark.django_db
def test_a_50_mb_string_is_refused_without_reading_it_whole(docred: Corpus,
                                                            user: User) -> None:
    big = {"title": "x" * 50_000_000, "h_idx": 0, "t_idx": 1, "r": "P17"}
    data = gzip.compress(json.dumps([big]).encode(), 1)
    sub, peak, _ = peak_bytes(lambda: ingested(docred, user, data))
    assert sub.state == "rejected"
    assert sub.report_counts == {"PREDICTION_TOO_LONG": 1}
    (problem,) = sub.report
    assert problem["line"] == 1
    assert problem["message"].startswith("[0]: the prediction is longer than 100,000 bytes")
    assert peak < 10_000_000, peak  # the old reader held the 50 MB as bytes, text, str


@pytest.mark.django_db
def test_deep_nesting_is_a_named_error_not_an_internal_one(docred: Corpus,
                                                           user: User) -> None:
    """json's decoder raises RecursionError past ~1,000 levels, and ijson's `items`
    costs memory quadratic in the depth: nesting is capped while the events come."""
    deep = json.dumps([GOOD[0], dict(GOOD[1], evidence=["PLACE"])]).replace(
        '"PLACE"', "[" * 5000 + "]" * 5000)
    sub = ingested(docred, user, deep.encode())
    assert sub.state == "rejected", sub.state
    (problem,) = sub.report
    assert (problem["code"], problem["line"]) == ("MALFORMED_JSON", 2)
    assert problem["message"].startswith("[1]: nested too deeply (more than 64 lists")


def test_a_byte_that_is_not_utf8_is_placed_in_its_prediction(tmp_path: Path, user: User,
                                                            docred: Corpus) -> None:
    text = json.dumps([GOOD[0], dict(GOOD[1], title="BAD"), GOOD[2]], indent=1)
    data = text.encode().replace(b'"BAD"', b'"Ada \xff"')
    sub = submit_rejected(tmp_path, data, "--drop-invalid")
    (problem,) = sub.report
    line = text[:text.index("BAD")].count("\n") + 1
    column = text.index("BAD") - text.rindex("\n", 0, text.index("BAD")) + 4
    assert problem["code"] == "MALFORMED_JSON"
    byte = data.index(b"\xff")
    assert problem["message"] == (f"byte {byte:,} (line {line}, column "
                                  f"{column}, in [1]) is not UTF-8; save the file as UTF-8")


@pytest.mark.django_db
def test_a_top_level_object_is_refused_at_upload(docred: Corpus, user: User) -> None:
    """Read as a TAC KB file (it is no JSON list), it was refused as one ("This is a TAC
    KB file"); it is a JSON object, and the message says what to write instead."""
    resp = upload(api(user), json.dumps({"predictions": GOOD}).encode(), filename="r.json")
    assert resp.status_code == 400, resp.content
    (message,) = resp.json()["file"]
    assert message.startswith("The file is one JSON object {...}; a DocRED result file is "
                               "a JSON list")
    assert "write that list alone" in message
    assert not Submission.objects.exists()


@pytest.mark.parametrize("extra", [
    {"score": float("nan")}, {"score": float("inf")}, {"h_idx": float("-inf")}])
def test_nan_and_infinity_are_no_json(tmp_path: Path, user: User, docred: Corpus,
                                      extra: dict) -> None:
    """json.dump writes NaN for a float NaN, and json.load reads it: the old check took
    the prediction with an ignored "score": NaN as valid. The parser (yajl) stops at
    it: the file is refused, even with drop-invalid, naming the prediction and byte."""
    preds = [GOOD[0], dict(GOOD[1], **extra), GOOD[2]]
    for args in ((), ("--drop-invalid",)):
        sub = submit_rejected(tmp_path, result(preds), *args)
        (problem,) = sub.report
        assert (problem["line"], problem["code"]) == (2, "MALFORMED_JSON")
        assert problem["message"].startswith("[1]: NaN or Infinity near byte "), problem
        assert problem["message"].endswith("is not a JSON value (Python's json.dump writes "
                                           "it for a float that is not a number): write a "
                                           "number or null")


def test_a_repeated_key_is_named(tmp_path: Path, user: User, docred: Corpus) -> None:
    """json.load keeps the last of repeated keys: the old check read h_idx 3 here,
    silently; other readers keep the first."""
    data = (f'[{{"title": {json.dumps(ADA)}, "h_idx": 0, "t_idx": 1, "h_idx": 3, '
            '"r": "P22"}]').encode()
    sub = submit_rejected(tmp_path, data)
    (problem,) = sub.report
    assert (problem["line"], problem["code"]) == (1, "MALFORMED_PREDICTION")
    assert 'the key "h_idx" appears twice in one object' in problem["message"]


@pytest.mark.django_db
def test_docred_uploads_take_the_tac_byte_cap_and_rate_limits(docred: Corpus, user: User,
                                                              settings) -> None:
    """Issue 37: the same limits and rate limits as TAC KB files, through the API."""
    client = api(user)
    settings.KBPO_SUBMISSION_MAX_BYTES = 2_000
    big = gzip.compress(result([GOOD[0]] * 100))
    assert len(big) < 2_000
    resp = upload(client, big, name="big")
    assert resp.status_code == 413, resp.content
    assert resp.json()["file"][0].startswith("The file is larger than 2,000 bytes")
    settings.KBPO_SUBMISSION_MAX_BYTES = 100_000_000
    # Rejected uploads (of any format) count towards the daily allowance.
    settings.KBPO_SUBMISSION_REJECTED_DAILY_LIMIT = 2
    for k in range(2):
        stored(docred, user, result([{"title": "nope"}]), state="rejected", name=f"r{k}")
    resp = upload(client, result(GOOD), name="refused")
    assert resp.status_code == 429, resp.content
    assert "2 of your uploads were rejected in the last 24 hours" in resp.json()["detail"]
    Submission.objects.update(created_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    # Accepted ones take the corpus's daily slots.
    settings.KBPO_SUBMISSION_DAILY_LIMIT = 1
    stored(docred, user, result(GOOD[:1]), state="ingested", name="today")
    resp = upload(client, result(GOOD[1:]), name="over")
    assert resp.status_code == 429, resp.content
    assert "submissions allowed on corpus redocred in 24 hours" in resp.json()["detail"]


@pytest.mark.parametrize(("data", "code"), [
    (gzip.compress(b"[" + b"{}," * 2_000_000 + b"{}]"), "TOO_MANY_PREDICTIONS"),
    (json.dumps([dict(GOOD[0], evidence=["DEEP"])]).replace('"DEEP"', "[" * 5000 + "]" * 5000)
     .encode(), "MALFORMED_JSON"),
    (result([dict(GOOD[0], score=float("nan"))]), "MALFORMED_JSON"),
    (b'[{"title": "\xff"}]', "MALFORMED_JSON"),
])
@pytest.mark.django_db(transaction=True)
def test_the_api_answers_a_hostile_file_with_422_and_its_report(
        docred: Corpus, user: User, settings, data: bytes, code: str) -> None:
    """Committed for real, so validation runs inside the request (no worker): the answer
    is the rejected submission, never a 500 or a `failed` one."""
    settings.KBPO_SUBMISSION_MAX_PREDICTIONS = 1_000
    resp = upload(api(user), data)
    assert resp.status_code == 422, resp.content
    body = resp.json()
    assert body["state"] == "rejected"
    assert code in {p["code"] for p in body["report"]}, body["report"]
