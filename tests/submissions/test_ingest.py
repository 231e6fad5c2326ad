"""Ingestion semantics: folding, canonical direction, dedupe, idempotence, states, bombs."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from django.utils import timezone

from submissions import ingest as ingest_mod
from submissions.indexes import Entity
from submissions.kbformat import FileTooLarge, inspect_upload, iter_lines, open_stream
from submissions.models import (
    MentionPair,
    RelationInstance,
    Submission,
    SubmissionEntity,
    SubmissionEvent,
    SubmissionMention,
)
from submissions.processing import redrive_stuck, run_ingestion
from submissions.services import TransitionError, requeue, transition, withdraw

from .kb import span, to_bytes, valid_lines

EXPECTED = {
    # (pair key, predicate): (subject node, object node, confidence, line)
    ("D1:{}-{}:{}-{}".format(*span("D1", "Ada Byron"), *span("D1", "London")),
     "per:place_of_birth"): (":E1", ":E2", 0.9, 22),
    ("D1:{}-{}:{}-{}".format(*span("D1", "Ada Byron", 1), *span("D1", "Acme Corp")),
     "per:employee_or_member_of"): (":E1", ":E3", 0.8, 23),
    ("D1:{}-{}:{}-{}".format(*span("D1", "Ada Byron", 1), *span("D1", "engineer")),
     "per:title"): (":E1", None, 0.6, 25),
    ("D1:{}-{}:{}-{}".format(*span("D1", "Tom King"), *span("D1", "Ada Byron", 2)),
     "per:children"): (":E4", ":E1", 0.9, 26),
    ("D1:{}-{}:{}-{}".format(*span("D1", "Acme Corp", 1), *span("D1", "1999")),
     "org:date_founded"): (":E3", None, 1.0, 27),
    ("D2:{}-{}:{}-{}".format(*span("D2", "Acme Corp"), *span("D2", "Lisbon")),
     "org:place_of_headquarters"): (":E3", ":E2", 0.5, 28),
    ("D2:{}-{}:{}-{}".format(*span("D2", "Tom King"), *span("D2", "Acme Corp", 1)),
     "per:organizations_founded"): (":E4", ":E3", 1.0, 29),
    ("D2:{}-{}:{}-{}".format(*span("D2", "Tom King", 1), *span("D2", "Ada Byron")),
     "per:siblings"): (":E4", ":E1", 0.4, 30),
}


def ingested(stored: Callable[..., Submission], data: bytes | None = None,
             **kw: object) -> Submission:
    sub = stored(data if data is not None else to_bytes(valid_lines()), **kw)
    assert run_ingestion(sub.pk) == "ingested"
    sub.refresh_from_db()
    return sub


def instances(sub: Submission) -> dict[tuple[str, str], tuple]:
    out = {}
    for r in RelationInstance.objects.filter(submission=sub).select_related(
            "pair__document", "subject_entity", "object_entity"):
        out[(r.pair.pair_key, r.predicate)] = (
            r.subject_entity.node, r.object_entity.node if r.object_entity else None,
            r.confidence, r.line)
    return out


@pytest.mark.django_db
def test_valid_file_folds_orients_and_dedupes(stored: Callable[..., Submission]) -> None:
    sub = ingested(stored)
    assert sub.state == "ingested" and sub.run_id == "test_run_1"
    assert instances(sub) == EXPECTED
    assert (sub.n_relations, sub.n_entities, sub.n_warnings) == (8, 4, 1)
    # 14 distinct entity mentions (the canonical_mention duplicates a mention) + 2 fillers
    assert sub.n_mentions == 16 == SubmissionMention.objects.filter(submission=sub).count()
    fillers = SubmissionMention.objects.filter(submission=sub, entity=None)
    assert sorted(fillers.values_list("type", flat=True)) == ["DATE", "TITLE"]
    ada = SubmissionEntity.objects.get(submission=sub, node=":E1")
    assert (ada.type, ada.link) == ("PER", "Wikipedia:Ada_Lovelace")
    assert (ada.canonical_begin, ada.canonical_end) == span("D1", "Ada Byron")
    assert SubmissionMention.objects.get(submission=sub, entity=ada, is_canonical=True).begin == 0
    for pair in MentionPair.objects.all():  # spans are half-open and typed
        text = pair.document.text
        assert text[pair.subject_begin:pair.subject_end].strip()
        assert pair.sentence.begin <= pair.subject_begin < pair.object_end <= pair.sentence.end
    stats = sub.stats
    assert stats["instances_by_predicate"]["per:place_of_birth"] == 1
    assert stats["instances_by_types"]["PER-PER"] == 2
    assert stats["documents_covered"] == 2 and stats["duplicates_merged"] == 1
    assert stats["skipped"] == {"unsupported predicates": 1}
    events = list(sub.events.values_list("to_state", flat=True))
    assert events == ["uploaded", "validating", "ingested"]


@pytest.mark.django_db
def test_inverse_line_alone_gives_the_same_instance(stored: Callable[..., Submission]) -> None:
    lines = valid_lines()
    forward = ingested(stored, to_bytes(lines[:23] + lines[24:]))   # without the inverse
    backward = ingested(stored, to_bytes(lines[:22] + lines[23:]))  # only the inverse
    key = next(k for k in EXPECTED if k[1] == "per:employee_or_member_of")
    assert instances(forward)[key][:2] == instances(backward)[key][:2] == (":E1", ":E3")
    # Both submissions refer to the same shared pair row.
    pairs = RelationInstance.objects.filter(predicate="per:employee_or_member_of")
    assert pairs.values("pair").distinct().count() == 1


@pytest.mark.django_db
def test_gzip_equals_plain(stored: Callable[..., Submission]) -> None:
    plain = ingested(stored)
    packed = ingested(stored, to_bytes(valid_lines(), gz=True))
    assert packed.compressed and instances(packed) == instances(plain)
    assert MentionPair.objects.count() == 8  # shared, not duplicated


@pytest.mark.django_db
def test_rerun_is_idempotent_and_revalidation_reproduces(
        stored: Callable[..., Submission], django_capture_on_commit_callbacks) -> None:
    sub = ingested(stored)

    def snapshot() -> tuple:
        return (sorted(RelationInstance.objects.values_list("id", "pair_id", "predicate")),
                sorted(SubmissionMention.objects.values_list("id", flat=True)),
                MentionPair.objects.count(), sub.events.count())

    before = snapshot()
    assert run_ingestion(sub.pk) == "skipped (ingested)"
    assert snapshot() == before
    with django_capture_on_commit_callbacks(execute=True):
        requeue(sub, "operator re-validation")
    sub.refresh_from_db()
    assert sub.state == "ingested" and instances(sub) == EXPECTED
    assert MentionPair.objects.count() == before[2]
    assert list(sub.events.values_list("to_state", flat=True))[-3:] == [
        "uploaded", "validating", "ingested"]


@pytest.mark.django_db
def test_rerun_after_a_failure_past_planning_replaces_draws_and_rows(
        needs_postgres: None, stored: Callable[..., Submission],
        django_capture_on_commit_callbacks) -> None:
    from django.db import connection

    from annotations.models import SampleDraw

    sub = ingested(stored)
    transition(sub, "planning")
    for i, inst in enumerate(RelationInstance.objects.filter(submission=sub)[:3]):
        SampleDraw.objects.create(submission=sub, scheme="instance", index=i, instance=inst)
    transition(sub, "failed", "Planning failed: simulated")
    with connection.cursor() as cursor:  # check the foreign keys now, not at rollback
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with django_capture_on_commit_callbacks(execute=True):
        requeue(sub, "operator re-run")
    sub.refresh_from_db()
    assert sub.state == "ingested", sub.error
    assert instances(sub) == EXPECTED
    assert not SampleDraw.objects.filter(submission=sub).exists()


@pytest.mark.django_db
def test_deleting_a_submission_with_draws_leaves_no_rows_behind(
        needs_postgres: None, stored: Callable[..., Submission]) -> None:
    """The admin's delete (the ORM's cascade) removes the draws on its instances and
    every ingested row: the database no longer checks the bulk rows' submission and
    entity keys (migration 0004), so orphans would go unnoticed."""
    from django.db import connection

    from annotations.models import SampleDraw

    sub = ingested(stored)
    other = ingested(stored)
    transition(sub, "planning")
    for i, inst in enumerate(RelationInstance.objects.filter(submission=sub)[:3]):
        SampleDraw.objects.create(submission=sub, scheme="instance", index=i, instance=inst)
    entity_ids = list(SubmissionEntity.objects.filter(submission=sub).values_list("pk",
                                                                                 flat=True))
    sub.delete()
    with connection.cursor() as cursor:  # the keys still checked hold now, not at rollback
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert not SampleDraw.objects.filter(instance__submission_id=sub.pk).exists()
    for model in (RelationInstance, SubmissionMention, SubmissionEntity):
        assert not model.objects.filter(submission_id=sub.pk).exists(), model
    assert not RelationInstance.objects.filter(subject_entity_id__in=entity_ids).exists()
    assert not SubmissionMention.objects.filter(entity_id__in=entity_ids).exists()
    assert instances(other) == EXPECTED  # the other submission's rows are untouched
    assert MentionPair.objects.exists()  # shared pairs stay


@pytest.mark.django_db
def test_withdrawn_rows_stay_but_stop_counting(stored: Callable[..., Submission]) -> None:
    sub = ingested(stored)
    assert list(Submission.objects.active()) == [sub]
    withdraw(sub)
    assert not Submission.objects.active().exists()
    assert RelationInstance.objects.filter(submission=sub).count() == 8
    with pytest.raises(TransitionError):
        withdraw(sub)
    with pytest.raises(TransitionError):
        transition(sub, "scored")


@pytest.mark.django_db
def test_transition_graph_is_enforced(stored: Callable[..., Submission]) -> None:
    sub = stored(b"x")
    with pytest.raises(TransitionError):
        transition(sub, "scored")
    transition(sub, "validating", "go")
    assert SubmissionEvent.objects.filter(submission=sub).count() == 2
    assert sub.state == "validating"


@pytest.mark.django_db
def test_internal_error_fails_keeps_error_and_can_be_rerun(
        stored: Callable[..., Submission], monkeypatch, django_capture_on_commit_callbacks
) -> None:
    def boom(cursor: object, sid: int) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest_mod, "insert_rows", boom)
    sub = stored(to_bytes(valid_lines()))
    assert run_ingestion(sub.pk) == "failed"
    sub.refresh_from_db()
    assert sub.state == "failed" and "disk on fire" in sub.error
    assert not RelationInstance.objects.exists() and not SubmissionEntity.objects.exists()
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        requeue(sub, "re-run")
    sub.refresh_from_db()
    assert sub.state == "ingested" and sub.error == "" and sub.n_relations == 8


@pytest.mark.django_db
def test_redrive_requeues_stuck_then_gives_up(
        stored: Callable[..., Submission], settings, django_capture_on_commit_callbacks
) -> None:
    settings.KBPO_SUBMISSION_MAX_ATTEMPTS = 1
    sub = stored(to_bytes(valid_lines()))
    transition(sub, "validating", "worker picked it up, then died")
    old = timezone.now() - dt.timedelta(seconds=settings.KBPO_SUBMISSION_REDRIVE_AFTER + 5)
    fresh = stored(to_bytes(valid_lines()))  # recent: left alone
    Submission.objects.filter(pk=sub.pk).update(state_changed_at=old)
    with django_capture_on_commit_callbacks(execute=True):
        assert redrive_stuck() == 1
    sub.refresh_from_db()
    assert sub.state == "ingested" and sub.redrives == 1
    assert "Re-queued automatically" in sub.events.get(to_state="uploaded",
                                                       from_state="validating").message
    assert Submission.objects.get(pk=fresh.pk).state == "uploaded"
    # A submission that keeps killing its worker is failed, not retried forever.
    Submission.objects.filter(pk=fresh.pk).update(state="validating", state_changed_at=old,
                                                  redrives=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert redrive_stuck() == 1
    fresh.refresh_from_db()
    assert fresh.state == "failed" and "re-queues" in fresh.error


@pytest.mark.django_db
def test_ingested_signal_is_sent_once(stored: Callable[..., Submission]) -> None:
    from submissions.services import submission_ingested

    seen: list[int] = []

    def receiver(sender: object, submission: Submission, **kw: object) -> None:
        seen.append(submission.pk)

    submission_ingested.connect(receiver)
    try:
        sub = ingested(stored)
        run_ingestion(sub.pk)
    finally:
        submission_ingested.disconnect(receiver)
    assert seen == [sub.pk]


# ---- gzip bombs ---------------------------------------------------------------------

class CountingReader(io.RawIOBase):
    """Counts the compressed bytes a reader actually consumes."""

    def __init__(self, path: Path) -> None:
        self.fh = path.open("rb")
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        n = self.fh.readinto(buf)
        self.consumed += n or 0
        return n or 0

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.fh.seek(pos, whence)

    def tell(self) -> int:
        return self.fh.tell()


def make_bomb(path: Path, megabytes: int, newlines: bool) -> Path:
    block = (b"A" * 1023 + b"\n") * 1024 if newlines else b"\0" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(megabytes):
            out.write(block)
    return path


@pytest.mark.parametrize("newlines", [False, True])
def test_gzip_bomb_stops_at_the_cap(tmp_path: Path, newlines: bool) -> None:
    bomb = make_bomb(tmp_path / "bomb.gz", 300, newlines)
    cap = 4 << 20
    for reader in ("lines", "upload"):
        raw = CountingReader(bomb)
        tracemalloc.start()
        if reader == "lines":
            stream, compressed = open_stream(raw)  # type: ignore[arg-type]
            assert compressed
            with pytest.raises(FileTooLarge):
                for _ in iter_lines(stream, cap, 100_000):
                    pass
        else:
            check = inspect_upload(raw, cap)  # type: ignore[arg-type]
            assert check.code == "FILE_TOO_LARGE"
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # 300 MB inflated would be needed to read it all; we stop near the 4 MB cap.
        assert raw.consumed < bomb.stat().st_size / 10, (reader, raw.consumed)
        assert peak < 8 << 20, (reader, peak)


@pytest.mark.django_db
def test_gzip_bomb_submission_is_rejected(stored: Callable[..., Submission], tmp_path: Path,
                                          settings) -> None:
    settings.KBPO_SUBMISSION_MAX_BYTES = 2 << 20
    data = make_bomb(tmp_path / "b.gz", 50, True).read_bytes()
    sub = stored(data)
    run_ingestion(sub.pk)
    sub.refresh_from_db()
    assert sub.state == "rejected"
    assert "FILE_TOO_LARGE" in {p["code"] for p in sub.report}


def test_entity_index_switches_to_per_document_lookup() -> None:
    ent = Entity(1)
    spans = [(doc, b, b + 3) for doc in (7, 8, 9) for b in range(0, 60, 4)]
    for doc, b, e in spans:
        ent.add((doc << 64) | (b << 32) | e)
    assert isinstance(ent.mentions, dict)
    got = sorted(((m >> 32) & ((1 << 32) - 1), m & ((1 << 32) - 1)) for m in ent.in_document(8))
    assert got == [(b, e) for d, b, e in spans if d == 8]
    assert ent.first() == (7 << 64) | 3


@pytest.mark.django_db
def test_prefetched_documents_equal_fetched_ones(corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """`DocumentIndex.prefetch` loads texts and sentences a few documents a query; the
    cache then holds what one-by-one fetching gives, even past its size (LRU)."""
    from submissions import indexes

    one = indexes.DocumentIndex(corpus.pk)
    pks = [pk for pk, _ in one.ids.values()]
    expected = {pk: (one.text(pk), one.sentence_of(pk, 0, 1)) for pk in pks}
    assert len(pks) == 2 and all(s is not None for _, s in expected.values())
    monkeypatch.setattr(indexes, "PREFETCH", 1)
    for cache in (1, 5):
        monkeypatch.setattr(indexes, "DOC_CACHE", cache)
        many = indexes.DocumentIndex(corpus.pk)
        many.prefetch(pks, texts=True, sentences=True)
        assert len(many._texts) == len(many._sentences) == min(cache, len(pks))
        assert {pk: (many.text(pk), many.sentence_of(pk, 0, 1)) for pk in pks} == expected
