"""The one place that decides which Chromium the browser tests drive, and how.

`$CHROMIUM_PATH` names the binary; when it is set it is the only candidate (a typo
must not fall back to another browser silently). Otherwise the first of `chromium`,
`chromium-browser` on PATH and `/usr/bin/chromium`. Playwright drives that system
binary and never downloads a browser of its own.

No Chromium or no Playwright: the browser tests skip with the reason, except under
CI=true, where they fail (`tests/conftest.py` also turns any other skip into a failure
there).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
FALLBACKS = ("chromium", "chromium-browser", "/usr/bin/chromium")
# The stand-in MTurk site counts as public and the live server is on localhost: Chrome's
# Local Network Access checks would block that frame (a public HTTPS deployment never
# meets them), so they are switched off for the tests.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,"
        "PrivateNetworkAccessForNavigations"]
ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"


def chromium_path() -> tuple[str | None, str]:
    """(the binary to drive or None, where it was looked for)."""
    configured = os.environ.get("CHROMIUM_PATH")
    if configured:
        found = shutil.which(configured) or (configured if Path(configured).is_file() else None)
        return found, f"$CHROMIUM_PATH={configured}"
    for candidate in FALLBACKS:
        found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if found:
            return found, candidate
    return None, "$CHROMIUM_PATH (unset), " + ", ".join(FALLBACKS)


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI=true, where browser tests must run, but {reason}", pytrace=False)
    pytest.skip(reason)


def require_chromium() -> str:
    """The Chromium binary, or skip (fail under CI=true) saying what is missing."""
    path, looked = chromium_path()
    if path is None:
        _unavailable(f"no Chromium found (looked at {looked}); install the Debian package "
                     "`chromium` or point $CHROMIUM_PATH at the binary")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed (requirements-dev.txt)")
    return path  # type: ignore[return-value]


@contextmanager
def launched_chromium(**launch: object) -> Iterator[object]:
    """A headless Chromium (Playwright's sync API) for the duration of the block.

    Playwright keeps an event loop running in this thread while the browser lives, and
    Django refuses synchronous database access under a running loop unless
    DJANGO_ALLOW_ASYNC_UNSAFE is set. It is set only inside the block and restored after:
    leaking into later tests would fail their `check --deploy`.
    """
    path = require_chromium()
    from playwright.sync_api import sync_playwright

    previous = os.environ.get(ASYNC_UNSAFE)
    os.environ[ASYNC_UNSAFE] = "true"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=path, args=ARGS, headless=True,
                                         **launch)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if previous is None:
            os.environ.pop(ASYNC_UNSAFE, None)
        else:
            os.environ[ASYNC_UNSAFE] = previous
