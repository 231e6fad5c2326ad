"""The correction's relation answers kept in the worker between recomputes
(estimation/correction.py `_answers`): only rows written since the last read are read
(Response.changed_xid, stamped by a trigger); an edited, deleted or late-committed lower
row forces a full re-read, and every read equals a read from scratch."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from annotations.crowd.verdicts import reject_assignment
from annotations.models import (
    Assignment,
    Backend,
    CrowdWorker,
    PairLabel,
    Question,
    Response,
    TaskKind,
)
from estimation import correction
from tests.estimation.scoring.scoring_world import World
from tests.estimation.scoring.test_correction_fit import _answer
from tests.estimation.scoring.test_report_crowd import _controls, _crowd
from tests.factories import make_corpus, make_pair, span

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql",
                                reason="answers are kept only where rows are stamped")


def _fresh(world: World) -> correction._Answers:
    """The answers read from scratch (nothing kept), leaving the kept state as it was."""
    kept = dict(correction._SEEN)
    correction.forget_answers()
    try:
        return correction._answers(world.corpus)
    finally:
        correction._SEEN.clear()
        correction._SEEN.update(kept)


def _equal(a: correction._Answers, b: correction._Answers) -> bool:
    return (np.array_equal(a.items, b.items) and np.array_equal(a.workers, b.workers)
            and a.keys == b.keys and a.qids == b.qids and a.wids == b.wids
            and dict(a.types) == dict(b.types))


def _read(world: World, monkeypatch: pytest.MonkeyPatch) -> tuple[correction._Answers, bool]:
    """The answers as `_answers` reads them, and whether it used the kept rows."""
    used = []
    kept = correction._kept

    def spy(corpus_id: int, *args) -> correction._Seen | None:
        out = kept(corpus_id, *args)
        used.append(out is not None)
        return out

    monkeypatch.setattr(correction, "_kept", spy)
    out = correction._answers(world.corpus)
    monkeypatch.setattr(correction, "_kept", kept)
    return out, used == [True]


@pytest.fixture
def answered(world: World) -> World:
    _crowd(world)
    correction.forget_answers()
    yield world
    correction.forget_answers()


@pytest.mark.django_db
def test_new_answers_are_read_on_top_of_the_kept_ones(answered: World, monkeypatch) -> None:
    first, used = _read(answered, monkeypatch)
    assert not used and len(first.keys) == 9
    again, used = _read(answered, monkeypatch)
    assert used and _equal(again, first)
    _answer(answered, ["a", "d"])  # a new question, and a worker the kept rows lack
    grown, used = _read(answered, monkeypatch)
    assert used and len(grown.keys) == 11 and len(grown.wids) == 4
    assert _equal(grown, _fresh(answered))


@pytest.mark.django_db
def test_only_new_questions_pair_types_are_read(answered: World, monkeypatch) -> None:
    """The pair types `offered` needs are kept with the answers: a read that adds a
    question asks the database for that question's types alone."""
    asked: list[list[int]] = []
    read_types = correction.pair_types

    def spy(qids: list[int]) -> dict:
        asked.append(list(qids))
        return read_types(qids)

    monkeypatch.setattr(correction, "pair_types", spy)
    first, _ = _read(answered, monkeypatch)
    assert asked == [first.qids] and len(first.qids) == 3
    assert set(first.types) == set(first.qids) and None not in first.types.values()
    _read(answered, monkeypatch)
    assert len(asked) == 1  # nothing new: nothing asked
    _answer(answered, ["a", "d"])
    grown, used = _read(answered, monkeypatch)
    assert used and asked[1:] == [grown.qids[3:]] and len(grown.qids) == 4
    assert _equal(grown, _fresh(answered))


@pytest.mark.django_db
def test_an_edited_answer_forces_a_re_read(answered: World, monkeypatch) -> None:
    _read(answered, monkeypatch)
    row = Response.objects.order_by("pk").first()
    Response.objects.filter(pk=row.pk).update(choices=["no_relation"])
    edited, used = _read(answered, monkeypatch)
    assert not used
    assert edited.keys[0] == "no_relation" and _equal(edited, _fresh(answered))


