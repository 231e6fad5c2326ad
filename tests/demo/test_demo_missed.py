"""The demo's comparison with truth.json says why an interval MISSED is expected."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kbpo.demo.management.commands import demo


def test_missed_is_explained_with_the_expected_count(monkeypatch, settings) -> None:
    settings.KBPO_CONFIDENCE = 0.9
    lines = ["sys01 P 0.500 [0.400, 0.600] truth 0.650 MISSED"]
    monkeypatch.setattr(demo, "against_truth", lambda corpus, path: {
        "joint": (11, 12, 0.01, lines), "simple": (10, 12, 0.02, lines)})
    cmd = demo.Command(stdout=io.StringIO())
    cmd._against_truth(object(), Path("truth.json"))
    out = cmd.stdout.getvalue()
    assert "joint: 11/12 intervals contain the truth" in out
    assert ("MISSED is expected now and then: a 90% interval misses the truth one time "
            "in 10, so about 1.2 of each estimator's 12 here") in out


@pytest.mark.parametrize("level,expected", [(0.95, "one time in 20, so about 0.6")])
def test_the_explanation_follows_the_confidence(monkeypatch, settings, level, expected) -> None:
    settings.KBPO_CONFIDENCE = level
    monkeypatch.setattr(demo, "against_truth", lambda corpus, path: {
        "joint": (12, 12, 0.01, [])})
    cmd = demo.Command(stdout=io.StringIO())
    cmd._against_truth(object(), Path("truth.json"))
    assert expected in cmd.stdout.getvalue()
