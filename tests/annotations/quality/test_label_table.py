"""The corpus's labels kept between reads (annotations/quality/label_table.py): every
write path stamps the rows it touches, a later read takes only those, and what it
returns always equals a read of every row — after inserts, updates, deletes, and a
writer that commits after a read began."""

from __future__ import annotations

import numpy as np
import psycopg2
import pytest
from django.db import connection

from annotations.models import PairLabel
from annotations.quality import label_table as lt
from tests.factories import make_corpus, make_pair, span

pytestmark = pytest.mark.django_db(transaction=True)  # every write commits, as in service


def _pairs(tag: str) -> list:
    corpus = make_corpus(tag)
    doc = corpus.documents.get(doc_id="D1")
    places = [("Ada Byron", 0, "London", 0), ("Ada Byron", 1, "Tom King", 0),
              ("Ada Byron", 1, "Paris", 0), ("Tom King", 0, "Paris", 0),
              ("Tom King", 1, "Acme", 0), ("Acme", 1, "London", 1)]
    return [make_pair(doc, span(doc, s, i), "PER", span(doc, o, j), "ORG")
            for s, i, o, j in places]


def _label(pair, predicates: list[str], p: float | None = None) -> PairLabel:
    post = {} if p is None else {predicates[0]: p, "no_relation": round(1 - p, 6)}
    return PairLabel.objects.create(
        pair=pair, predicates=predicates, majority=predicates, support=1.0, n_answers=3,
        posterior=post, prior={k: 0.3 for k in post}, type_prior={k: 0.4 for k in post})


def _same(a: lt.LabelTable, b: lt.LabelTable) -> None:
    """Equal as labels: the same arrays, texts and names compared by value."""
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.pairs, b.pairs)
    assert np.array_equal(a.questions, b.questions)
    for field in ("predicates", "majority"):
        assert [a.texts[i] for i in getattr(a, field)] == [b.texts[i] for i in getattr(b, field)]
    assert np.array_equal(a.soft_ids, b.soft_ids)
    assert [a.names[i] for i in a.soft_names] == [b.names[i] for i in b.soft_names]
    for field in ("soft_probs", "soft_priors", "soft_type_priors"):
        assert np.array_equal(getattr(a, field), getattr(b, field), equal_nan=True)


def _fresh(corpus_id: int) -> lt.LabelTable:
    lt.forget(corpus_id)
    return lt.label_table(corpus_id)


def _since(table: lt.LabelTable, corpus_id: int) -> int:
    """The rows a read after ``table`` must fetch: those stamped at or above its horizon
    (another transaction running anywhere on the server holds the horizon back, so this
    is not always just the rows this test wrote)."""
    return PairLabel.objects.filter(pair__document__corpus_id=corpus_id,
                                    changed_xid__gte=table.horizon).count()


def _reads(monkeypatch) -> list[int]:
    """The number of rows each `_build` call is given (what each read fetched)."""
    sizes: list[int] = []
    build = lt._build

    def counting(rows, *args):
        sizes.append(len(rows))
        return build(rows, *args)

    monkeypatch.setattr(lt, "_build", counting)
    return sizes