@pytest.mark.django_db
def test_a_deleted_answer_forces_a_re_read(answered: World, monkeypatch) -> None:
    _read(answered, monkeypatch)
    Response.objects.order_by("pk")[3].delete()
    fewer, used = _read(answered, monkeypatch)
    assert not used and len(fewer.keys) == 8 and _equal(fewer, _fresh(answered))


@pytest.mark.django_db
def test_an_answer_moved_to_another_corpus_forces_a_re_read(answered: World,
                                                             monkeypatch) -> None:
    _read(answered, monkeypatch)
    other = make_corpus("moved-to")
    doc = other.documents.get(doc_id="D1")
    pair = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    question = Question.objects.create(corpus=other, kind=TaskKind.RELATION, pair=pair)
    Response.objects.filter(pk=Response.objects.order_by("pk")[2].pk).update(
        question=question)
    fewer, used = _read(answered, monkeypatch)
    assert not used and len(fewer.keys) == 8 and _equal(fewer, _fresh(answered))


@pytest.mark.django_db
def test_a_lower_id_committed_late_forces_a_re_read(answered: World, monkeypatch) -> None:
    # A transaction that took a lower id commits after a read that saw a higher one:
    # the row appears below the watermark.
    rows = list(Response.objects.order_by("pk"))
    late = rows[4]
    late_values = {f.attname: getattr(late, f.attname) for f in Response._meta.concrete_fields}
    late.delete()
    _read(answered, monkeypatch)
    Response.objects.create(**late_values)
    assert late_values["id"] < rows[-1].pk
    read, used = _read(answered, monkeypatch)
    assert not used and len(read.keys) == 9 and _equal(read, _fresh(answered))


@pytest.mark.django_db
def test_a_moved_worker_forces_a_re_read(answered: World, monkeypatch) -> None:
    _read(answered, monkeypatch)
    other = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id="z")
    row = Response.objects.order_by("pk").last()
    Assignment.objects.filter(pk=row.assignment_id).update(worker=other)
    Response.objects.filter(pk=row.pk).update(worker=other)
    moved, used = _read(answered, monkeypatch)
    assert not used and len(moved.wids) == 4 and _equal(moved, _fresh(answered))


@pytest.mark.django_db
def test_a_full_recompute_forgets_the_kept_answers(answered: World, settings) -> None:
    from estimation import scoring

    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    scoring.recompute(answered.corpus)
    assert answered.corpus.pk in correction._SEEN
    seen = correction._SEEN[answered.corpus.pk]
    scoring.recompute(answered.corpus, full=True)
    assert correction._SEEN[answered.corpus.pk] is not seen  # read again from scratch


