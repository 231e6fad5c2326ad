"""Demo-world systems: stored scores fall inside their intervals around the exact truth.

The whole database path runs: ingested demo-world submissions, draws from
`sample_draws`, labels from gold.jsonl, exhaustively annotated documents, then
`scoring.recompute` and the stored `SystemScore` rows, compared with truth.json.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from estimation import scoring
from estimation.models import SystemScore
from tests.factories import make_user
from tests.scoring.scoring_demo import draw, exhaustive, label_from_gold, load_demo

TRIALS = 40
DRAWS = 60
CHECKS = {  # (scheme, metric): column stem
    ("instance", "precision"): "p_joint",
    ("instance", "recall"): "r_joint",
    ("instance", "f1"): "f1_joint",
    ("instance", "precision_simple"): "p_simple",
}


@pytest.mark.slow
@pytest.mark.django_db
def test_stored_intervals_cover_the_truth_at_the_nominal_rate(tmp_path: Path,
                                                              settings) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    demo = load_demo(tmp_path / "world", make_user("demo"), docs=60, systems=5, seed=3)
    rng = np.random.default_rng(2024)
    hits: dict[str, list[bool]] = {k: [] for k in CHECKS.values()}
    for trial in range(TRIALS):
        for sub in demo.submissions.values():
            draw(sub, DRAWS, rng)
        label_from_gold(demo)
        exhaustive(demo, fraction=0.5, seed=trial)
        run = scoring.recompute(demo.corpus)
        assert run.n_systems == len(demo.submissions)
        for name, sub in demo.submissions.items():
            row = SystemScore.objects.get(run=run, submission=sub, scheme="instance")
            truth = demo.truth[name]["instance"]
            for (_, metric), stem in CHECKS.items():
                est, lo, hi = (getattr(row, stem + b) for b in ("", "_lo", "_hi"))
                assert lo is not None and hi is not None and lo <= hi
                if est is not None:
                    assert lo - 1e-9 <= est <= hi + 1e-9
                value = truth[metric.removesuffix("_simple")]
                hits[stem].append(lo - 1e-9 <= value <= hi + 1e-9)
    # 90% intervals: each rate must sit within 3 binomial standard errors of 0.9
    # (one-sided: over-coverage is honest, only under-coverage fails).
    for stem, h in hits.items():
        n = len(h)
        floor = 0.9 - 3 * math.sqrt(0.9 * 0.1 / n)
        rate = sum(h) / n
        print(f"{stem}: {rate:.3f} of {n} (floor {floor:.3f})")
        assert rate >= floor, f"{stem}: coverage {rate:.3f} over {n} < {floor:.3f}"
