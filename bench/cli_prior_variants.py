"""The system-prior step on the typed CLI's yes-biased problems (docs/internals/
crowd-bias.md §13): joint precision bias against the oracle (the drawn pairs' true
labels) with the prior the re-weighting divides out set by `evidence.REWEIGHT_BETA`
(0: the pair type's share, the one the crowd fit used; 1: the crowd-wide share), then
each system's drawn instances' mean P(right) at the crowd's prior and at the fixed point,
split by truth and relation (shipped β).

With --fits, each β is run with each way of fitting the agreement groups' priors
(fixed_point, shipped, or decided: bench/decided_prior.py; §15) and the split is given for
each fit.

Usage: python bench/cli_prior_variants.py [--seeds 12 24] [--betas 0 0.5 1]
       [--fits fixed_point decided]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cli_precision_split import ATTRACTIVE, _oracle  # noqa: E402
from decided_prior import set_fit  # noqa: E402

from estimation import crowd_answers  # noqa: E402
from estimation.core import evidence, noise  # noqa: E402
from estimation.core.problem import load_problem, solve  # noqa: E402
from tests.estimation.test_cli_crowd_bias import biased_problem  # noqa: E402


def _joint_errors(res: dict, precision: list[float]) -> list[tuple[float, bool]]:
    out = []
    for s, p in zip(res["systems"], precision, strict=True):
        j = s["precision"]["joint"]
        out.append((j["estimate"] - p, j["lo"] <= p <= j["hi"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs=2, default=[12, 24])
    parser.add_argument("--betas", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    parser.add_argument("--fits", nargs="+", default=["fixed_point"],
                        choices=["fixed_point", "decided"])
    args = parser.parse_args(argv)
    shipped_beta, shipped_sc = evidence.REWEIGHT_BETA, crowd_answers.self_consistent
    seen: dict[str, object] = {}

    def capture(pop, ev, *a, **k):  # the evidence before and after the prior step
        seen["before"], seen["after"] = ev, shipped_sc(pop, ev, *a, **k)
        return seen["after"]

    runs: dict[str, list[tuple[float, bool]]] = {"oracle": []}
    groups: dict[tuple[str, str], list[tuple[float, float, bool]]] = {}
    for seed in range(*args.seeds):
        raw, precision, _ = biased_problem(seed, "typed")
        for beta in args.betas:
            for fit in args.fits:
                evidence.REWEIGHT_BETA = noise.REWEIGHT_BETA = beta  # both read it by name
                set_fit(fit)
                res = crowd_answers.solve_with_crowd(load_problem(raw), ["instance"])
                name = f"beta {beta:g}" + (f" {fit}" if len(args.fits) > 1 else "")
                runs.setdefault(name, []).extend(_joint_errors(res, precision))
        evidence.REWEIGHT_BETA = noise.REWEIGHT_BETA = shipped_beta
        set_fit("fixed_point")
        runs["oracle"].extend(_joint_errors(solve(load_problem(_oracle(raw)), ["instance"]),
                                            precision))
        for fit in args.fits:
            set_fit(fit)
            crowd_answers.self_consistent = capture
            problem = load_problem(raw)
            crowd_answers.solve_with_crowd(problem, ["instance"])
            crowd_answers.self_consistent = shipped_sc
            set_fit("fixed_point")
            crowd = problem.crowd
            assert crowd is not None
            dense = dict(zip(raw["answers"], problem.population.lookup_pairs(
                np.asarray(crowd.pairs, np.int64)), strict=True))
            truth = {u: r for u, r in raw["exhaustive"]}
            for k, s in enumerate(raw["systems"]):
                pred = dict(map(tuple, s["instances"]))
                keys = raw["draws"][s["name"]]
                pairs = np.array([dense[u] for u in keys])
                codes = np.array([crowd.names.index(pred[u]) for u in keys])
                before = seen["before"].correct(pairs, codes)
                after = seen["after"].correct(pairs, codes, np.full(len(keys), k))
                for u, b, a in zip(keys, before, after, strict=True):
                    t = truth.get(u, "no_relation")
                    g = ("holds none" if t == "no_relation" else "holds one") + ", " + \
                        ("attractive" if pred[u] in ATTRACTIVE else "other") + " predicted"
                    label = s["name"] + (f" {fit}" if len(args.fits) > 1 else "")
                    groups.setdefault((label, g), []).append((b, a, t == pred[u]))
    oracle = np.array([e for e, _ in runs["oracle"]])
    print(f"seeds {args.seeds[0]}..{args.seeds[1] - 1}: {len(oracle)} systems")
    first = None
    for kind, rows in runs.items():
        e = np.array([x for x, _ in rows])
        d = e - oracle
        print(f"{kind:9s} joint P bias {e.mean():+.4f}  minus oracle {d.mean():+.4f} "
              f"(se {d.std(ddof=1) / np.sqrt(len(d)):.4f})  mean |error| "
              f"{np.abs(e).mean():.4f}  coverage {np.mean([c for _, c in rows]):.2f}")
        if kind != "oracle" and first is None:
            first = (kind, e)
        elif kind != "oracle":
            # Paired on the same worlds; a world's two systems share its answers.
            w = (e - first[1]).reshape(-1, 2).mean(axis=1)
            print(f"{'':9s} minus {first[0]}: {w.mean():+.4f} (se over worlds "
                  f"{w.std(ddof=1) / np.sqrt(len(w)):.4f})")
    print("system, drawn instance: draws, mean P(right) at the crowd's prior, at the fixed "
          "point, fraction right, excess at each")
    for (name, g), rows in sorted(groups.items()):
        v = np.array(rows, float)
        print(f"{name} {g:32s} {len(v):5d} {v[:, 0].mean():.3f} {v[:, 1].mean():.3f} "
              f"{v[:, 2].mean():.3f} {np.sum(v[:, 0] - v[:, 2]):+7.1f} "
              f"{np.sum(v[:, 1] - v[:, 2]):+7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
