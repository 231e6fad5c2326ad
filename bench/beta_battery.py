"""The battery's noisy scenarios under each `REWEIGHT_BETA`, paired on the same seeds
(issue 38; docs/internals/crowd-bias.md §14).

Usage: python bench/beta_battery.py --scenario crowd20_distinct [--scenario ...]
           [--betas 0.5 0] [--fits fixed_point decided] [--phi off on]
           [--bootstrap questions workers] [--trials 40]
           [--seed 3] [--small] [--json OUT]

--phi on: the soft labels' variance scaled by the controls' calibration multiplier φ
(`crowd.ANSWER_NOISE`, `CrowdLabeller.calibration`; crowd-bias.md §17). Only the
intervals differ from off: the points are the same floats.

--bootstrap workers: the correction's replicates from a bootstrap over workers
(`crowd.WORKER_BOOTSTRAP`, `worker_bootstrap.worker_replicates`; crowd-bias.md §18) instead
of the shipped bootstrap over questions; workers_alone: also without precision's
Bernoulli term for the labels (the redrawn answers carry it). Only the intervals differ.

--fits: each β also with each way of fitting the agreement groups' priors (the shipped
fixed point, or from decided pairs only: bench/decided_prior.py, crowd-bias.md §15);
the paired differences are then to the first (β, fit).

β sets the prior the soft labels' re-weighting divides out (odds(crowd-wide)^β ·
odds(pair type)^(1−β); docs/internals/noisy-crowds.md §3). It is read by name in two
modules, so both are set (`evidence.REWEIGHT_BETA`, `noise.REWEIGHT_BETA`); the battery
runs in this process (its only pool is a thread in estimation/beside.py, which shares
the modules), so the setting reaches every estimate and bootstrap replicate. The
evidence caches its divisor per object, and each trial builds new evidence.

Every β runs the same trials: the world, the draws, the crowd's answers and the
bootstrap's questions come from [seed, t]; these scenarios have no late system, so no
planner decision depends on β and the comparison is paired. Per scenario and β it
prints the battery's table and checks (its own pass/fail), then, for joint P and R,
the paired difference to the first β: mean over trials of (mean error over systems)
and of (coverage over systems), each with its se over trials.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from decided_prior import set_fit  # noqa: E402

from estimation.core import evidence, noise  # noqa: E402
from estimation.core import intervals as ci  # noqa: E402
from estimation.validation import (  # noqa: E402
    SCENARIOS,
    UNCORRECTED,
    crowd,
    format_table,
    passed,
    reference,
    run_scenario,
    summarise,
    verdict,
)


def set_beta(beta: float) -> None:
    evidence.REWEIGHT_BETA = noise.REWEIGHT_BETA = beta  # both read it by name


PHIS: list[float] = []  # φ of every trial's crowd, recorded by `_recording`


def _recording(orig):
    def calibration(self, pop, ev):
        PHIS.append(orig(self, pop, ev))
        return PHIS[-1]
    return calibration


def per_trial(run, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint instance-scheme (trials,) mean error over systems, coverage over systems
    and mean half-width over systems."""
    truth = reference.true_scores(run.world, "instance")[metric]
    a = run.values[("instance", metric, "joint")]
    est, lo, hi = a[..., 0], a[..., 1], a[..., 2]
    counted = ~run.exact.get((metric, "joint"), np.zeros(est.shape, bool))
    inside = np.where(counted, ci.covers(lo, hi, truth), np.nan)
    return (np.nanmean(est - truth, axis=1), np.nanmean(inside, axis=1),
            np.nanmean((hi - lo) / 2, axis=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", required=True)
    parser.add_argument("--betas", type=float, nargs="+", default=[0.5, 0.0])
    parser.add_argument("--fits", nargs="+", default=["fixed_point"],
                        choices=["fixed_point", "decided"])
    parser.add_argument("--phi", nargs="+", default=["off"], choices=["off", "on"])
    parser.add_argument("--bootstrap", nargs="+", default=["questions"],
                        choices=["questions", "workers", "workers_alone"])
    parser.add_argument("--folds", type=int, default=0,
                        help="φ's control posteriors from this many leave-fold-out refits "
                             "(crowd.CALIBRATION_FOLDS; 0: the fit's parameters)")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="12-system versions")
    parser.add_argument("--json", type=Path, help="append one summary line per run")
    args = parser.parse_args(argv)
    known = {**SCENARIOS, **UNCORRECTED}
    shipped = evidence.REWEIGHT_BETA
    crowd.CrowdLabeller.calibration = _recording(crowd.CrowdLabeller.calibration)
    crowd.CALIBRATION_FOLDS = args.folds
    ok = True
    try:
        for name in args.scenario:
            spec = known[name].small() if args.small else known[name]
            trials: dict[tuple, dict[str, tuple[np.ndarray, ...]]] = {}
            for beta, fit, phi, boot in [(b, f, p, w) for b in args.betas for f in args.fits
                                         for p in args.phi for w in args.bootstrap]:
                set_beta(beta)
                set_fit(fit)
                crowd.ANSWER_NOISE = phi == "on"
                crowd.WORKER_BOOTSTRAP = {"questions": False, "workers": True,
                                          "workers_alone": "alone"}[boot]
                PHIS.clear()
                start = time.perf_counter()
                run = run_scenario(spec, args.trials, args.seed)
                wall = time.perf_counter() - start
                rows = summarise(run)
                print(f"== {name} β={beta:g} {fit} φ {phi} bootstrap {boot} "
                      f"({'small' if args.small else 'full'}, "
                      f"{args.trials} trials, seed {args.seed}, {wall:.0f} s wall)")
                if PHIS:
                    print(f"   φ over trials: mean {np.mean(PHIS):.3f}, median "
                          f"{np.median(PHIS):.3f}, range {min(PHIS):.3f}–{max(PHIS):.3f}")
                print(format_table([r for r in rows if r.kind == "joint"
                                    and r.metric != "f1"]))
                for r in rows:
                    for message, good in r.checks:
                        print(f"   {'ok  ' if good else 'FAIL'} {r.metric}/{r.kind}: {message}")
                print(verdict(rows, run), flush=True)
                ok &= passed(rows)
                trials[(beta, fit, phi, boot)] = {m: per_trial(run, m)
                                            for m in ("precision", "recall")}
                if args.json:
                    joint = {r.metric: r for r in rows if r.kind == "joint"}
                    line = {"scenario": name, "beta": beta, "fit": fit, "phi": phi,
                            "bootstrap": boot,
                            "phis": list(PHIS), "small": args.small,
                            "trials": args.trials, "seed": args.seed, "seconds": round(wall),
                            "passed": passed(rows),
                            "failed": [f"{r.metric}/{r.kind}: {m}" for r in rows
                                       for m, g in r.checks if not g]}
                    for m in ("precision", "recall"):
                        b, c, h = trials[(beta, fit, phi, boot)][m]
                        line[m] = {"bias": joint[m].bias, "coverage": joint[m].coverage,
                                   "bias_se": float(np.std(b, ddof=1) / np.sqrt(len(b))),
                                   "cov_se": float(np.std(c, ddof=1) / np.sqrt(len(c))),
                                   "half_width": float(h.mean()),
                                   "max_bias": joint[m].max_bias,
                                   "min_coverage": joint[m].min_coverage}
                    with args.json.open("a") as f:
                        f.write(json.dumps(line) + "\n")
            base = next(iter(trials))
            for key in list(trials)[1:]:
                for m in ("precision", "recall"):
                    db = trials[key][m][0] - trials[base][m][0]
                    dc = trials[key][m][1] - trials[base][m][1]
                    dh = trials[key][m][2] / trials[base][m][2]
                    n = np.sqrt(len(db))
                    print(f"   paired {name} {m} joint, β={key[0]:g} {key[1]} φ {key[2]} "
                          f"{key[3]} minus β={base[0]:g} {base[1]} φ {base[2]} {base[3]}: "
                          f"bias {db.mean():+.4f} (se {db.std(ddof=1) / n:.4f}), "
                          f"coverage {dc.mean():+.4f} (se {dc.std(ddof=1) / n:.4f}), "
                          f"half-width ×{np.nanmean(dh):.3f} (max ×{np.nanmax(dh):.3f})",
                          flush=True)
    finally:
        set_beta(shipped)
        set_fit("fixed_point")
        crowd.ANSWER_NOISE = False
        crowd.WORKER_BOOTSTRAP = False
        crowd.CALIBRATION_FOLDS = 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
