"""Core Celery tasks."""

from __future__ import annotations

import os
import socket

from celery import shared_task


@shared_task(name="kbpo.ping")
def ping(token: str) -> dict[str, object]:
    """Echo a token with the identity of the process that ran it.

    Operators use it to check that a worker is alive; the test suite uses it to
    prove that tasks really run in a separate worker process.
    """
    return {"token": token, "pid": os.getpid(), "host": socket.gethostname()}
