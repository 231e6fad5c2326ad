"""Printed interval ends are rounded outward: the printed interval keeps the truth."""

import json
from fractions import Fraction

import numpy as np

from estimation.cli import main
from estimation.core.intervals import rounded_outward
from estimation.models import interval_ends
from estimation.snapshot import csv_ends


def test_exact_sixth_is_kept_at_every_precision():
    for d in (3, 4, 6):
        lo, hi = rounded_outward(1 / 6, 1 / 6, d)
        assert Fraction(lo) <= Fraction(1, 6) <= Fraction(hi), d
    assert rounded_outward(1 / 6, 1 / 6) == (0.166666, 0.166667)
    # Values on the grid (up to a few ulps) stay where they are.
    assert rounded_outward(0.5, 0.5) == (0.5, 0.5)
    assert rounded_outward(0.1 + 0.2, 0.7) == (0.3, 0.7)


def test_random_ends_are_rounded_outward():
    rng = np.random.default_rng(5)
    for lo, hi in np.sort(rng.random((2000, 2)), axis=1):
        for d in (3, 6):
            a, b = rounded_outward(float(lo), float(hi), d)
            assert a <= lo and hi <= b
            assert lo - a < 10.0**-d and b - hi < 10.0**-d


def test_text_outputs_round_outward():
    third = 1 / 3
    assert interval_ends(0.2004, 0.6996) == ("0.200", "0.700")
    assert interval_ends(third, 2 / 3) == ("0.333", "0.667")
    assert interval_ends(0.1239, 0.8761) == ("0.123", "0.877")  # nearest: 0.124, 0.876
    assert csv_ends(1 / 6, 1 / 6) == ["0.166666", "0.166667"]
    assert csv_ends(None, None) == ["", ""]


def test_cli_exact_sixth_contains_the_truth(tmp_path, capsys):
    # Six predictions, every pair labelled, one right: precision is exactly 1/6.
    keys = [f"p{k}" for k in range(6)]
    problem = {
        "scheme": "instance",
        "systems": [{"name": "A", "instances": [[k, "per:title"] for k in keys]}],
        "draws": {"A": keys},
        "labels": {k: ("per:title" if k == "p0" else "no_relation") for k in keys},
        "exhaustive": [["p0", "per:title"]],
    }
    path = tmp_path / "problem.json"
    path.write_text(json.dumps(problem))
    assert main(["estimate", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    for kind in ("simple", "joint"):
        p = out["systems"][0]["precision"][kind]
        assert Fraction(p["lo"]) <= Fraction(1, 6) <= Fraction(p["hi"]), (kind, p)


def test_battery_strict_check_counts_printed_misses():
    from estimation.validation.battery import _exact_missed

    sixth = np.full((1, 2), 1 / 6)
    exact = np.array([[True, False]])
    assert _exact_missed(sixth, sixth, np.array([1 / 6, 0.9]), exact) == 0
    # An end rounded to the nearest 4th decimal (0.1667) is printed past 1/6: a miss.
    near = np.full((1, 2), 0.1667)
    assert _exact_missed(near, near, np.array([1 / 6, 0.9]), exact) == 1
