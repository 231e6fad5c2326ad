"""Reproduction: the crowd model's false-yes rates on answers like bench_recompute's crowd.

`bench_recompute.Crowd` in numpy, without Postgres: pairs of types PER-{PER, ORG, GPE}
(slot mod 3), 30% holding a relation, HITs of 10 pairs answered by 3 of 80 workers of
accuracy U(0.6, 0.95); a wrong answer on a pair holding none is a relation, on a pair
holding one "none" half the time and a relation otherwise. Fitted as
`estimation.correction` fits it (`one_coin`, `SOFT_TYPE_SHRINK`, strata = pair types,
n_options = the pair type's offered relations + 1). Prints EM's rounds, each worker's
Σ_r fp[w, r] against the crowd's true false-yes share, the mean P(none) of pairs all
three workers called none, and the categories above 1e-3 per posterior.

    python bench/crowd_false_yes.py [--pairs 1537] [--seed 7] [--typed] [--rounds 1,10,25]

`--typed [truth|answers|both]`: truths and/or wrong answers (default: both) only among
the relations the pair's type offers (`kbpo.core.schema.predicates_for`), as the task
page allows and bench_recompute now draws them; without it, as bench_recompute drew
them before: any of the 26 TAC predicates on any pair. `--all-options`: the model told
every pair offers all 26 (n_options 27). `--shrink inf`: one miss rate per worker (fast).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotations.quality.aggregation import (
    NO_RELATION,
    SOFT_TYPE_SHRINK,
    OneCoinResult,
    one_coin,
)
from kbpo.core.schema import CANONICAL_PREDICATES, predicates_for

TYPES = ("PER", "ORG", "GPE")
WORKERS, PER_HIT, ANSWERS = 80, 10, 3


def simulate(n: int, typed: str, rng: np.random.Generator) -> dict:
    """Answers to ``n`` pairs as bench_recompute.Crowd gives them (``typed``: "truth",
    "answers" or "both" drawn within the pair type's offered relations, "" neither)."""
    preds = sorted(CANONICAL_PREDICATES)
    code = {p: i for i, p in enumerate(preds)}
    strata = np.arange(n) % 3
    sets = [np.array([code[p] for p in predicates_for("PER", t)]) for t in TYPES]
    n_pred = len(preds)

    def relation(size: tuple, st: np.ndarray, which: str) -> np.ndarray:
        if typed not in (which, "both"):
            return rng.integers(0, n_pred, size)
        out = np.empty(size, np.int64)
        for s, opts in enumerate(sets):
            at = st == s
            out[at] = rng.choice(opts, int(at.sum()))
        return out

    truth = np.where(rng.random(n) < 0.3, relation((n,), strata, "truth"), -1)
    accuracy = rng.uniform(0.6, 0.95, WORKERS)
    n_hits = -(-n // PER_HIT)
    crew = np.argsort(rng.random((n_hits, WORKERS)), axis=1)[:, :ANSWERS]
    who = crew[np.arange(n) // PER_HIT]
    right = rng.random(who.shape) < accuracy[who]
    st2 = np.repeat(strata[:, None], ANSWERS, axis=1)
    wrong = np.where(truth[:, None] < 0, relation(who.shape, st2, "answers"),
                     np.where(rng.random(who.shape) < 0.5, -1, relation(who.shape, st2, "answers")))
    given = np.where(right, truth[:, None], wrong)
    names = [NO_RELATION if g < 0 else preds[g] for g in given.ravel()]
    sizes = np.array([len(s) + 1 for s in sets], float)
    return dict(items=np.repeat(np.arange(n), ANSWERS), workers=who.ravel(), answers=names,
                given=given, truth=truth, strata=strata, n_options=sizes[strata],
                accuracy=accuracy, sets=sets, preds=preds)


def report(d: dict, fit: OneCoinResult, label: str) -> None:
    cats, post = fit.categories, fit.posterior
    nc = cats.index(NO_RELATION)
    items, workers, given, truth = d["items"], d["workers"], d["given"], d["truth"]
    none_pairs = truth < 0
    on_none = none_pairs[items]
    said_rel = given.ravel() >= 0
    true_fy = np.bincount(workers[on_none], weights=said_rel[on_none], minlength=WORKERS) \
        / np.maximum(np.bincount(workers[on_none], minlength=WORKERS), 1)
    assert fit.params is not None and fit.params.offered is not None
    fp = fit.params.rates[-1]
    table = fit.params.offered
    # Σ over the relations the worker's pairs offer (stratum 0's row; every row is alike
    # when the crowd names any relation anywhere).
    sums = np.array([(fp[w] * table[0]).sum() for w in range(WORKERS)])
    unanimous = (given == -1).all(axis=1)
    spread = (post > 1e-3).sum(axis=1)
    print(f"[{label}] rounds {fit.iterations}, converged {fit.converged}; "
          f"offered per stratum {table.sum(axis=1).astype(int).tolist()}")
    err = 1 - d["accuracy"]
    print(f"  crowd's false-yes share on none pairs {said_rel[on_none].mean():.3f}; "
          f"per worker: said median {np.median(true_fy):.3f}, fitted Σ fp median "
          f"{np.median(sums):.4f} (range {sums.min():.4f}-{sums.max():.4f}), mean |Σ fp − "
          f"(1 − accuracy)| {np.abs(sums - err).mean():.3f}, "
          f"corr {np.corrcoef(sums, err)[0, 1]:.2f}")
    print(f"  unanimous-none pairs {int(unanimous.sum())}: mean P(none) "
          f"{post[unanimous, nc].mean():.3f} (truth none on "
          f"{none_pairs[unanimous].mean():.3f}); categories > 1e-3 per posterior "
          f"{spread.mean():.1f}; mean P(none) where truth none {post[none_pairs, nc].mean():.3f}, "
          f"where truth a relation {post[~none_pairs, nc].mean():.3f}")
    miss = fit.miss_rate
    print(f"  fitted miss rate median {np.median(miss):.3f}, specificity median "
          f"{np.median(fit.specificity):.3f}, class share none {fit.priors[nc]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1537)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--typed", nargs="?", const="both", default="",
                        choices=["", "truth", "answers", "both"])
    parser.add_argument("--rounds", default="", help="also fit with max_iter = each of these")
    parser.add_argument("--shrink", default="soft", help="soft (BLIND_SPOT_LOO) or inf")
    parser.add_argument("--all-options", action="store_true",
                        help="n_options = every relation + 1 (as if the page offered all 26)")
    args = parser.parse_args()
    d = simulate(args.pairs, args.typed, np.random.default_rng(args.seed))
    shrink = SOFT_TYPE_SHRINK if args.shrink == "soft" else float(args.shrink)
    n_options = np.full(args.pairs, len(d["preds"]) + 1.0) if args.all_options \
        else d["n_options"]
    kw = dict(n_options=n_options, none=NO_RELATION, strata=d["strata"],
              type_shrink=shrink)
    for r in [int(x) for x in args.rounds.split(",") if x]:
        fit = one_coin(d["items"], d["workers"], d["answers"], args.pairs, WORKERS,
                       max_iter=r, **kw)
        report(d, fit, f"max_iter {r}")
    t = time.process_time()
    fit = one_coin(d["items"], d["workers"], d["answers"], args.pairs, WORKERS, **kw)
    report(d, fit, f"full fit, {time.process_time() - t:.1f} s CPU")


if __name__ == "__main__":
    main()
