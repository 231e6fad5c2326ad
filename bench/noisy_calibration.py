"""Soft-label calibration against the gold, for bench_noisy_demo (run in its child).

Reads every stored pair label of a corpus with its posterior, and the gold answer the
simulated crowd read (`simulate_crowd.truth_for`), and measures whether the stored
probabilities are calibrated on these data:

- P(pair true) = 1 − posterior[no_relation], against "the gold names a relation";
- P(label right) (``p_correct``), against "the stored label equals the gold answer";
- per system, over its *sampled* instances (instance scheme draws): the mean stored
  P(instance right) = posterior[predicate] and the mean P(pair true), against the share
  of those draws that gold holds (the hard label's share too).

Each is given as the total (Σ probability − count of true) and in probability bins.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

import numpy as np

BINS = (0.0, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98, 1.0001)
NONE = "no_relation"


def _bins(prob: np.ndarray, truth: np.ndarray) -> list[list[float]]:
    """[lo, hi, n, mean probability, share true] per non-empty bin."""
    out = []
    for lo, hi in itertools.pairwise(BINS):
        m = (prob >= lo) & (prob < hi)
        if m.any():
            out.append([lo, min(hi, 1.0), int(m.sum()), float(prob[m].mean()),
                        float(truth[m].mean())])
    return out


def calibration(corpus_tag: str, gold: Path) -> dict:
    """The calibration tables of the corpus's stored soft labels (module docstring)."""
    from annotations.crowd.simulation import GoldKey
    from annotations.management.commands.simulate_crowd import truth_for
    from annotations.models import PairLabel, SampleDraw

    key = GoldKey.load(gold)
    labels = (PairLabel.objects.filter(pair__document__corpus__tag=corpus_tag)
              .exclude(posterior={}).select_related("question__pair__document",
                                                   "pair__document"))
    by_pair: dict[int, tuple[dict, frozenset[str], list[str]]] = {}
    p_true, is_true, p_right, is_right = [], [], [], []
    for lab in labels.iterator(chunk_size=2000):
        if lab.question is None:
            continue
        truth = truth_for(key, lab.question)
        post = {k: float(v) for k, v in lab.posterior.items()}
        by_pair[lab.pair_id] = (post, truth, list(lab.predicates))
        p_true.append(1.0 - post.get(NONE, 0.0))
        is_true.append(truth != frozenset({NONE}))
        if lab.p_correct is not None:
            p_right.append(float(lab.p_correct))
            is_right.append(frozenset(lab.predicates) == truth)
    pt, it = np.asarray(p_true), np.asarray(is_true, float)
    pr, ir = np.asarray(p_right), np.asarray(is_right, float)
    out: dict = {
        "pairs": len(pt),
        "pair_true": {"sum_p": float(pt.sum()), "n_true": float(it.sum()),
                      "bins": _bins(pt, it)},
        "label_right": {"sum_p": float(pr.sum()), "n_right": float(ir.sum()),
                        "bins": _bins(pr, ir)},
    }
    # Per system, over its instance-scheme draws (with repeats, as the estimator sees them).
    per: dict[str, list[list[float]]] = defaultdict(list)
    draws = (SampleDraw.objects.filter(submission__corpus__tag=corpus_tag, scheme="instance")
             .values_list("submission__name", "instance__pair_id", "instance__predicate"))
    for name, pair_id, predicate in draws.iterator(chunk_size=5000):
        got = by_pair.get(pair_id)
        if got is None:
            continue
        post, truth, label = got
        per[name].append([post.get(predicate, 0.0), predicate in truth,
                          predicate in label, 1.0 - post.get(NONE, 0.0), truth != {NONE}])
    out["systems"] = {}
    for name, rows in sorted(per.items()):
        a = np.asarray(rows, float)
        out["systems"][name] = {
            "draws": len(a), "p_right": float(a[:, 0].mean()), "right": float(a[:, 1].mean()),
            "hard": float(a[:, 2].mean()), "p_pair_true": float(a[:, 3].mean()),
            "pair_true": float(a[:, 4].mean()),
            "bins": _bins(a[:, 0], a[:, 1])}
    return out


def print_calibration(seed: int, cal: dict) -> None:
    """The tables of `calibration`, one seed."""
    pt, lr = cal["pair_true"], cal["label_right"]
    print(f"{seed:>4} calibration over {cal['pairs']} labelled pairs: Σ P(pair true) "
          f"{pt['sum_p']:.1f} vs {pt['n_true']:.0f} true "
          f"({(pt['sum_p'] - pt['n_true']) / max(cal['pairs'], 1):+.4f} per pair); "
          f"Σ P(label right) {lr['sum_p']:.1f} vs {lr['n_right']:.0f} right")
    for title, bins in (("P(pair true)", pt["bins"]), ("P(label right)", lr["bins"])):
        print(f"     {title:15s} " + "  ".join(
            f"[{lo:.2f},{hi:.2f}) n={n} p={p:.3f} obs={o:.3f}" for lo, hi, n, p, o in bins))
    print(f"     {'system':20s} {'draws':>5s} {'meanP(right)':>12s} {'gold right':>10s} "
          f"{'hard':>6s} {'meanP(true)':>11s} {'gold true':>9s}")
    for name, s in cal["systems"].items():
        print(f"     {name:20s} {s['draws']:5d} {s['p_right']:12.3f} {s['right']:10.3f} "
              f"{s['hard']:6.3f} {s['p_pair_true']:11.3f} {s['pair_true']:9.3f}")
