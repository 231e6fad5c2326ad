"""The draws and exhaustive sample a process keeps between loads (estimation/data.py):
reused while their rows are unchanged, read again after an insert or delete (and an
edit of a gold relation), and always equal to a read from scratch."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from annotations.models import ExhaustiveDocument, GoldRelation, SampleDraw
from estimation import data
from estimation.data import load_corpus_data
from kbpo.core.models import Document
from submissions.models import RelationInstance
from tests.estimation.scoring.scoring_world import build_world
from tests.factories import make_pair, span

# Every write commits, as in service (a row's version is its writing transaction).
pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql",
                                 reason="kept only on Postgres (rows' versions)")]


def _loads(monkeypatch) -> tuple:
    """A load returning (draws, exhaustive sample) after checking it against a load
    from scratch, and the reads each made (draw reads, exhaustive reads)."""
    reads = {"draws": 0, "exhaustive": 0}
    load_draws, read_exhaustive = data._load_draws, data._read_exhaustive

    def counting_draws(*args):
        reads["draws"] += 1
        return load_draws(*args)

    def counting_exhaustive(*args):
        reads["exhaustive"] += 1
        return read_exhaustive(*args)

    monkeypatch.setattr(data, "_load_draws", counting_draws)
    monkeypatch.setattr(data, "_read_exhaustive", counting_exhaustive)

    def arrays(d) -> tuple:
        return ({k: v.tolist() for k, v in d.draws.items()},
                [a.tolist() for a in (d.exhaustive_pairs, d.exhaustive_preds,
                                      d.exhaustive_subjects)],
                None if d.exhaustive_docs is None else d.exhaustive_docs.tolist(),
                d.exhaustive_documents)

    def load(corpus) -> tuple[tuple, dict]:
        before = dict(reads)
        loaded = load_corpus_data(corpus)
        data.store_instance_cache(loaded)  # as a recompute does: the arrays' tokens stay
        got = arrays(loaded)
        made = {k: reads[k] - before[k] for k in reads}
        data.forget(corpus.pk)
        assert got == arrays(load_corpus_data(corpus))
        return got, made

    return load


def test_kept_draws_follow_their_rows(monkeypatch) -> None:
    world = build_world("kept-draws")
    load = _loads(monkeypatch)
    first, _ = load(world.corpus)
    again, made = load(world.corpus)
    assert again == first and made["draws"] == 0  # unchanged: not read
    insts = list(RelationInstance.objects.filter(submission=world.a).order_by("pk"))
    draw = SampleDraw.objects.create(submission=world.a, scheme="instance", index=10,
                                     instance=insts[0])
    more, made = load(world.corpus)
    assert made["draws"] == 1 and len(more[0][str(world.a.pk)]) == len(insts) + 1
    draw.delete()
    fewer, made = load(world.corpus)
    assert made["draws"] == 1 and fewer == first
    # Deleted and written again (a re-ingestion): new ids.
    draw.pk = None
    draw.save()
    again, made = load(world.corpus)
    assert made["draws"] == 1 and again == more


def test_kept_exhaustive_sample_follows_gold_pairs_and_documents(monkeypatch) -> None:
    world = build_world("kept-gold")
    load = _loads(monkeypatch)
    first, _ = load(world.corpus)
    again, made = load(world.corpus)
    assert again == first and made["exhaustive"] == 0
    doc = Document.objects.get(corpus=world.corpus, doc_id="D1")
    subj, obj = span(doc, "Acme", 1), span(doc, "London", 1)
    gold = GoldRelation.objects.create(document=doc, subject_begin=subj[0], subject_end=subj[1],
                                       object_begin=obj[0], object_end=obj[1],
                                       predicate="org:place_of_headquarters", subject_entity="acme")
    unmatched, made = load(world.corpus)
    assert made["exhaustive"] == 1 and unmatched[1][0][-1] < 0  # no pair of its spans
    pair = make_pair(doc, subj, "ORG", obj, "GPE")  # a new pair matches it
    matched, made = load(world.corpus)
    assert made["exhaustive"] == 1 and matched[1][0][-1] == pair.pk
    GoldRelation.objects.filter(pk=gold.pk).update(predicate="org:founded_by")
    edited, made = load(world.corpus)
    assert made["exhaustive"] == 1 and edited[1][1] != matched[1][1]
    gold.delete()
    gone, made = load(world.corpus)
    assert made["exhaustive"] == 1 and gone == first
    ExhaustiveDocument.objects.filter(corpus=world.corpus).update(
        state=ExhaustiveDocument.State.PLANNED)
    none, made = load(world.corpus)
    assert none[1] == [[], [], []] and np.isscalar(none[3]) and none[3] == 0
