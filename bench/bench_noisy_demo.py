"""End to end on the demo world with a noisy crowd: joint intervals against truth.json.

Usage: python bench/bench_noisy_demo.py [--seeds 1 2 3] [--docs 120] [--systems 6]
       [--error 0.2] [--world docred-tac --source dev_revised.json] [--confusion F.json]

For each seed, in a fresh temporary directory (SQLite, Celery eager: DATABASE_URL and
CELERY_BROKER_URL are overridden for the child process), runs `manage.py demo
--crowd-error E` (the simulated crowd: honest workers at error E, 10% spammers, control
questions at KBPO_CONTROL_SHARE), then recomputes the scores with hard labels and with
soft labels (KBPO_SOFT_LABELS) without and with the parameter bootstrap
(KBPO_SOFT_LABEL_BOOTSTRAP=8) and prints, per estimator kind, how many of the P and R
intervals contain truth.json's values, the mean absolute error and the recompute's wall
time, then the same split into P and R, and how many one-coin EM fits stopped at their
round limit without converging; then, per system and metric over the seeds, the
intervals containing the truth, the misses below and above it, the mean bias, half-width
and truth (`_miss_summary`). --calibration compares the stored soft labels with the gold
(bench/noisy_calibration.py); each seed salts its world's sample draws (KBPO_SAMPLE_SALT);
--keep DIR keeps each seed's world and database, --json FILE writes every seed's result
(per-system records included); --rescore with --keep scores the kept worlds again with
the current code (a paired before/after). --world docred-tac builds the world from a
DocRED / Re-DocRED file mapped to TAC KBP instead (real text: about three quarters of
the pairs hold no relation).
Slow: a few minutes per seed at the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (name, KBPO_SOFT_LABELS, KBPO_SOFT_LABEL_BOOTSTRAP)
VARIANTS = (("hard", False, 0), ("soft", True, 0), ("soft+boot", True, 8))
# Salt of the sample draws' seed: SALT + the world's seed (KBPO_SAMPLE_SALT, never 0).
SALT = 1_000_003
# One metric's cell in against_truth's per-system lines.
CELL = re.compile(r"([PR]) ([-\d.]+) \[([-\d.]+), ([-\d.]+)\] truth ([-\d.]+)")


def _per_metric(lines: list[str]) -> dict[str, list[float]]:
    """P and R apart: {metric: [intervals containing the truth, intervals, summed |error|]}."""
    out = {"P": [0, 0, 0.0], "R": [0, 0, 0.0]}
    for line in lines:
        for metric, est, lo, hi, truth in CELL.findall(line):
            t = out[metric]
            t[0] += float(lo) <= float(truth) <= float(hi)
            t[1] += 1
            t[2] += abs(float(est) - float(truth))
    return out


def _per_system(lines: list[str]) -> list[dict]:
    """One record per system and metric: estimate, interval, truth and, for an interval
    missing the truth, the side it missed on ("low": the whole interval below the truth)."""
    out = []
    for line in lines:
        name = line[:20].strip()
        for metric, est, lo, hi, truth in CELL.findall(line):
            e, a, b, t = float(est), float(lo), float(hi), float(truth)
            out.append({"system": name, "metric": metric, "estimate": e, "lo": a, "hi": b,
                        "truth": t, "miss": "low" if b < t else "high" if a > t else ""})
    return out


def _miss_summary(records: dict[tuple[str, str], list[dict]]) -> None:
    """Per labels, kind, metric and system over the seeds: intervals containing the truth,
    misses below / above it, mean bias (estimate − truth), mean half-width and mean truth."""
    print(f"\n{'labels':9s} {'kind':6s} M {'system':20s} {'covered':>7s} {'low':>3s} "
          f"{'high':>4s} {'bias':>7s} {'halfw':>6s} {'truth':>6s}")
    for (labels, kind), rows in records.items():
        groups: dict[tuple[str, str], list[dict]] = {}
        for r in rows:
            groups.setdefault((r["metric"], r["system"]), []).append(r)
        for (metric, system), rs in sorted(groups.items()):
            n = len(rs)
            cov = sum(not r["miss"] for r in rs)
            low = sum(r["miss"] == "low" for r in rs)
            bias = sum(r["estimate"] - r["truth"] for r in rs) / n
            half = sum(r["hi"] - r["lo"] for r in rs) / (2 * n)
            truth = sum(r["truth"] for r in rs) / n
            print(f"{labels:9s} {kind:6s} {metric} {system:20s} {cov:>3}/{n:<3} {low:>3} "
                  f"{n - cov - low:>4} {bias:+7.3f} {half:6.3f} {truth:6.3f}")


def _count_em_rounds(counter: dict[str, int]) -> None:
    """Wrap the one-coin fit (once) to count fits that used every allowed round: EM that
    did not converge. workers.py and the bootstrap call it through the module, the soft
    labels' refit (estimation/crowd_model.py) by its imported name."""
    import inspect

    from annotations.quality import aggregation
    from estimation import crowd_model

    fit = aggregation.one_coin
    default = inspect.signature(fit).parameters["max_iter"].default

    def counted(*args: object, **kwargs: object) -> object:
        result = fit(*args, **kwargs)
        counter["fits"] += 1
        counter["at_limit"] += result.iterations >= kwargs.get("max_iter", default)
        return result

    aggregation.one_coin = crowd_model.one_coin = counted


