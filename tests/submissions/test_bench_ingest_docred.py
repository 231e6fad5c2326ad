"""bench/bench_ingest.py --format docred: its 50,000-prediction file is what the issue
asks to time, so it must be a valid DocRED result file of distinct predictions (every
one accepted: the time is of ingesting them, not of refusing them)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from kbpo.core.schemas import DOCRED, get_schema
from kbpo.demo.world.docred_native import gold_facts, read_source
from tests.demo.docred_source import written_source

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_ingest.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ingest", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_docred_result_file_is_valid_distinct_and_holds_the_gold(tmp_path: Path) -> None:
    source = written_source(tmp_path)
    out = tmp_path / "pred.json"
    assert _bench().write_docred_predictions(source, out, 500) == 500
    rows = json.loads(out.read_text())
    docs = {d.title: d for d in read_source(source)[1]}
    relations = get_schema(DOCRED).relations
    keys = {(r["title"], r["h_idx"], r["t_idx"], r["r"]) for r in rows}
    assert len(keys) == len(rows) == 500
    for title, h, t, r in keys:
        n = len(docs[title].entities)
        assert 0 <= h < n and 0 <= t < n and h != t and r in relations
    parsed = list(docs.values())
    gold = {(parsed[i].title, h, t, r)
            for i, h, t, r in gold_facts(parsed, frozenset(relations))}
    assert gold <= keys
