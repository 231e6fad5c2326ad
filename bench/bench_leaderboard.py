"""Benchmark: the leaderboard with 100 systems under 50 concurrent clients on loopback.

Creates a scratch Postgres database, fills it with 100 really scored systems (a few
score runs of history, 10% private), starts gunicorn on 127.0.0.1 against it with
every cache off, and drives a fixed number of requests per endpoint with a bounded
thread pool (50 clients). Prints p50/p95/p99 latency and throughput for /healthz,
the HTML page (anonymous and logged in), the JSON API, the CSV download, a
submission's report page and its progress.json, then drops the database. Signed-in
requests send the session cookie and the CSRF cookie the first page set, as a browser. The last
line compares the page's p95 with /healthz's on the same server and load:

    leaderboard p95 X ms, healthz p95 Y ms, ratio Z

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo python bench/bench_leaderboard.py \
        [--systems 100] [--clients 50] [--requests 2000] [--workers 2] [--cache-url redis://…]

The machine's cores are shared with the client threads: figures are noisy, compare
medians of a few runs.

`--recompute-beside` then measures twice more with every endpoint's requests
interleaved (one shuffled stream, so that all endpoints see the same moments of the
machine's load): once alone, once while another process recomputes the corpus's scores
in a loop (`recompute(corpus, full=True)`: every instance read again and every system
estimated; a run whose scores equal the last one's is not stored again) at the
scheduling priority the `scorer` service runs at (nice 10, docker-compose.yml), and
prints the same ratios and closing line for each, prefixed "interleaved:" and "with a
recompute beside:".
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

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
                              docs=500, draws=500, exhaustive=50,
                              answers=3)  # crowd answers behind labels, as in production
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


def browser_cookies(host: str, session_cookie: str) -> str:
    """The session cookie and the CSRF cookie a first signed-in page sets, as a browser
    sends both from then on (without it every request would make a new CSRF secret and
    set it again, as only a first visit does)."""
    from django.conf import settings

    req = urllib.request.Request(host + "/leaderboard/bench/",
                                 headers={"Cookie": session_cookie})
    with urllib.request.urlopen(req, timeout=30) as resp:
        for header in resp.headers.get_all("Set-Cookie") or []:
            pair = header.split(";", 1)[0]
            if pair.startswith(f"{settings.CSRF_COOKIE_NAME}="):
                return f"{session_cookie}; {pair}"
    sys.exit("the signed-in page set no CSRF cookie: the bench cannot act as a browser")


def fetch(url: str, cookie: str = "") -> tuple[float, bool]:
    """One GET: its latency in seconds and whether it answered 200."""
    t = time.perf_counter()
    try:
        req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
            ok = resp.status == 200
    except OSError:
        ok = False
    return time.perf_counter() - t, ok


def drive(url: str, clients: int, requests: int, cookie: str = "") -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()

    def one(_: int) -> None:
        nonlocal errors
        dt, ok = fetch(url, cookie)
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


ENDPOINTS = [("healthz", "/healthz", False),
             ("page", "/leaderboard/bench/", False),
             ("page sort=precision", "/leaderboard/bench/?sort=precision", False),
             ("page, logged in", "/leaderboard/bench/", True),
             ("API JSON", "/api/leaderboard/bench/", False),
             ("CSV", "/leaderboard/bench/leaderboard.csv", False),
             ("report page", "/submissions/{report}/report/", True),
             ("progress.json", "/submissions/{report}/report/progress.json", True)]


# The recompute loop of `--recompute-beside`, in its own process (its own GIL and
# database connection, as a Celery worker): full rebuilds of the bench corpus until
# killed, each timed on stderr.
RECOMPUTE_LOOP = """
import os, sys, time, django
os.nice(SCORER_NICE)
django.setup()
from kbpo.core.models import Corpus
from estimation.scoring import recompute
corpus = Corpus.objects.get(tag="bench")
i = 0
while True:
    t = time.monotonic()
    recompute(corpus, full=True, trigger=f"beside {i}")
    print(f"recompute beside: {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
    i += 1
"""


# The scorer's niceness in docker-compose.yml: a recompute yields the cores to requests.
SCORER_NICE = 10


def drive_mixed(urls: dict[str, tuple[str, str]], clients: int, requests: int
                ) -> dict[str, dict[str, float]]:
    """``requests`` of each endpoint (label: (url, cookie)) in one shuffled stream."""
    import random

    order = [label for label in urls for _ in range(requests)]
    random.Random(0).shuffle(order)
    latencies: dict[str, list[float]] = {label: [] for label in urls}
    errors = dict.fromkeys(urls, 0)
    lock = threading.Lock()

    def one(label: str) -> None:
        dt, ok = fetch(*urls[label])
        with lock:
            latencies[label].append(dt)
            errors[label] += not ok

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(one, order))
    wall = time.perf_counter() - t0
    out = {}
    for label, lat in latencies.items():
        q = statistics.quantiles(lat, n=100)
        out[label] = {"p50": q[49] * 1000, "p95": q[94] * 1000, "p99": q[98] * 1000,
                      "rps": len(order) / wall, "errors": errors[label], "cpu": float("nan")}
        print(f"{label:<20} p50 {q[49] * 1000:7.1f} ms  p95 {q[94] * 1000:7.1f} ms  "
              f"p99 {q[98] * 1000:7.1f} ms  errors {errors[label]}")
    print(f"  ({len(order)} requests interleaved, {len(order) / wall:.1f} req/s in all)")
    return out


def measure(server, endpoints: list[tuple[str, str, bool]], cookie: str, report_id: int,
            clients: int, requests: int) -> dict[str, dict[str, float]]:
    """Every endpoint: a short warm-up, then ``requests`` timed ones; printed as they go."""
    results = {}
    for label, path, logged_in in endpoints:
        who = cookie if logged_in else ""
        full = server.host + path.format(report=report_id)
        drive(full, clients, min(200, requests), who)  # warm up
        cpu = server.cpu_seconds()
        r = results[label] = drive(full, clients, requests, who)
        r["cpu"] = (server.cpu_seconds() - cpu) / requests * 1000
        print(f"{label:<20} p50 {r['p50']:7.1f} ms  p95 {r['p95']:7.1f} ms  "
              f"p99 {r['p99']:7.1f} ms  {r['rps']:6.1f} req/s  "
              f"CPU {r['cpu']:5.2f} ms/req  errors {r['errors']}")
    return results


def ratios(results: dict[str, dict[str, float]], prefix: str = "") -> None:
    health = results["healthz"]
    for label, r in results.items():
        if label != "healthz":
            cpu = ("" if np.isnan(r["cpu"]) else
                   f"   CPU / healthz CPU = {r['cpu'] / max(health['cpu'], 1e-9):5.1f}")
            print(f"  {label:<20} p95 / healthz p95 = {r['p95'] / health['p95']:5.1f}{cpu}")
    print(ratio_line(results["page"]["p95"], health["p95"], prefix))


def interleaved(server, cookie: str, report_id: int, clients: int, requests: int
                ) -> dict[str, dict[str, float]]:
    urls = {label: (server.host + path.format(report=report_id), cookie if logged_in else "")
            for label, path, logged_in in ENDPOINTS}
    drive_mixed(urls, clients, min(100, requests))  # warm up
    return drive_mixed(urls, clients, requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--per-system", type=int, default=2_000,
                        help="predictions per system (the page cost does not depend on it)")
    parser.add_argument("--runs", type=int, default=5, help="score runs in the history")
    parser.add_argument("--clients", type=int, default=50, help="at most 200")
    parser.add_argument("--requests", type=int, default=2000, help="at most 20000")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--cache-url", default="", metavar="REDIS_URL",
                        help="the server's CACHE_URL (login sessions then read from Redis); "
                             "default none: every cache off")
    parser.add_argument("--recompute-beside", action="store_true",
                        help="measure again while another process recomputes the scores")
    args = parser.parse_args()
    if not (0 < args.clients <= 200 and 0 < args.requests <= 20_000):
        sys.exit("--clients must be in 1..200 and --requests in 1..20000 (a bounded test)")
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a Postgres server (a scratch database is created)")
    exit_on_sigterm()
    name = f"kbpo_bench_lb_{os.getpid()}"
    url = scratch_db(base, name)
    env = {**server_env(url), "CACHE_URL": args.cache_url}
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE",
                                           "CELERY_BROKER_URL", "CACHE_URL")})
    try:
        t = time.monotonic()
        import django

        django.setup()
        cookie_value = populate(args.systems, args.per_system, args.runs)
        from django.conf import settings
        from django.db import connections

        from submissions.models import Submission

        cookie = f"{settings.SESSION_COOKIE_NAME}={cookie_value}"
        report_id = (Submission.objects.filter(owner__username="team0").order_by("pk")
                     .values_list("pk", flat=True).first())
        print(f"database: {name}, {args.systems} systems × {args.per_system} predictions, "
              f"{args.runs} score runs ({time.monotonic() - t:.1f} s to fill)")
        connections.close_all()
        with gunicorn(env, args.workers, "/leaderboard/bench/") as server:
            print(f"gunicorn: {args.workers} workers on {os.cpu_count()} cores; "
                  f"{args.clients} concurrent clients, {args.requests} requests per endpoint"
                  "; CPU = gunicorn workers' CPU per request (the machine may be shared)")
            cookie = browser_cookies(server.host, cookie)
            results = measure(server, ENDPOINTS, cookie, report_id, args.clients,
                              args.requests)
            ratios(results)
            if args.recompute_beside:
                print("interleaved, alone:")
                alone = interleaved(server, cookie, report_id, args.clients, args.requests)
                loop = subprocess.Popen(
                    [sys.executable, "-c",
                     RECOMPUTE_LOOP.replace("SCORER_NICE", str(SCORER_NICE))],
                    cwd=ROOT, env=env)
                try:
                    time.sleep(5)  # the loop's first run under way
                    if loop.poll() is not None:
                        sys.exit("the recompute loop stopped at once: see its error above")
                    print(f"interleaved, with a recompute beside (full rebuilds in a loop, "
                          f"nice {SCORER_NICE}):")
                    beside = interleaved(server, cookie, report_id, args.clients,
                                         args.requests)
                    if loop.poll() is not None:
                        sys.exit("the recompute loop died during the measurement")
                finally:
                    loop.kill()
                    loop.wait()
                ratios(alone, "interleaved: ")
                ratios(beside, "with a recompute beside: ")
    finally:
        drop_db(base, name)


if __name__ == "__main__":
    main()