def _one(out: Path, docs: int, systems: int, seed: int, error: float,
         world_kind: str, source: Path | None, calibrate: bool = False,
         rescore: bool = False, confusion: Path | None = None) -> dict:
    """In the child: run the demo (``rescore``: keep the world and database already in
    ``out``), then score with hard and soft labels."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import override_settings

    from kbpo.core.models import Corpus
    from kbpo.demo.management.commands.demo import against_truth

    world = out / "world"
    tag = "docred-tac" if world_kind == "docred-tac" else "demo"
    extra = {"world": world_kind, "source": source} if world_kind == "docred-tac" else {}
    counter = {"fits": 0, "at_limit": 0}
    _count_em_rounds(counter)  # the demo's own fits: labels at answer time, the soft refit
    with open(os.devnull, "w") as quiet:
        if not rescore:
            if confusion is not None:
                extra["confusion"] = confusion
            call_command("demo", out=str(world), docs=docs, systems=systems, seed=seed,
                         crowd_error=error, stdout=quiet, stderr=quiet, **extra)
        corpus = Corpus.objects.get(tag=tag)
        result = {"demo_em": dict(counter)}
        if calibrate:
            from noisy_calibration import calibration

            result["calibration"] = calibration(tag, world / "gold.jsonl")
        for name, soft, boot in VARIANTS:
            counter.update(fits=0, at_limit=0)
            with override_settings(KBPO_SOFT_LABELS=soft, KBPO_SOFT_LABEL_BOOTSTRAP=boot):
                start = time.perf_counter()
                call_command("recompute_scores", corpus=tag, stdout=quiet)
                seconds = time.perf_counter() - start
                got = against_truth(corpus, world / "truth.json")
            result[name] = {k: [*v[:3], seconds, _per_metric(v[3]), _per_system(v[3])]
                            for k, v in got.items()}
            result[name]["em"] = dict(counter)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--systems", type=int, default=6)
    parser.add_argument("--error", type=float, default=0.2)
    parser.add_argument("--world", choices=["synthetic", "docred-tac"],
                        default="synthetic")
    parser.add_argument("--source", type=Path, help="docred-tac: the DocRED / Re-DocRED JSON file")
    parser.add_argument("--calibration", action="store_true",
                        help="also compare the stored soft labels with the gold "
                             "(bench/noisy_calibration.py)")
    parser.add_argument("--keep", type=Path,
                        help="keep each seed's world and SQLite database in KEEP/seed-S")
    parser.add_argument("--rescore", action="store_true",
                        help="with --keep: score the worlds and databases kept there by an "
                             "earlier run again with the current code (paired before/after)")
    parser.add_argument("--json", type=Path, help="write every seed's result to this file")
    parser.add_argument("--confusion", type=Path,
                        help="the crowd's per-worker, per-relation false yes and miss rates "
                             "(simulate_crowd --confusion, docs/operators/crowd.md)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rescore and not args.keep and not args.child:
        parser.error("--rescore needs --keep DIR")
    if args.world == "docred-tac" and (args.source is None or not args.source.is_file()):
        parser.error("--world docred-tac needs --source FILE")
    source = args.source.resolve() if args.source else None
    if args.child:
        res = _one(args.child, args.docs, args.systems, args.seed, args.error, args.world,
                   source, args.calibration, args.rescore, args.confusion)
        (args.child / "result.json").write_text(json.dumps(res))
        return 0
    print(f"{args.world} demo world: {args.docs} documents, {args.systems} systems, crowd error "
          f"{args.error} (+10% spammers); instance scheme, 90% intervals, P and R per system")
    print(f"{'seed':>4} {'labels':9s} {'kind':6s} {'covered':>9s} {'MAE':>6s} "
          f"{'recompute s':>11s}")
    totals: dict[tuple[str, str], list[float]] = {}
    records: dict[tuple[str, str], list[dict]] = {}
    everything: dict[int, dict] = {}
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix="bench_noisy_demo_") as scratch:
            tmp = Path(scratch)
            if args.keep:
                tmp = args.keep.resolve() / f"seed-{seed}"
                tmp.mkdir(parents=True, exist_ok=True)
            env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
            env["DATABASE_URL"] = f"sqlite:///{tmp}/db.sqlite3"
            # Every world numbers its submissions 1, 2, ...: salted per seed, the worlds'
            # sample draws are independent (unsalted they reused the same random numbers).
            env["KBPO_SAMPLE_SALT"] = str(SALT + seed)
            subprocess.run([sys.executable, __file__, "--child", str(tmp), "--seed", str(seed),
                            "--docs", str(args.docs), "--systems", str(args.systems),
                            "--error", str(args.error), "--world", args.world,
                            *(["--source", str(source)] if source else []),
                            *(["--calibration"] if args.calibration else []),
                            *(["--rescore"] if args.rescore else []),
                            *(["--confusion", str(args.confusion.resolve())]
                              if args.confusion else [])],
                           env=env, check=True, cwd=tmp)
            res = json.loads((tmp / "result.json").read_text())
        everything[seed] = res
        em = res.pop("demo_em")
        print(f"{seed:>4} demo      one-coin EM fits at the round limit: "
              f"{em['at_limit']}/{em['fits']}", flush=True)
        if "calibration" in res:
            from noisy_calibration import print_calibration

            print_calibration(seed, res.pop("calibration"))
        for labels, _, _ in VARIANTS:
            em = res[labels].pop("em")
            for kind, (covered, total, mae, seconds, split, per) in res[labels].items():
                records.setdefault((labels, kind), []).extend(per)
                t = totals.setdefault((labels, kind), [0, 0, 0.0])
                t[0] += covered
                t[1] += total
                t[2] += mae * total
                for metric, (c, n, e) in split.items():
                    m = totals.setdefault((labels, f"{kind} {metric}"), [0, 0, 0.0])
                    m[0] += c
                    m[1] += n
                    m[2] += e
                print(f"{seed:>4} {labels:9s} {kind:6s} {covered:>4}/{total:<4} {mae:6.3f} "
                      f"{seconds:11.1f}", flush=True)
            print(f"{seed:>4} {labels:9s} one-coin EM fits at the round limit: "
                  f"{em['at_limit']}/{em['fits']}", flush=True)
    for (labels, kind), (covered, total, err) in totals.items():
        print(f"{'all':>4} {labels:9s} {kind:8s} {covered:>4}/{total:<4} "
              f"{err / max(total, 1):6.3f}  ({covered / max(total, 1):.2f} covered)")
    _miss_summary(records)
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
