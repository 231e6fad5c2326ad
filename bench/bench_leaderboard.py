"""Benchmark: the leaderboard with 100 systems under 50 concurrent clients on loopback.

Creates a scratch Postgres database, fills it with 100 scored systems (history of a
few score runs), starts gunicorn on 127.0.0.1 against it, and drives a fixed number
of requests with a bounded thread pool (50 clients). Prints p50/p95/p99 latency and
throughput for the HTML page, the JSON API and the CSV download, then drops the
database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo python bench/bench_leaderboard.py \
        [--systems 100] [--clients 50] [--requests 2000] [--workers 4]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def scratch_db(base_url: str, name: str) -> str:
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(base_url)
    conn = psycopg2.connect(dbname="postgres", user=cfg["USER"] or "postgres",
                            host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432,
                            password=cfg.get("PASSWORD") or None)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    user = cfg["USER"] or "postgres"
    pw = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    return f"postgres://{user}{pw}@{cfg['HOST'] or '127.0.0.1'}:{cfg['PORT'] or 5432}/{name}"


def drop_db(base_url: str, name: str) -> None:
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(base_url)
    conn = psycopg2.connect(dbname="postgres", user=cfg["USER"] or "postgres",
                            host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432,
                            password=cfg.get("PASSWORD") or None)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


def populate(n_systems: int, n_runs: int) -> None:
    """100 submissions with n_runs score runs each (4 schemes), like a busy corpus."""
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.utils import timezone

    from estimation.models import ScoreRun, SystemScore
    from kbpo.core.models import Corpus
    from submissions.models import State, Submission

    call_command("migrate", verbosity=0)
    corpus = Corpus.objects.create(tag="bench", description="Leaderboard benchmark")
    users = [User.objects.create(username=f"team{i}", email=f"t{i}@example.org")
             for i in range(20)]
    subs = Submission.objects.bulk_create(
        Submission(owner=users[i % 20], corpus=corpus, name=f"system-{i:03d}",
                   state=State.SCORED, public=i % 10 != 0, is_baseline=i < 3,
                   paper_url="https://example.org/paper" if i % 3 == 0 else "",
                   method_description="Neural pipeline with distant supervision.",
                   file="submissions/bench.kb") for i in range(n_systems))
    rng = random.Random(1)
    truth = {s.pk: (rng.uniform(0.3, 0.9), rng.uniform(0.05, 0.5)) for s in subs}
    for r in range(n_runs):
        now = timezone.now()
        run = ScoreRun.objects.create(corpus=corpus, generation=r, status="complete",
                                      draw_scheme="instance", confidence=0.9, started_at=now,
                                      finished_at=now, duration_s=1.0, n_systems=n_systems,
                                      n_labels=1000 * (r + 1), n_draws=500 * n_systems,
                                      n_exhaustive_documents=100)
        width = 0.2 / (r + 1) ** 0.5
        rows = []
        for s in subs:
            p, rec = truth[s.pk]
            f1 = 2 * p * rec / (p + rec)
            vals = {}
            for stem, v in (("p", p), ("r", rec), ("f1", f1)):
                for kind in ("joint", "simple"):
                    w = width * (1 if kind == "joint" else 1.6)
                    vals[f"{stem}_{kind}"] = v
                    vals[f"{stem}_{kind}_lo"] = max(0.0, v - w / 2)
                    vals[f"{stem}_{kind}_hi"] = min(1.0, v + w / 2)
            for scheme in ("instance", "predicate", "entity", "entity_relation"):
                rows.append(SystemScore(run=run, submission=s, scheme=scheme, labels_used=400,
                                        draws=500, pending=0, cost_usd=Decimal("75.00"),
                                        **vals))
        SystemScore.objects.bulk_create(rows, batch_size=2000)


def wait_up(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def drive(url: str, clients: int, requests: int) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()

    def one(_: int) -> None:
        nonlocal errors
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                resp.read()
                ok = resp.status == 200
        except OSError:
            ok = False
        dt = time.perf_counter() - t
        with lock:
            latencies.append(dt)
            errors += not ok

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    q = statistics.quantiles(latencies, n=100)
    return {"p50": q[49] * 1000, "p95": q[94] * 1000, "p99": q[98] * 1000,
            "rps": requests / wall, "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--runs", type=int, default=20, help="score runs in the history")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a Postgres server (a scratch database is created)")
    if not args.port:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            args.port = sock.getsockname()[1]
    name = f"kbpo_bench_lb_{os.getpid()}"
    url = scratch_db(base, name)
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "kbpo.settings",
           "CELERY_BROKER_URL": "", "DEBUG": "0", "PYTHONPATH": str(ROOT)}
    os.environ.update({"DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "kbpo.settings"})
    server = None
    try:
        t = time.monotonic()
        populate(args.systems, args.runs)
        print(f"database: {name}, {args.systems} systems × {args.runs} runs × 4 schemes "
              f"({time.monotonic() - t:.1f} s to fill)")
        from django.db import connections

        connections.close_all()
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "kbpo.wsgi", "-b", f"127.0.0.1:{args.port}",
             "-w", str(args.workers), "--log-level", "warning"],
            cwd=ROOT, env=env)
        host = f"http://127.0.0.1:{args.port}"
        wait_up(f"{host}/leaderboard/bench/")
        print(f"gunicorn: {args.workers} workers on {os.cpu_count()} cores; "
              f"{args.clients} concurrent clients, {args.requests} requests per endpoint")
        for label, path in [("page", "/leaderboard/bench/"),
                            ("page sort=precision", "/leaderboard/bench/?sort=precision"),
                            ("API JSON", "/api/leaderboard/bench/"),
                            ("CSV", "/leaderboard/bench/leaderboard.csv")]:
            drive(host + path, args.clients, min(200, args.requests))  # warm up
            r = drive(host + path, args.clients, args.requests)
            print(f"{label:<20} p50 {r['p50']:7.1f} ms  p95 {r['p95']:7.1f} ms  "
                  f"p99 {r['p99']:7.1f} ms  {r['rps']:6.1f} req/s  errors {r['errors']}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        drop_db(base, name)


if __name__ == "__main__":
    main()
