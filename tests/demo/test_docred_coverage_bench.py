"""bench/docred_coverage.py, the DocRED world's coverage study over seeds: its in-memory
world is the one `docred_native.generate` writes, its trial recovers the truth from a
perfect crowd, and it skips cleanly without the data file."""

from __future__ import annotations

import importlib.util
import json
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from kbpo.demo.world.docred_native import generate, read_source

from .docred_source import written_source

BENCH = Path(__file__).resolve().parents[2] / "bench" / "docred_coverage.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docred_coverage", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclass looks its module up there)
    spec.loader.exec_module(mod)
    return mod


def test_the_in_memory_world_is_generate_s(tmp_path: Path) -> None:
    bench = _bench()
    source = written_source(tmp_path)
    generate(source, tmp_path / "w", docs=30, systems=3, seed=4)
    truth = json.loads((tmp_path / "w" / "truth.json").read_text())["systems"]
    w = bench.build_world(read_source(source)[1], 4, 30, 3)
    for k, name in enumerate(w.names):
        t = truth[name]["instance"]  # (to 6 decimals)
        assert w.sizes[k] == t["instances"]
        assert w.true_p[k] == pytest.approx(t["precision"], abs=5e-7)
        assert w.true_r[k] == pytest.approx(t["recall"], abs=5e-7)


def test_a_perfect_crowd_gives_the_truth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    bench = _bench()
    monkeypatch.setitem(bench.CROWD, "error", 0.0)
    monkeypatch.setitem(bench.CROWD, "spammers", 0.0)
    w = bench.build_world(read_source(written_source(tmp_path))[1], 3, 30, 3)
    out = bench.trial(w, 3, 60, 0, "all")
    # Every document's gold is the exhaustive sample: simple recall is exact.
    r = out[("recall", "simple")]
    assert r[:, 0] == pytest.approx(w.true_r, abs=1e-9)
    # Joint precision: within 4 standard errors read off its own 90% interval (a
    # calibrated interval misses by that much with chance 6e-5 per system).
    p = out[("precision", "joint")]
    se = (p[:, 2] - p[:, 1]) / (2 * 1.645)
    assert np.all(np.abs(p[:, 0] - w.true_p) <= 4 * se + 1e-9), (p, w.true_p)


def test_it_skips_without_the_data_file(tmp_path: Path, capsys: pytest.CaptureFixture
                                        ) -> None:
    assert _bench().main(["--source", str(tmp_path / "absent.json"), "--seeds", "2"]) == 0
    assert "skipped" in capsys.readouterr().out


def test_costs_charge_each_pair_to_the_first_system_that_draws_it() -> None:
    bench = _bench()
    draws = {"a": np.array([0, 1, 1, 2]), "b": np.array([2, 3])}
    out = bench.costs(["a", "b"], draws, np.array([0, 1, 2, 3]), np.array([3, 4, 5, 3]))
    # a: pairs 0-2, 12 answers: one HIT of 3 questions x 3 assignments, one of the 2
    # with a 4th answer, one of the pair with a 5th; $0.05 a question plus MTurk's 20%.
    # b: pair 3 alone is new (pair 2 is a's), one question x 3 assignments.
    assert [row[:4] for row in out] == [(4, 3, 3, 12), (2, 2, 1, 3)]
    assert [row[4] for row in out] == [Decimal("0.72"), Decimal("0.18")]
