"""The correction's replicate rows kept per pair between runs
(estimation/correction_rows.py): a pair's rows are computed again when anything they
come from changed — its label's question or answers, a control answer set on it, an
answer that stops counting, a refit — and every load equals one from scratch."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from annotations.models import PairLabel, Question, Response
from estimation import correction, scoring
from estimation.data import load_corpus_data
from tests.estimation.scoring.scoring_world import World
from tests.estimation.scoring.test_correction_fit import _answer, stored_fit_counting_posteriors

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql",
                                reason="rows are kept with the answers, kept only on Postgres")

FIELDS = ("pairs", "predicates", "probs", "priors", "type_priors")


def _identical(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(getattr(x, f), getattr(y, f), equal_nan=True)
        and getattr(x, f).dtype == getattr(y, f).dtype for x, y in zip(a, b, strict=True)
        for f in FIELDS)


@pytest.fixture
def kept(world: World, settings, monkeypatch):
    """Loads through the kept rows, each checked against a load from scratch; yields a
    load that returns (replicate rows, questions computed per replicate)."""
    computed = stored_fit_counting_posteriors(world, settings, monkeypatch, growth=10.0)

    def load() -> tuple[list, list[int]]:
        computed.clear()
        data = load_corpus_data(world.corpus)
        assert data.extra["correction_fit"] is None  # the stored parameters serve
        got, n = data.soft_replicates, list(computed)
        correction.forget_answers()
        assert _identical(got, load_corpus_data(world.corpus).soft_replicates)
        computed.clear()
        assert _identical(got, load_corpus_data(world.corpus).soft_replicates)
        assert computed == []  # the scratch load's rows are kept
        return got, n

    yield load
    correction.forget_answers()


@pytest.mark.django_db
def test_kept_rows_follow_every_change_of_their_inputs(world: World, kept) -> None:
    first, n = kept()
    assert n == []  # computed after the refit, for the run after it
    # A control answer set on a labelled question: that pair alone, now certain.
    born = PairLabel.objects.get(pair=world.pairs["born"]).question
    Question.objects.filter(pk=born.pk).update(control_answer=["no_relation"])
    control, n = kept()
    assert n == [1] * 4 and not _identical(control, first)
    Question.objects.filter(pk=born.pk).update(control_answer=None)
    back, n = kept()
    assert n == [1] * 4 and _identical(back, first)
    # A label moved to a new question: that question alone.
    _answer(world, ["a", "b"])
    moved = Response.objects.order_by("pk").last().question
    PairLabel.objects.filter(pair=world.pairs["born"]).update(question=moved)
    grown, n = kept()
    assert n == [1] * 4
    # A label removed (a recount): its pair's rows go, nothing is computed.
    PairLabel.objects.filter(pair=world.pairs["wed"]).delete()
    fewer, n = kept()
    assert n == [] and world.pairs["wed"].pk not in fewer[0].pairs
    assert world.pairs["wed"].pk in grown[0].pairs
    # A rejected assignment's answer stops counting (the stored fit's answers are
    # unchanged, so its parameters still serve): the answers are read again, and the
    # rows kept with them dropped.
    Response.objects.filter(assignment__external_id="as2-b").update(counted=False)
    rejected, n = kept()
    assert n == [2] * 4 and not _identical(rejected, fewer)


@pytest.mark.django_db
def test_a_refit_computes_every_pair_again_for_the_next_run(world: World, kept, settings,
                                                            monkeypatch) -> None:
    kept()
    _answer(world, ["a", "b"])
    settings.KBPO_SOFT_LABEL_REFIT_GROWTH = 0.01
    computed: list[int] = []
    real = correction._stored_rows

    def spy(*args):
        computed.append(len(args[7]))  # the labelled questions' rows
        return real(*args)

    monkeypatch.setattr(correction, "_stored_rows", spy)
    scoring.recompute(world.corpus)  # refitted and stored; its rows computed for the next
    assert computed == [3]
    settings.KBPO_SOFT_LABEL_REFIT_GROWTH = 10.0
    _, n = kept()  # equal to a load from scratch under the stored parameters
    assert n == []