def _close(a: object, b: object) -> bool:
    """Equal, floats to 1e-12 (the shares sum in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b


@pytest.mark.django_db
def test_crowd_accuracy_on_the_read_answers_is_the_read_from_scratch(answered: World,
                                                                     settings) -> None:
    """The recompute hands the correction's answers to crowd_accuracy: the same section
    as crowd_accuracy reading them itself, also after an edited answer and a new one."""
    from annotations.quality import accuracy
    from estimation import scoring

    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    _controls(answered)  # their known answers come with the read answers too
    for change in ("none", "edit", "new"):
        if change == "edit":
            # An answer naming two things: P(right) is the smaller of their probabilities.
            first = Response.objects.order_by("pk").first()
            Response.objects.filter(pk=first.pk).update(
                choices=[*first.choices, "no_relation"])
        elif change == "new":
            # A new question on "born" answered by a known and a new worker, its label
            # moved onto it (the old question's three answers leave the label).
            _answer(answered, ["a", "d"])
            PairLabel.objects.filter(pair=answered.pairs["born"]).update(
                question=Response.objects.order_by("pk").last().question)
        read: list = []
        correction.soft_label_replicates(answered.corpus, 8, {}, read=read)
        given = accuracy.crowd_accuracy(answered.corpus.pk, 0.9, read[0]).as_dict()
        own = accuracy.crowd_accuracy(answered.corpus.pk, 0.9).as_dict()
        assert _close(given, own), (change, given, own)
        run = scoring.recompute(answered.corpus)
        # The run adds the relations said too easily (none in three answers a pair).
        assert run.crowd.pop("weak_relations") == []
        assert _close(run.crowd, own), change
    assert own["agreement"]["answers"] == 8 and own["agreement"]["workers"] == 4
    assert own["controls"]["accuracy"]["answers"] > 0


@pytest.mark.django_db(transaction=True)
def test_committed_answers_are_read_alone_and_a_late_lower_id_is_not_lost(
        world: World, monkeypatch) -> None:
    """In committed transactions, as in service: a read fetches only the rows written
    since the last one; a writer holding a lower id that commits after a read that saw
    a higher one is read next time (everything read again), never skipped."""
    import psycopg2

    _crowd(world)
    correction.forget_answers()
    try:
        correction._answers(world.corpus)
        sizes: list[int] = []
        grown = correction._grown

        def counting(seen, rows, horizon):
            sizes.append(len(rows))
            return grown(seen, rows, horizon)

        monkeypatch.setattr(correction, "_grown", counting)
        horizon = correction._SEEN[world.corpus.pk].horizon
        _answer(world, ["a", "d"])  # two new answers, committed
        want = Response.objects.filter(changed_xid__gte=horizon).count()
        read, used = _read(world, monkeypatch)
        assert used and sizes == [want] and want >= 2  # usually just the two
        assert _equal(read, _fresh(world))

        # Writer A takes a lower id and holds it; B writes after it and commits first.
        x, y = (CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=n)
                for n in ("x", "y"))
        some = Response.objects.order_by("pk").first()
        insert = (f'INSERT INTO "{Response._meta.db_table}" (assignment_id, question_id, '
                  "worker_id, choices, extra, created_at) VALUES (%s, %s, %s, %s, '{}', now())")
        params = connection.get_connection_params()
        late, early = psycopg2.connect(**params), psycopg2.connect(**params)
        try:
            with late.cursor() as a:
                a.execute(insert, [some.assignment_id, some.question_id, x.pk,
                                   '["no_relation"]'])
            with early.cursor() as b:
                b.execute(insert, [some.assignment_id, some.question_id, y.pk,
                                   '["no_relation"]'])
            early.commit()
            read, used = _read(world, monkeypatch)
            assert used and len(read.keys) == 12  # B's answer on top of the kept ones
            late.commit()
        finally:
            late.close()
            early.close()
        read, used = _read(world, monkeypatch)
        assert not used and len(read.keys) == 13  # A's lower id: all read again
        assert _equal(read, _fresh(world))
    finally:
        correction.forget_answers()


def _reject(worker: str, capture) -> None:
    """Reject the worker's assignment as the review or an operator does (its answers
    stay stored, no longer counted: annotations/crowd/discount.py)."""
    with capture(execute=True):
        assert reject_assignment(Assignment.objects.get(external_id=f"as-{worker}"),
                                 "random clicks")
    assert not Response.objects.filter(worker__external_id=worker, counted=True).exists()


@pytest.mark.django_db
def test_a_rejected_assignments_answers_leave_the_kept_ones(
        answered: World, monkeypatch, django_capture_on_commit_callbacks) -> None:
    first, _ = _read(answered, monkeypatch)
    c = CrowdWorker.objects.get(external_id="c").pk
    assert len(first.keys) == 9 and c in first.wids
    _reject("c", django_capture_on_commit_callbacks)
    # An UPDATE of kept rows (stamped by the trigger): everything is read again.
    after, used = _read(answered, monkeypatch)
    assert not used and len(after.keys) == 6 and c not in after.wids
    assert "no_relation" not in after.keys  # c's dissent on "born" is gone
    assert _equal(after, _fresh(answered))
    again, used = _read(answered, monkeypatch)
    # Kept from now on: the count is of counted answers too (else every read would
    # find one too many and read everything again).
    assert used and _equal(again, after)


@pytest.mark.django_db
def test_a_rejection_hidden_by_as_many_new_answers_is_still_seen(
        answered: World, monkeypatch, django_capture_on_commit_callbacks) -> None:
    """Three answers stop counting and three new ones come in between two reads: the
    corpus holds as many counted answers as were kept, yet the rejected ones go."""
    _read(answered, monkeypatch)
    _reject("c", django_capture_on_commit_callbacks)
    _answer(answered, ["x", "y", "z"])
    assert Response.objects.filter(counted=True).count() == 9
    after, used = _read(answered, monkeypatch)
    c = CrowdWorker.objects.get(external_id="c").pk
    assert not used and len(after.keys) == 9 and c not in after.wids
    assert _equal(after, _fresh(answered))
