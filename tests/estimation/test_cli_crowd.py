"""Crowd answers in PROBLEM.json: the crowd model's soft labels and correction through
the CLI, without Django (docs/reference/estimation-cli.md)."""

import json

import numpy as np

from estimation.cli import main
from estimation.validation.crowd import NO_RELATION, CrowdSpec, answer, make_pool


def _estimate(tmp_path, capsys, problem, *args):
    path = tmp_path / "problem.json"
    path.write_text(json.dumps(problem))
    code = main(["estimate", str(path), *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _rel(code):
    return "no_relation" if code == NO_RELATION else f"r{code}"


def _problem(seed, spec, answers=True):
    """Two systems over 400 pairs (40% hold one of 5 relations); A right on 70% of its
    pairs, B on 40%; 120 draws each; every drawn pair and 40 controls answered by the
    simulated crowd. Returns (problem, true precision of A and B)."""
    rng = np.random.default_rng(seed)
    n, p = 400, 5
    truth = np.where(rng.random(n) < 0.4, rng.integers(0, p, n), NO_RELATION)
    systems, precision = [], []
    for name, share in (("A", 0.7), ("B", 0.4)):
        pairs = np.sort(rng.choice(n, 200, replace=False))
        right = rng.random(200) < share
        pred = np.where(right & (truth[pairs] >= 0), truth[pairs],
                        (np.maximum(truth[pairs], 0) + 1 + rng.integers(0, p - 1, 200)) % p)
        systems.append({"name": name, "instances": [[f"u{u}", _rel(c)] for u, c in
                                                    zip(pairs, pred, strict=True)]})
        precision.append(float(np.mean(pred == truth[pairs])))
    draws = {s["name"]: [s["instances"][k][0] for k in rng.integers(0, 200, 120)]
             for s in systems}
    drawn = sorted({int(k[1:]) for keys in draws.values() for k in keys})
    ctrl = rng.choice(n, 40, replace=False)
    pool = make_pool(spec, p, rng)
    got = answer(truth[np.concatenate([drawn, ctrl])], pool, spec, p, rng)
    votes: dict[int, list] = {}
    for q, w, a in zip(got.items, got.workers, got.answers, strict=True):
        votes.setdefault(int(q), []).append([f"w{w}", _rel(a)])
    problem = {"systems": systems, "draws": draws,
               "exhaustive": [[f"u{u}", _rel(truth[u])] for u in range(40) if truth[u] >= 0]}
    if answers:
        problem["answers"] = {f"u{u}": votes[q] for q, u in enumerate(drawn)}
        problem["controls"] = [{"answers": votes[len(drawn) + k], "truth": _rel(truth[u])}
                               for k, u in enumerate(ctrl)]
    else:  # the crowd's majority labels
        problem["labels"] = {f"u{u}": _rel(got.labels[q]) for q, u in enumerate(drawn)}
    return problem, precision


def test_a_perfect_crowd_gives_the_hard_labels_estimates(tmp_path, capsys):
    spec = CrowdSpec(error_rate=0.0, spammer_share=0.0, pair_types=0)
    crowd, _ = _problem(1, spec)
    hard, _ = _problem(1, spec, answers=False)
    soft_out = _estimate(tmp_path, capsys, crowd)
    hard_out = _estimate(tmp_path, capsys, hard)
    assert soft_out["crowd"]["controls"] == 40 and soft_out["crowd"]["converged"]
    for s, h in zip(soft_out["systems"], hard_out["systems"], strict=True):
        for metric in ("precision", "recall"):
            a, b = s[metric]["joint"], h[metric]["joint"]
            assert abs(a["estimate"] - b["estimate"]) < 0.01, (metric, a, b)
            assert a["lo"] <= b["estimate"] <= a["hi"]


def test_the_correction_beats_majority_labels_under_a_noisy_crowd(tmp_path, capsys):
    """20% worker error, 10% spammers: over 12 worlds the soft labels' joint precision
    is nearer the truth than the majority labels' (a sharp test: both sides run on
    the same answers), and its intervals cover as a 90% interval does."""
    spec = CrowdSpec(error_rate=0.2, pair_types=0)
    err = {"soft": [], "majority": []}
    cover = {"soft": 0, "majority": 0}
    for seed in range(12):
        for kind in ("soft", "majority"):
            problem, truth = _problem(100 + seed, spec, answers=kind == "soft")
            out = _estimate(tmp_path, capsys, problem)
            for s, t in zip(out["systems"], truth, strict=True):
                p = s["precision"]["joint"]
                err[kind].append(p["estimate"] - t)
                cover[kind] += p["lo"] <= t <= p["hi"]
    soft, major = np.abs(err["soft"]).mean(), np.abs(err["majority"]).mean()
    assert soft < major, (soft, major, np.mean(err["soft"]), np.mean(err["majority"]))
    # 24 nominal 90% intervals: at least 0.9 − 3.29·sqrt(0.09/24) = 0.70 of them.
    assert cover["soft"] >= 17, cover