def test_every_write_path_stamps_the_row_and_a_read_takes_only_those(monkeypatch) -> None:
    pairs = _pairs("lt-paths")
    corpus_id = pairs[0].document.corpus_id
    labels = [_label(p, ["org:founded_by"], 0.8) for p in pairs[:4]]
    first = lt.label_table(corpus_id)
    assert len(first) == 4 and len(first.soft_ids) == 8
    stamps = dict(PairLabel.objects.values_list("pk", "changed_xid"))
    assert all(v is not None for v in stamps.values())
    sizes = _reads(monkeypatch)
    want = _since(first, corpus_id)
    again = lt.label_table(corpus_id)
    assert len(again) == 4 and sizes == [want]  # usually 0: nothing written since

    # ORM save, bulk_update, queryset update, raw SQL and a new row: each is re-read.
    labels[0].predicates = ["no_relation"]
    labels[0].save()
    labels[1].posterior = {"org:founded_by": 0.25}
    PairLabel.objects.bulk_update([labels[1]], ["posterior"])
    PairLabel.objects.filter(pk=labels[2].pk).update(majority=["per:title"])
    with connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{PairLabel._meta.db_table}" SET prior = %s WHERE id = %s',
                       ['{"org:founded_by": 0.5, "no_relation": 0.5}', labels[3].pk])
    _label(pairs[4], ["per:title", "org:founded_by"], 0.6)
    moved = dict(PairLabel.objects.values_list("pk", "changed_xid"))
    assert all(moved[lab.pk] > stamps[lab.pk] for lab in labels)
    sizes.clear()
    want = _since(again, corpus_id)
    table = lt.label_table(corpus_id)
    assert sizes == [want] and want >= 5  # the five rows written (usually only they)
    _same(table, _fresh(corpus_id))
    pos = table.positions(np.asarray([labels[1].pk]))[0]
    assert table.soft_probs[table.soft_ids == labels[1].pk].tolist() == [0.25]
    assert table.texts[table.predicates[pos]] == '["org:founded_by"]'
    assert table.soft_priors[table.soft_ids == labels[3].pk].tolist() == [0.5, 0.5]
    # A posterior emptied by an update leaves no rows behind.
    PairLabel.objects.filter(pk=labels[0].pk).update(posterior={})
    table = lt.label_table(corpus_id)
    assert labels[0].pk not in table.soft_ids
    _same(table, _fresh(corpus_id))


def test_a_deleted_label_is_noticed_and_every_row_read_again(monkeypatch) -> None:
    pairs = _pairs("lt-delete")
    corpus_id = pairs[0].document.corpus_id
    labels = [_label(p, ["org:founded_by"], 0.7) for p in pairs[:3]]
    kept = lt.label_table(corpus_id)
    sizes = _reads(monkeypatch)
    labels[1].delete()
    want = _since(kept, corpus_id)
    table = lt.label_table(corpus_id)
    assert sizes == [want, 2]  # what was stamped since, then a kept label missing: all rows
    assert labels[1].pk not in table.ids and labels[1].pk not in table.soft_ids
    _same(table, _fresh(corpus_id))
    # Deleted and replaced (a count would match): the new row is read as new.
    labels[0].delete()
    _label(pairs[0], ["per:title"], 0.9)
    _same(lt.label_table(corpus_id), _fresh(corpus_id))


def test_kept_labels_are_looked_for_only_after_a_deletion(monkeypatch) -> None:
    """The deletion count (a trigger's) moves with a delete alone: only then are the
    kept ids looked for one by one."""
    pairs = _pairs("lt-count")
    corpus_id = pairs[0].document.corpus_id
    labels = [_label(p, ["org:founded_by"], 0.7) for p in pairs[:3]]
    lt.label_table(corpus_id)
    looked: list[bool] = []
    gone = lt.kept_rows_gone

    def spy(table, kept, read, horizon, deleted=True):
        looked.append(deleted)
        return gone(table, kept, read, horizon, deleted)

    monkeypatch.setattr(lt, "kept_rows_gone", spy)
    _label(pairs[3], ["per:title"], 0.9)
    PairLabel.objects.filter(pk=labels[0].pk).update(posterior={})
    lt.label_table(corpus_id)
    labels[1].delete()
    table = lt.label_table(corpus_id)
    assert looked == [False, True] and labels[1].pk not in table.ids
    lt.label_table(corpus_id)
    assert looked == [False, True, False]
    _same(table, _fresh(corpus_id))


def test_a_label_moved_to_another_corpus_leaves_the_kept_table() -> None:
    pairs, elsewhere = _pairs("lt-moved"), _pairs("lt-other")
    corpus_id = pairs[0].document.corpus_id
    labels = [_label(p, ["org:founded_by"], 0.7) for p in pairs[:3]]
    _label(elsewhere[0], ["per:title"], 0.8)
    lt.label_table(corpus_id)
    lt.label_table(elsewhere[0].document.corpus_id)
    PairLabel.objects.filter(pk=labels[2].pk).update(pair=elsewhere[1])
    table = lt.label_table(corpus_id)
    assert labels[2].pk not in table.ids
    _same(table, _fresh(corpus_id))
    other = lt.label_table(elsewhere[0].document.corpus_id)
    assert labels[2].pk in other.ids
    _same(other, _fresh(elsewhere[0].document.corpus_id))


