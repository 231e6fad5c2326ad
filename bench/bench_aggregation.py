"""Aggregation accuracy on simulated crowds: majority against the Dawid–Skene family.

    python bench/bench_aggregation.py [--items 3000] [--seeds 5]

Questions like a real relation task (3 in 4 pairs have no relation, relation types
Zipf-distributed, 6 types offered per pair), a pool of 20 workers with 10% spammers,
honest workers at 0, 10 and 20% error, random or systematic (blind spots, see
estimation/validation/crowd.py). Three answers per question, ties ask for up to two
more (the production rule). Prints per method the share of questions labelled
right, and for the posterior methods the mean P(label right) they claim next to it
(calibration: the two should agree). One-coin + controls also gets 10% control
questions with known answers, which anchor the workers' accuracies. The stored:*
columns are the hard label the quality pass stores with that model
(annotations.quality.aggregation.hard_labels, starting from the majority label).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotations.quality import aggregation as agg
from estimation.validation import crowd

PREDICATES = 20
METHODS = ("majority", "dawid_skene", "ds_smoothed", "one_coin", "lopsided", "lopsided+controls",
           "stored:one_coin", "stored:lopsided")


def _truth(n: int, rng: np.random.Generator) -> np.ndarray:
    zipf = 1.0 / np.arange(1, PREDICATES + 1)
    zipf /= zipf.sum()
    return np.where(rng.random(n) < 0.25, rng.choice(PREDICATES, n, p=zipf), -1)


def trial(n_items: int, spec: crowd.CrowdSpec, seed: int,
          margin: float = 0.2) -> dict[str, tuple[float, float]]:
    """(accuracy, mean claimed P(right)) per method on one simulated crowd."""
    rng = np.random.default_rng(seed)
    n_ctrl = round(n_items * spec.control_share / (1 - spec.control_share))
    truth = _truth(n_items + n_ctrl, rng)
    pool = crowd.make_pool(spec, PREDICATES, rng)
    got = crowd.answer(truth, pool, spec, PREDICATES, rng)
    test = got.items < n_items
    items, workers, answers = got.items[test], got.workers[test], got.answers[test]
    right = truth[:n_items]
    out: dict[str, tuple[float, float]] = {
        "majority": (float((got.labels[:n_items] == right).mean()), float("nan"))
    }
    cats = list(range(-1, PREDICATES))
    w = len(pool.accuracy)
    ds = agg.dawid_skene(items, workers, answers.tolist(), n_items, w)
    smooth = agg.dawid_skene(items, workers, answers.tolist(), n_items, w,
                             prior_strength=10.0)
    coin = agg.one_coin(items, workers, answers.tolist(), n_items, w,
                        n_options=got.n_options[:n_items], categories=cats)
    lopsided = agg.one_coin(items, workers, answers.tolist(), n_items, w,
                            n_options=got.n_options[:n_items], categories=cats, none=-1)
    known = {i: int(truth[i]) for i in range(n_items, n_items + n_ctrl)}
    anchored = agg.one_coin(got.items, got.workers, got.answers.tolist(), n_items + n_ctrl, w,
                            n_options=got.n_options, known=known, categories=cats, none=-1)
    for name, fit in (("dawid_skene", ds), ("ds_smoothed", smooth), ("one_coin", coin),
                      ("lopsided", lopsided), ("lopsided+controls", anchored)):
        post = fit.posterior[:n_items]
        lab = np.asarray(fit.categories)[post.argmax(axis=1)]
        out[name] = (float((lab == right).mean()), float(post.max(axis=1).mean()))
    # What the quality pass stores: the majority label, moved to the model's answer
    # where its posterior beats the majority's by `margin` (KBPO_LABEL_SWITCH_MARGIN).
    for name, fit in (("stored:one_coin", coin), ("stored:lopsided", lopsided)):
        lab = np.asarray(agg.hard_labels(fit.posterior[:n_items], fit.categories,
                                         got.labels[:n_items].tolist(), margin))
        out[name] = (float((lab == right).mean()), float("nan"))
    return out


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--margin", type=float, default=0.2,
                        help="KBPO_LABEL_SWITCH_MARGIN for the stored:* columns")
    args, _ = parser.parse_known_args(argv)
    print(f"{args.items} questions, {args.seeds} seeds, switch margin {args.margin}; "
          "accuracy (mean claimed P(right))")
    print(f"{'error':>5s} {'kind':10s} " + " ".join(f"{m:>18s}" for m in METHODS))
    for error in (0.0, 0.1, 0.2):
        for systematic in (False, True):
            spec = crowd.CrowdSpec(error_rate=error, systematic=systematic)
            rows = [trial(args.items, spec, seed, args.margin) for seed in range(args.seeds)]
            cells = []
            for m in METHODS:
                acc = np.mean([r[m][0] for r in rows])
                claim = np.mean([r[m][1] for r in rows])
                cells.append(f"{acc:.4f}" + ("" if np.isnan(claim) else f" ({claim:.4f})"))
            kind = "systematic" if systematic else "random"
            print(f"{error:5.2f} {kind:10s} " + " ".join(f"{c:>18s}" for c in cells),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
