"""Benchmark: the leaderboard with 100 systems under 50 concurrent clients on loopback.

Creates a scratch Postgres database, fills it with 100 really scored systems (a few
score runs of history, 10% private), starts gunicorn on 127.0.0.1 against it with
every cache off, and drives a fixed number of requests per endpoint with a bounded
thread pool (50 clients). Prints p50/p95/p99 latency and throughput for /healthz,
the HTML page (anonymous and logged in), the JSON API, the CSV download, a
submission's report page and its progress.json, then drops the database. The last
line compares the page's p95 with /healthz's on the same server and load:

    leaderboard p95 X ms, healthz p95 Y ms, ratio Z

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo python bench/bench_leaderboard.py \
        [--systems 100] [--clients 50] [--requests 2000] [--workers 2]

The machine's cores are shared with the client threads: figures are noisy, compare
medians of a few runs.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
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


def populate(n_systems: int, per_system: int, n_runs: int) -> str:
    """A corpus with `n_systems` really scored systems (bench_recompute's synthetic
    world, small), `n_runs` score runs of history, mixed owners, 10% private.

    Returns a session cookie of the owner of the report page that is measured.
    """
    import argparse

    import numpy as np

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_recompute import build

    args = argparse.Namespace(systems=n_systems, per_system=per_system, pairs=50_000,
                              docs=500, draws=500, exhaustive=50)
    data = build(args, np.random.default_rng(11))
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from estimation.scoring import recompute
    from submissions.models import Submission

    users = [User.objects.create(username=f"team{i}", email=f"t{i}@example.org")
             for i in range(20)]
    for i, sub in enumerate(Submission.objects.filter(corpus=data["corpus"]).order_by("pk")):
        Submission.objects.filter(pk=sub.pk).update(
            owner=users[i % 20], public=i % 10 != 0, is_baseline=i < 3,
            paper_url="https://example.org/paper" if i % 3 == 0 else "",
            method_description="Neural pipeline with distant supervision.")
    for r in range(n_runs):
        recompute(data["corpus"], trigger=f"history {r}")
    client = Client()
    client.force_login(users[0])
    return client.cookies[settings.SESSION_COOKIE_NAME].value


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


def drive(url: str, clients: int, requests: int, cookie: str = "") -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()

    def one(_: int) -> None:
        nonlocal errors
        t = time.perf_counter()
        try:
            req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
            with urllib.request.urlopen(req, timeout=30) as resp:
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
    parser.add_argument("--per-system", type=int, default=2_000,
                        help="predictions per system (the page cost does not depend on it)")
    parser.add_argument("--runs", type=int, default=5, help="score runs in the history")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
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
    # Every cache off: no CACHE_URL (the default cache is then per-process memory,
    # which no view uses), DEBUG off as in production.
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "kbpo.settings",
           "CELERY_BROKER_URL": "", "CACHE_URL": "", "DEBUG": "0", "PYTHONPATH": str(ROOT),
           # The API's rate limit would answer most of this load with 429.
           "KBPO_API_RATE_ANON": "1000000/min", "KBPO_API_RATE_USER": "1000000/min"}
    os.environ.update({"DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "kbpo.settings",
                       "CACHE_URL": "", "CELERY_BROKER_URL": ""})
    server = None
    try:
        t = time.monotonic()
        import django

        django.setup()
        cookie_value = populate(args.systems, args.per_system, args.runs)
        from django.conf import settings

        from submissions.models import Submission

        cookie = f"{settings.SESSION_COOKIE_NAME}={cookie_value}"
        report_id = (Submission.objects.filter(owner__username="team0").order_by("pk")
                     .values_list("pk", flat=True).first())
        print(f"database: {name}, {args.systems} systems × {args.per_system} predictions, "
              f"{args.runs} score runs ({time.monotonic() - t:.1f} s to fill)")
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
        results = {}
        for label, path, who in [
                ("healthz", "/healthz", ""),
                ("page", "/leaderboard/bench/", ""),
                ("page sort=precision", "/leaderboard/bench/?sort=precision", ""),
                ("page, logged in", "/leaderboard/bench/", cookie),
                ("API JSON", "/api/leaderboard/bench/", ""),
                ("CSV", "/leaderboard/bench/leaderboard.csv", ""),
                ("report page", f"/submissions/{report_id}/report/", cookie),
                ("progress.json", f"/submissions/{report_id}/report/progress.json",
                 cookie)]:
            drive(host + path, args.clients, min(200, args.requests), who)  # warm up
            r = results[label] = drive(host + path, args.clients, args.requests, who)
            print(f"{label:<20} p50 {r['p50']:7.1f} ms  p95 {r['p95']:7.1f} ms  "
                  f"p99 {r['p99']:7.1f} ms  {r['rps']:6.1f} req/s  errors {r['errors']}")
        health = results["healthz"]["p95"]
        for label, r in results.items():
            if label != "healthz":
                print(f"  {label:<20} p95 / healthz p95 = {r['p95'] / health:.1f}")
        page = results["page"]["p95"]
        print(f"leaderboard p95 {page:.0f} ms, healthz p95 {health:.0f} ms, "
              f"ratio {page / health:.1f}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        drop_db(base, name)


if __name__ == "__main__":
    main()
