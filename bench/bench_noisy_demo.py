"""End to end on the demo world with a noisy crowd: joint intervals against truth.json.

Usage: python bench/bench_noisy_demo.py [--seeds 1 2 3] [--docs 120] [--systems 6]
       [--error 0.2] [--world docred-tac --source dev_revised.json] [--confusion F.json]
       [--pages]

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
the current code (a paired before/after); --prior-fit decided fits the agreement groups'
priors from decided pairs only (bench/decided_prior.py, crowd-bias.md §15) in that
scoring. --world docred-tac builds the world from a DocRED / Re-DocRED file mapped to
TAC KBP instead (real text: about three quarters of the pairs hold no relation).
--pages: the crowd works as on MTurk instead of through the intake directly: the HITs
are posted to the fake MTurk requester (tests/annotations/crowd/fake_mturk.py) and each
simulated worker accepts a HIT there, opens its task page, posts the page's answers and
submits them to MTurk; the periodic sync confirms them (tests/annotations/crowd/
page_crowd.py). The same workers, pool seed and answers per (worker, question) as the
direct path; then the quality pass, as `simulate_crowd` ends with.
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


def _demo_through_pages(world: Path, docs: int, systems: int, seed: int, error: float,
                        confusion: Path | None, quiet: object) -> dict:
    """The synthetic demo world with its crowd on the (fake) MTurk: the world, corpus and
    exhaustive sample as `demo` builds them, the systems submitted with the MTurk backend
    (their HITs posted to the fake requester), then the simulated crowd answering through
    the task pages until no HIT needs answers, then the quality pass."""
    from django.conf import settings
    from django.core.management import call_command
    from django.test.utils import override_settings

    from annotations.crowd.simulation import GoldKey, load_confusion, make_pool
    from annotations.models import Hit, HitState
    from annotations.quality.workers import update_worker_quality
    from kbpo.core import jobs
    from kbpo.core.models import Corpus
    from kbpo.demo.management.commands.demo import Command as Demo
    from tests.annotations.crowd.fake_mturk import FakeMTurk
    from tests.annotations.crowd.page_crowd import PageCrowd

    # boto3 signs with these; the fake accepts any (no real account is ever reached).
    os.environ.update(AWS_ACCESS_KEY_ID="AKIDKBPOBENCHKEY", AWS_SECRET_ACCESS_KEY="not-secret",
                      AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
                      AWS_EC2_METADATA_DISABLED="true", NO_PROXY="127.0.0.1,localhost")
    start = time.perf_counter()
    with FakeMTurk(balance="1000000.00") as fake, override_settings(
            KBPO_CROWD_BACKEND="mturk", MTURK_ENDPOINT_URL=fake.endpoint_url,
            KBPO_PUBLIC_URL="https://kbpo.example.org",
            EMAIL_BACKEND="kbpo.demo.mail.OneLineBackend",  # as `demo`: "scored" mails
            ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "testserver"],
            # One simulated crowd behind one address: the per-address limit is for people.
            KBPO_ANSWER_RATE_PER_IP=10**9, KBPO_ANSWER_RATE_PER_WORKER=10**9):
        call_command("demo", out=str(world), docs=docs, systems=systems, seed=seed,
                     crowd_error=error, skip_systems=True, stdout=quiet, stderr=quiet)
        corpus = Corpus.objects.get(tag="demo")
        demo = Demo(stdout=quiet, stderr=quiet)
        pool = make_pool(20, error, seed, 0.1)  # simulate_crowd's defaults, as `demo` runs it
        if confusion is not None:
            pool = load_confusion(confusion, pool)
        crowd = PageCrowd(fake, GoldKey.load(world / "gold.jsonl"), pool, seed=seed)
        with jobs.coalesced():  # as `demo`: one recompute at the end, not one per label
            demo._submit_systems(world, corpus, demo._accounts())
            rounds = crowd.run(corpus.pk)
            update_worker_quality(corpus.pk)
        held = Hit.objects.filter(state=HitState.PENDING).exclude(post_error="").count()
        open_hits = len(crowd.open_hits(corpus.pk))
    return {"rounds": rounds, "seconds": time.perf_counter() - start, "held": held,
            "open_hits": open_hits, **crowd.counts}


def _one(out: Path, docs: int, systems: int, seed: int, error: float,
         world_kind: str, source: Path | None, calibrate: bool = False,
         rescore: bool = False, confusion: Path | None = None, pages: bool = False,
         prior_fit: str = "fixed_point") -> dict:
    """In the child: run the demo (``rescore``: keep the world and database already in
    ``out``), then score with hard and soft labels."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    import django

    django.setup()
    from decided_prior import set_fit
    from django.core.management import call_command
    from django.test.utils import override_settings

    from kbpo.core.models import Corpus
    from kbpo.demo.management.commands.demo import against_truth

    world = out / "world"
    tag = "docred-tac" if world_kind == "docred-tac" else "demo"
    extra = {"world": world_kind, "source": source} if world_kind == "docred-tac" else {}
    set_fit(prior_fit)
    counter = {"fits": 0, "at_limit": 0}
    _count_em_rounds(counter)  # the demo's own fits: labels at answer time, the soft refit
    with open(os.devnull, "w") as quiet:
        pages_run = None
        if pages and not rescore:
            pages_run = _demo_through_pages(world, docs, systems, seed, error, confusion, quiet)
        elif not rescore:
            if confusion is not None:
                extra["confusion"] = confusion
            call_command("demo", out=str(world), docs=docs, systems=systems, seed=seed,
                         crowd_error=error, stdout=quiet, stderr=quiet, **extra)
        corpus = Corpus.objects.get(tag=tag)
        result = {"demo_em": dict(counter)}
        if pages_run is not None:
            result["pages"] = pages_run
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
    parser.add_argument("--pages", action="store_true",
                        help="the crowd answers through the task pages and the fake MTurk "
                             "(synthetic world only)")
    parser.add_argument("--prior-fit", choices=["fixed_point", "decided"], default="fixed_point",
                        help="how the agreement groups' priors are fitted "
                             "(bench/decided_prior.py; shipped: fixed_point)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rescore and not args.keep and not args.child:
        parser.error("--rescore needs --keep DIR")
    if args.pages and args.world != "synthetic":
        parser.error("--pages runs the synthetic world")
    if args.world == "docred-tac" and (args.source is None or not args.source.is_file()):
        parser.error("--world docred-tac needs --source FILE")
    source = args.source.resolve() if args.source else None
    if args.child:
        res = _one(args.child, args.docs, args.systems, args.seed, args.error, args.world,
                   source, args.calibration, args.rescore, args.confusion, args.pages,
                   args.prior_fit)
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
                            *(["--pages"] if args.pages else []),
                            "--prior-fit", args.prior_fit,
                            *(["--confusion", str(args.confusion.resolve())]
                              if args.confusion else [])],
                           env=env, check=True, cwd=tmp)
            res = json.loads((tmp / "result.json").read_text())
        everything[seed] = res
        em = res.pop("demo_em")
        if "pages" in res:
            print(f"{seed:>4} pages     {json.dumps(res.pop('pages'))}", flush=True)
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
