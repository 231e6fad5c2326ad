"""What the load benchmarks share: a scratch database, a gunicorn on loopback with every
cache off, the server's CPU per request, and the closing ratio line.

Used by bench_leaderboard.py and bench_locust.py (bench_recompute.py and bench_saved.py: the
scratch database and the peak RSS).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _admin(base_url: str, sql: str) -> None:
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(base_url)
    conn = psycopg2.connect(dbname="postgres", user=cfg["USER"] or "postgres",
                            host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432,
                            password=cfg.get("PASSWORD") or None)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(sql)
    conn.close()


def scratch_db(base_url: str, name: str) -> str:
    """Create (afresh) database `name` on `base_url`'s server; its URL."""
    import dj_database_url

    _admin(base_url, f'DROP DATABASE IF EXISTS "{name}"')
    _admin(base_url, f'CREATE DATABASE "{name}"')
    cfg = dj_database_url.parse(base_url)
    user = cfg["USER"] or "postgres"
    pw = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    return f"postgres://{user}{pw}@{cfg['HOST'] or '127.0.0.1'}:{cfg['PORT'] or 5432}/{name}"


def drop_db(base_url: str, name: str) -> None:
    _admin(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def exit_on_sigterm() -> None:
    """Turn SIGTERM (`timeout`, a killed job) into SystemExit, so `finally` blocks stop
    the server and drop the scratch database."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(db_url: str) -> dict[str, str]:
    """The environment of a benchmarked server: every cache off (no CACHE_URL: the
    default cache is per-process memory, which no page uses), DEBUG off as in
    production, and API rate limits out of the way (they would answer 429)."""
    return {**os.environ, "DATABASE_URL": db_url, "DJANGO_SETTINGS_MODULE": "kbpo.settings",
            "CELERY_BROKER_URL": "", "CACHE_URL": "", "DEBUG": "0", "PYTHONPATH": str(ROOT),
            "KBPO_API_RATE_ANON": "1000000/min", "KBPO_API_RATE_USER": "1000000/min"}


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


class Server:
    """gunicorn on 127.0.0.1 (sync workers), and the CPU time its workers spent."""

    def __init__(self, proc: subprocess.Popen, host: str) -> None:
        self.proc, self.host = proc, host

    def cpu_seconds(self) -> float:
        """User + system CPU of the worker processes so far (Linux /proc; 0 elsewhere)."""
        total = 0.0
        try:
            kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
            tick = os.sysconf("SC_CLK_TCK")
            for pid in kids.split():
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            return 0.0
        return total


@contextmanager
def gunicorn(env: dict[str, str], workers: int, wait_path: str = "/healthz") -> Iterator[Server]:
    """A gunicorn serving kbpo on a free loopback port, stopped on exit."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "kbpo.wsgi", "-b", f"127.0.0.1:{port}",
         "-w", str(workers), "--log-level", "warning"], cwd=ROOT, env=env)
    try:
        host = f"http://127.0.0.1:{port}"
        wait_up(host + wait_path)
        yield Server(proc, host)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ratio_line(page_p95: float, health_p95: float, prefix: str = "") -> str:
    """The closing line issue 18 asks for."""
    ratio = page_p95 / health_p95 if health_p95 else float("nan")
    return (f"{prefix}leaderboard p95 {page_p95:.0f} ms, healthz p95 {health_p95:.0f} ms, "
            f"ratio {ratio:.1f}")


__all__ = ["ROOT", "Server", "drop_db", "exit_on_sigterm", "free_port", "gunicorn",
           "ratio_line", "scratch_db", "server_env", "wait_up"]


def reset_peak() -> None:
    """Reset the process's peak RSS (VmHWM) to its current RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_mb() -> float:
    """The process's peak RSS (VmHWM) since start or the last `reset_peak`, in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")
