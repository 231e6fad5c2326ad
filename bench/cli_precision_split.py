"""Where the typed CLI's joint precision bias on small yes-biased problems comes from
(docs/internals/crowd-bias.md §12): per world of `test_cli_crowd_bias.biased_problem`
(2 systems × 120 draws, 40 controls), the joint precision with the crowd model's soft
labels as shipped, with the system-prior step (`noise.self_consistent`) replaced by the
identity, and with the drawn pairs' true labels (the oracle: the same draws, so the
sampling error cancels in the paired differences); then the fit's P(prediction right)
on the drawn instances against the truth, split by truth and relation.

Usage: python bench/cli_precision_split.py [--seeds 0 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from estimation import crowd_answers  # noqa: E402
from estimation.core.problem import load_problem, solve  # noqa: E402
from tests.estimation.test_cli_crowd_bias import biased_problem  # noqa: E402

ATTRACTIVE = {"r0", "r1"}  # validation.crowd.make_pool: the first `attractive` codes


def _oracle(raw: dict) -> dict:
    truth = {u: r for u, r in raw["exhaustive"]}
    out = {k: v for k, v in raw.items()
           if k not in ("answers", "controls", "pair_types", "offered")}
    drawn = sorted({k for d in raw["draws"].values() for k in d})
    out["labels"] = {k: truth.get(k, "no_relation") for k in drawn}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs=2, default=[0, 12])
    args = parser.parse_args(argv)
    shipped = crowd_answers.self_consistent
    runs: dict[str, list[tuple[float, bool]]] = {"shipped": [], "no prior": [], "oracle": []}
    groups: dict[str, list[tuple[float, bool]]] = {}
    for seed in range(*args.seeds):
        raw, precision, _ = biased_problem(seed, "typed")
        crowd_answers.self_consistent = shipped
        got = {"shipped": crowd_answers.solve_with_crowd(load_problem(raw), ["instance"])}
        crowd_answers.self_consistent = lambda pop, ev, *a, **k: ev
        got["no prior"] = crowd_answers.solve_with_crowd(load_problem(raw), ["instance"])
        crowd_answers.self_consistent = shipped
        got["oracle"] = solve(load_problem(_oracle(raw)), ["instance"])
        for kind, res in got.items():
            for s, p in zip(res["systems"], precision, strict=True):
                j = s["precision"]["joint"]
                runs[kind].append((j["estimate"] - p, j["lo"] <= p <= j["hi"]))
        # The fit's P(prediction right) per drawn instance.
        fit = crowd_answers.crowd_soft_labels(load_problem(raw), replicates=0)[2].fit
        row = {k: i for i, k in enumerate(raw["answers"])}
        truth = {u: r for u, r in raw["exhaustive"]}
        for s in raw["systems"]:
            pred = dict(map(tuple, s["instances"]))
            for key in raw["draws"][s["name"]]:
                t = truth.get(key, "no_relation")
                p = pred[key]
                ps = float(fit.posterior[row[key], fit.categories.index(p)]) \
                    if p in fit.categories else 0.0
                g = ("holds none" if t == "no_relation" else "holds one") + ", " + \
                    ("attractive" if p in ATTRACTIVE else "other") + " predicted"
                groups.setdefault(g, []).append((ps, t == p))
    oracle = np.array([e for e, _ in runs["oracle"]])
    print(f"seeds {args.seeds[0]}..{args.seeds[1] - 1}: {len(oracle)} systems")
    for kind, rows in runs.items():
        e = np.array([x for x, _ in rows])
        d = e - oracle
        part = "" if kind == "oracle" else \
            f"  minus oracle {d.mean():+.4f} (se {d.std(ddof=1) / np.sqrt(len(d)):.4f})"
        print(f"{kind:9s} joint P bias {e.mean():+.4f}{part}  mean |error| "
              f"{np.abs(e).mean():.4f}  coverage {np.mean([c for _, c in rows]):.2f}")
    for g, rows in sorted(groups.items()):
        v = np.array(rows, float)
        print(f"{g:32s} draws {len(v):5d}  mean P(right) {v[:, 0].mean():.3f}  "
              f"right {v[:, 1].mean():.3f}  excess {np.sum(v[:, 0] - v[:, 1]):+.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
