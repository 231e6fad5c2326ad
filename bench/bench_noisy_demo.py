"""End to end on the demo world with a noisy crowd: joint intervals against truth.json.

Usage: python bench/bench_noisy_demo.py [--seeds 1 2 3] [--docs 120] [--systems 6]
       [--error 0.2]

For each seed, in a fresh temporary directory (SQLite, Celery eager: DATABASE_URL and
CELERY_BROKER_URL are overridden for the child process), runs `manage.py demo
--crowd-error E` (the simulated crowd: honest workers at error E, 10% spammers, control
questions at KBPO_CONTROL_SHARE), then recomputes the scores with hard labels and with
soft labels (KBPO_SOFT_LABELS) without and with the parameter bootstrap
(KBPO_SOFT_LABEL_BOOTSTRAP=8) and prints, per estimator kind, how many of the P and R
intervals contain truth.json's values, the mean absolute error and the recompute's wall
time. Slow: a few minutes per seed at the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (name, KBPO_SOFT_LABELS, KBPO_SOFT_LABEL_BOOTSTRAP)
VARIANTS = (("hard", False, 0), ("soft", True, 0), ("soft+boot", True, 8))


def _one(out: Path, docs: int, systems: int, seed: int, error: float) -> dict:
    """In the child: run the demo, then score with hard and soft labels."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import override_settings

    from kbpo.core.models import Corpus
    from kbpo.demo.management.commands.demo import against_truth

    world = out / "world"
    with open(os.devnull, "w") as quiet:
        call_command("demo", out=str(world), docs=docs, systems=systems, seed=seed,
                     crowd_error=error, stdout=quiet, stderr=quiet)
        corpus = Corpus.objects.get(tag="demo")
        result = {}
        for name, soft, boot in VARIANTS:
            with override_settings(KBPO_SOFT_LABELS=soft, KBPO_SOFT_LABEL_BOOTSTRAP=boot):
                start = time.perf_counter()
                call_command("recompute_scores", corpus="demo", stdout=quiet)
                seconds = time.perf_counter() - start
                got = against_truth(corpus, world / "truth.json")
            result[name] = {k: [*v[:3], seconds] for k, v in got.items()}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--systems", type=int, default=6)
    parser.add_argument("--error", type=float, default=0.2)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        res = _one(args.child, args.docs, args.systems, args.seed, args.error)
        (args.child / "result.json").write_text(json.dumps(res))
        return 0
    print(f"demo world: {args.docs} documents, {args.systems} systems, crowd error "
          f"{args.error} (+10% spammers); instance scheme, 90% intervals, P and R per system")
    print(f"{'seed':>4} {'labels':9s} {'kind':6s} {'covered':>9s} {'MAE':>6s} "
          f"{'recompute s':>11s}")
    totals: dict[tuple[str, str], list[float]] = {}
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix="bench_noisy_demo_") as tmp:
            env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
            env["DATABASE_URL"] = f"sqlite:///{tmp}/db.sqlite3"
            subprocess.run([sys.executable, __file__, "--child", tmp, "--seed", str(seed),
                            "--docs", str(args.docs), "--systems", str(args.systems),
                            "--error", str(args.error)], env=env, check=True, cwd=tmp)
            res = json.loads((Path(tmp) / "result.json").read_text())
        for labels, _, _ in VARIANTS:
            for kind, (covered, total, mae, seconds) in res[labels].items():
                t = totals.setdefault((labels, kind), [0, 0, 0.0])
                t[0] += covered
                t[1] += total
                t[2] += mae * total
                print(f"{seed:>4} {labels:9s} {kind:6s} {covered:>4}/{total:<4} {mae:6.3f} "
                      f"{seconds:11.1f}", flush=True)
    for (labels, kind), (covered, total, err) in totals.items():
        print(f"{'all':>4} {labels:9s} {kind:6s} {covered:>4}/{total:<4} "
              f"{err / max(total, 1):6.3f}  ({covered / max(total, 1):.2f} covered)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
