"""Load test with locust: the score pages under a bounded, mixed crowd of clients.

Beside bench_leaderboard.py (a thread pool hammering one URL at a time), this runs
the locust profile in bench/locust_leaderboard.py — anonymous visitors and logged-in
researchers at once — headless, against gunicorn on 127.0.0.1 only, for a bounded
number of users and seconds, with every cache off. Prints locust's per-endpoint
table and, last, one line comparing the page's p95 with /healthz's.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo python bench/bench_locust.py \\
        [--users 50] [--spawn-rate 10] [--seconds 60] [--workers 2]

Needs locust (requirements-dev.txt). Figures are noisy on shared cores.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_common import (  # noqa: E402
    drop_db,
    exit_on_sigterm,
    gunicorn,
    ratio_line,
    scratch_db,
    server_env,
)
from bench_leaderboard import populate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--users", type=int, default=50, help="at most 500")
    parser.add_argument("--spawn-rate", type=float, default=10)
    parser.add_argument("--seconds", type=int, default=60, help="at most 600")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    args = parser.parse_args()
    if not (0 < args.users <= 500 and 0 < args.seconds <= 600):
        sys.exit("--users must be in 1..500 and --seconds in 1..600 (a bounded test)")
    try:
        import locust  # noqa: F401
    except ImportError:
        sys.exit("locust is not installed: pip install -r requirements-dev.txt")
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a Postgres server (a scratch database is created)")
    exit_on_sigterm()
    name = f"kbpo_bench_locust_{os.getpid()}"
    url = scratch_db(base, name)
    env = server_env(url)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE",
                                           "CELERY_BROKER_URL", "CACHE_URL")})
    try:
        import django

        django.setup()
        cookie = populate(args.systems, 2_000, 3)
        from django.conf import settings
        from django.db import connections

        from submissions.models import Submission

        report = (Submission.objects.filter(owner__username="team0").order_by("pk")
                  .values_list("pk", flat=True).first())
        connections.close_all()
        with gunicorn(env, args.workers) as server, \
                tempfile.TemporaryDirectory() as tmp:
            prefix = str(Path(tmp) / "locust")
            subprocess.run(
                [sys.executable, "-m", "locust", "-f", str(ROOT / "bench/locust_leaderboard.py"),
                 "--headless", "--host", server.host, "--users", str(args.users),
                 "--spawn-rate", str(args.spawn_rate), "--run-time", f"{args.seconds}s",
                 "--stop-timeout", "10", "--csv", prefix, "--only-summary",
                 "--loglevel", "WARNING"],
                cwd=ROOT, check=False, env={
                    **env, "KBPO_LOCUST_COOKIE": f"{settings.SESSION_COOKIE_NAME}={cookie}",
                    "KBPO_LOCUST_REPORT": str(report)})
            with open(prefix + "_stats.csv", newline="") as fh:
                stats = {r["Name"]: r for r in csv.DictReader(fh)}
        p95 = {n: float(r["95%"]) for n, r in stats.items() if r["95%"] not in ("", "N/A")}
        for n, r in stats.items():
            if n in p95 and n != "Aggregated":
                print(f"{n:<16} {r['Request Count']:>6} requests, {r['Failure Count']} "
                      f"failures, p50 {r['50%']} ms, p95 {r['95%']} ms")
        print(ratio_line(p95.get("page", float("nan")), p95.get("healthz", float("nan")),
                         f"locust: {args.users} users, {args.seconds} s; "))
    finally:
        drop_db(base, name)


if __name__ == "__main__":
    main()
