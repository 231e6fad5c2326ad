"""A DocRED-format source for the real-text world's tests: the shared Re-DocRED dev split
when the workspace has it, else a small file written here (never a copy of the data).

The written documents exercise what real text does to ingestion: a family relation
labelled in both directions, a symmetric one, an entity mentioned twice in the sentence
that states the relation, a title with a comma, a MISC entity and a cross-sentence label.
"""

from __future__ import annotations

import json
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "redocred" / "dev_revised.json"


def _tokens(sentence: str) -> list[str]:
    return sentence.split()


def _m(name: list[str], sent: int, start: int, typ: str) -> dict:
    return {"name": " ".join(name), "sent_id": sent, "pos": [start, start + len(name)],
            "type": typ}


def _documents() -> list[dict]:
    s1 = _tokens("Marie Curie married Pierre Curie in Paris , and Marie Curie later taught there .")
    s2 = _tokens("Their daughter Irene Joliot - Curie was born in 1897 .")
    s3 = _tokens("Irene Joliot - Curie and her sister Eve Curie studied at the Sorbonne .")
    family = {
        "title": "Curie family",
        "sents": [s1, s2, s3],
        "vertexSet": [
            [_m(["Marie", "Curie"], 0, 0, "PER"), _m(["Marie", "Curie"], 0, 9, "PER")],
            [_m(["Pierre", "Curie"], 0, 3, "PER")],
            [_m(["Paris"], 0, 6, "LOC")],
            [_m(s2[2:6], 1, 2, "PER"), _m(s3[0:4], 2, 0, "PER")],
            [_m(["1897"], 1, 9, "TIME")],
            [_m(["Eve", "Curie"], 2, 7, "PER")],
            [_m(["Sorbonne"], 2, 12, "ORG")],
            [_m(["Nobel"], 0, 0, "MISC")],
        ],
        "labels": [
            {"h": 0, "t": 1, "r": "P26", "evidence": [0]},   # spouse
            {"h": 1, "t": 0, "r": "P26", "evidence": [0]},   # ... and back
            {"h": 3, "t": 0, "r": "P25", "evidence": [1]},   # mother: cross-sentence
            {"h": 0, "t": 3, "r": "P40", "evidence": [1]},   # child: cross-sentence
            {"h": 3, "t": 4, "r": "P569", "evidence": [1]},  # date of birth
            {"h": 5, "t": 3, "r": "P3373", "evidence": [2]},  # sibling, inverse order
            {"h": 3, "t": 5, "r": "P3373", "evidence": [2]},
            {"h": 5, "t": 6, "r": "P69", "evidence": [2]},   # schools attended
            {"h": 0, "t": 2, "r": "P551", "evidence": [0]},  # residence, Marie twice
            {"h": 0, "t": 7, "r": "P166", "evidence": [0]},  # award: unmapped
        ],
    }
    t1 = _tokens("Acme , Inc. was founded by Ada Byron in Lisbon in 1999 .")
    t2 = _tokens("Byron 's son Tom King later led Acme , Inc. and its unit Northwind .")
    company = {
        "title": "Acme, Inc.",
        "sents": [t1, t2],
        "vertexSet": [
            [_m(["Acme", ",", "Inc."], 0, 0, "ORG"), _m(["Acme", ",", "Inc."], 1, 7, "ORG")],
            [_m(["Ada", "Byron"], 0, 6, "PER"), _m(["Byron"], 1, 0, "PER")],
            [_m(["Lisbon"], 0, 9, "LOC")],
            [_m(["1999"], 0, 11, "TIME")],
            [_m(["Tom", "King"], 1, 3, "PER")],
            [_m(["Northwind"], 1, 13, "ORG")],
        ],
        "labels": [
            {"h": 0, "t": 1, "r": "P112", "evidence": [0]},  # founded by
            {"h": 0, "t": 2, "r": "P159", "evidence": [0]},  # headquarters
            {"h": 0, "t": 3, "r": "P571", "evidence": [0]},  # inception
            {"h": 1, "t": 4, "r": "P40", "evidence": [1]},   # child
            {"h": 4, "t": 1, "r": "P22", "evidence": [1]},   # father: the same fact
            {"h": 4, "t": 0, "r": "P108", "evidence": [1]},  # employer
            {"h": 0, "t": 5, "r": "P355", "evidence": [1]},  # subsidiary
            {"h": 5, "t": 0, "r": "P749", "evidence": [1]},  # parent org: the same fact
        ],
    }
    return [family, company]


def docred_source(tmp: Path) -> Path:
    """The shared Re-DocRED dev split if present, else the small written file."""
    return SHARED if SHARED.is_file() else written_source(tmp)


def written_source(tmp: Path) -> Path:
    path = tmp / "docred_fixture.json"
    path.write_text(json.dumps(_documents()), encoding="utf-8")
    return path
