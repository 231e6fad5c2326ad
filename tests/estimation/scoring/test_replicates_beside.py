"""The noise correction's replicates run on a thread beside the final estimate
(estimation/beside.py, KBPO_SCORE_THREADS): the same scores as one after the other, an
error on either side reaches the caller, and nothing is left running."""

from __future__ import annotations

import threading
import time
from unittest import mock

import numpy as np
import pytest

from estimation import beside as beside_module
from estimation import instance_cache, scoring
from estimation.beside import Beside, SharedReplicates
from estimation.core import SCHEMES
from estimation.core.noise import correction_variance
from estimation.data import load_corpus_data
from estimation.models import ScoreRun, SystemScore
from tests.estimation.scoring.scoring_world import World
from tests.estimation.scoring.test_report_crowd import _crowd


def _rows(run: ScoreRun) -> dict:
    return {(r.pop("submission_id"), r.pop("scheme")): r for r in
            SystemScore.objects.filter(run=run).values(*scoring._SCORE_FIELDS)}


@pytest.mark.django_db
def test_the_replicates_beside_the_estimate_give_the_serial_scores(world: World,
                                                                   settings) -> None:
    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    settings.KBPO_SCORE_THREADS = 1
    said: list[str] = []
    serial = scoring.recompute(world.corpus, progress=said.append)
    assert any("correction replicates before it" in m for m in said)
    rows = _rows(serial)
    # The replicates move the estimates: there is a correction to get right.
    data = load_corpus_data(world.corpus)
    evidence, plan = data.evidence_and_plan("instance")
    variance = correction_variance(data.population, evidence, data.soft_replicates,
                                   "instance", SCHEMES, 0.9, plan)
    assert len(data.soft_replicates) == 8 and any(v.max() > 0 for v in variance.values())
    settings.KBPO_SCORE_THREADS = 2
    said.clear()
    instance_cache.clear(world.corpus)  # nothing kept from the serial run
    beside = scoring.recompute(world.corpus, progress=said.append, full=True)
    assert any("correction replicates beside it" in m for m in said)
    # Every row equal to the serial run's, to the last bit: nothing new was stored.
    assert beside.pk == serial.pk and ScoreRun.objects.count() == 1
    assert _rows(beside) == rows


def test_unthreaded_runs_at_once_and_threaded_beside() -> None:
    order: list[str] = []
    with Beside(False) as beside:
        got = beside.run(lambda x: order.append("work") or x * 2, 21)
        order.append("caller")
        assert got() == 42
    assert order == ["work", "caller"]
    started, go = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        assert go.wait(10)
        return threading.current_thread().name

    with Beside(True) as beside:
        got = beside.run(work)
        assert started.wait(10)  # it runs while the caller goes on
        go.set()
        assert got().startswith("kbpo-replicates")


def test_an_error_on_the_thread_reaches_the_caller() -> None:
    def fail() -> None:
        raise ValueError("replicate failed")

    with Beside(True) as beside:
        got = beside.run(fail)
        with pytest.raises(ValueError, match="replicate failed"):
            got()


def test_a_failing_caller_waits_for_the_thread() -> None:
    """The estimate failing leaves no replicate running behind the failed run."""
    finished = threading.Event()

    def slow() -> None:
        time.sleep(0.2)
        finished.set()

    with pytest.raises(RuntimeError), Beside(True) as beside:
        beside.run(slow)
        raise RuntimeError("estimate failed")
    assert finished.is_set()


@pytest.mark.django_db
def test_the_caller_shares_the_replicates_left_and_gets_the_same_variance(
        world: World, settings) -> None:
    """Once its estimate is done the caller takes replicates too (`SharedReplicates`):
    the variance is `correction_variance`'s to the bit, whoever computed which."""
    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    data = load_corpus_data(world.corpus)
    evidence, plan = data.evidence_and_plan("instance")
    serial = correction_variance(data.population, evidence, data.soft_replicates,
                                 "instance", SCHEMES, 0.9, plan)
    real = beside_module.replicate_estimates
    by: dict[int, str] = {}
    caller_took = threading.Event()

    def spy(pop, ev, soft, *args):
        k = next(i for i, s in enumerate(data.soft_replicates) if s is soft)
        by[k] = threading.current_thread().name
        if by[k].startswith("kbpo-replicates"):
            if k >= 1:  # the helper holds on until the caller has taken one
                assert caller_took.wait(10)
        else:
            caller_took.set()
        return real(pop, ev, soft, *args)

    with mock.patch.object(beside_module, "replicate_estimates", spy), \
            Beside(True) as beside:
        shared = SharedReplicates(data.population, evidence, data.soft_replicates,
                                  "instance", SCHEMES, 0.9, plan).start(beside)
        variance = shared.result()
    assert sorted(by) == list(range(8))
    assert by[0].startswith("kbpo-replicates")
    assert any(not name.startswith("kbpo-replicates") for name in by.values())
    assert variance.keys() == serial.keys()
    for key, v in serial.items():
        assert np.array_equal(variance[key], v), key


def test_a_failing_replicate_on_the_helper_reaches_the_caller() -> None:
    def fail(*args):
        raise ValueError("replicate failed")

    with mock.patch.object(beside_module, "replicate_estimates", fail), \
            Beside(True) as beside:
        shared = SharedReplicates(None, None, [object(), object()], "instance", ["instance"],
                                  0.9, None).start(beside)
        with pytest.raises(ValueError, match="replicate failed"):
            shared.result()
