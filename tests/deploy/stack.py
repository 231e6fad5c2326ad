"""Running the compose stack's processes on the host, and talking to them over HTTP(S).

`Processes` starts each long-running command in its own process group with its output
in a log file, and stops every one of them (the whole group, so Celery's pool children
and gunicorn's workers go too) however the test ends.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

from tests import ROOT


def free_port() -> int:
    """A port free for TCP and UDP on all interfaces (Caddy's HTTPS port also serves
    HTTP/3 over UDP)."""
    for _ in range(50):
        with socket.socket() as tcp:
            tcp.bind(("", 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port")


def tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


class Processes:
    """The stack's processes, each logging to `<logdir>/<name>.log`."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.procs: dict[str, subprocess.Popen] = {}

    def log(self, name: str) -> Path:
        return self.logdir / f"{name}.log"

    def run(self, name: str, cmd: list[str], env: dict[str, str], timeout: float = 300) -> str:
        """Run a one-off command to completion; its output, or an error with its log."""
        with open(self.log(name), "w") as out:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"{name} ({cmd}) exited with {proc.returncode}:\n"
                                 f"{tail(self.log(name))}")
        return self.log(name).read_text()

    def succeeds(self, name: str, cmd: list[str], env: dict[str, str],
                 timeout: float = 60) -> str | None:
        """Run a probe to completion: its output when it exits 0, else None."""
        try:
            return self.run(name, cmd, env, timeout)
        except (AssertionError, subprocess.TimeoutExpired):
            return None

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        with open(self.log(name), "w") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited with {proc.returncode}:\n"
                                     f"{tail(self.log(name))}")

    def logs(self) -> str:
        return "\n".join(f"--- {name} ---\n{tail(self.log(name), 25)}" for name in self.procs)

    def wait_for(self, what: str, condition: Callable[[], object], timeout: float = 90) -> object:
        """Poll `condition` until it returns something truthy; fail if a process dies or
        the deadline passes (the deadline bounds a hang, it is not a timing assumption)."""
        deadline = time.monotonic() + timeout
        last: BaseException | None = None
        while True:
            self.check_alive()
            try:
                result = condition()
                if result:
                    return result
            except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
                last = exc
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what} (last error: {last!r})\n"
                                     f"{self.logs()}")
            time.sleep(0.25)

    def stop_all(self) -> None:
        """SIGTERM every process group, then SIGKILL what is still there."""
        for proc in reversed(self.procs.values()):
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
        for proc in reversed(self.procs.values()):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=20)
            # Children left behind by a process that exited (a pool worker, say).
            _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)  # the group this test created for it (start_new_session)


@dataclass
class Reply:
    status: int
    headers: Message
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def cookies(self) -> dict[str, str]:
        """Set-Cookie lines by cookie name (the whole line, attributes included)."""
        lines = self.headers.get_all("Set-Cookie") or []
        return {line.split("=", 1)[0].strip(): line for line in lines}


def request(scheme: str, host: str, port: int, path: str, *, method: str = "GET",
            headers: dict[str, str] | None = None, body: bytes | None = None,
            cafile: Path | None = None) -> Reply:
    """One HTTP(S) request; redirects are not followed. HTTPS verifies the certificate
    against `cafile` and the host name."""
    if scheme == "https":
        context = ssl.create_default_context(cafile=str(cafile) if cafile else None)
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, context=context, timeout=30)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return Reply(resp.status, resp.headers, resp.read())
    finally:
        conn.close()