def test_a_writer_that_commits_after_a_read_is_seen_by_the_next_read() -> None:
    """Two writers in their own connections: A writes first (lower transaction id) and
    commits late; B writes after it and commits before the read. A read that kept the
    largest stamp it saw would skip A's row for ever; the horizon does not."""
    pairs = _pairs("lt-late")
    corpus_id = pairs[0].document.corpus_id
    labels = [_label(p, ["org:founded_by"], 0.7) for p in pairs[:3]]
    lt.label_table(corpus_id)
    params = connection.get_connection_params()
    late, early = psycopg2.connect(**params), psycopg2.connect(**params)
    table_name = PairLabel._meta.db_table
    try:
        with late.cursor() as a:
            a.execute(f'UPDATE "{table_name}" SET predicates = %s WHERE id = %s',
                      ['["per:title"]', labels[0].pk])  # A: open, holds the lower xid
        with early.cursor() as b:
            b.execute(f'UPDATE "{table_name}" SET predicates = %s WHERE id = %s',
                      ['["no_relation"]', labels[1].pk])
        early.commit()  # B: committed before the read
        seen = lt.label_table(corpus_id)
        text_of = {int(i): seen.texts[t] for i, t in zip(seen.ids, seen.predicates,
                                                        strict=True)}
        assert text_of[labels[0].pk] == '["org:founded_by"]'  # A not committed yet
        assert text_of[labels[1].pk] == '["no_relation"]'
        late.commit()
        after = lt.label_table(corpus_id)
        text_of = {int(i): after.texts[t] for i, t in zip(after.ids, after.predicates,
                                                         strict=True)}
        assert text_of[labels[0].pk] == '["per:title"]'
        _same(after, _fresh(corpus_id))
    finally:
        late.close()
        early.close()


def test_scoring_reads_of_the_table_equal_the_rows() -> None:
    """load_labels and load_soft_labels from a kept table, against the rows."""
    from estimation.data import PREDICATE_CODE, load_labels, load_soft_labels

    pairs = _pairs("lt-scoring")
    corpus = pairs[0].document.corpus
    made = [_label(pairs[0], ["org:founded_by"], 0.8), _label(pairs[1], ["no_relation"]),
            _label(pairs[2], ["per:title", "org:founded_by"], 0.6),
            _label(pairs[3], ["org:founded_by"], 0.9)]
    PairLabel.objects.filter(pk=made[3].pk).update(posterior={"org:unknown": 0.5,
                                                              "org:founded_by": 0.5})
    lt.label_table(corpus.pk)
    _label(pairs[4], ["per:title"], 0.4)  # read by the next call only
    got_pairs, got_preds = load_labels(corpus)
    want = []
    for lab in PairLabel.objects.filter(pair__document__corpus=corpus).order_by("pair_id"):
        codes = sorted(PREDICATE_CODE[p] for p in lab.predicates if p in PREDICATE_CODE)
        want += [(lab.pair_id, c) for c in (codes if codes else [-1])]
    assert list(zip(got_pairs.tolist(), got_preds.tolist(), strict=True)) == want
    soft = load_soft_labels(corpus)
    rows = []
    for lab in PairLabel.objects.filter(pair__document__corpus=corpus).order_by("pair_id"):
        for name, p in lab.posterior.items():
            code = -1 if name == "no_relation" else PREDICATE_CODE.get(name)
            if code is not None:
                rows.append((lab.pair_id, code, p, lab.prior.get(name, 0.5),
                             lab.type_prior.get(name, np.nan)))
    got = list(zip(soft.pairs.tolist(), soft.predicates.tolist(), soft.probs.tolist(),
                   soft.priors.tolist(), soft.type_priors.tolist(), strict=True))
    assert [r[:4] for r in got] == [r[:4] for r in rows]
    assert np.allclose([r[4] for r in got], [r[4] for r in rows], equal_nan=True)
