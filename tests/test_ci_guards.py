"""Under CI=true nothing is skipped: a skip is reported as a failure (tests/conftest.py),
and a missing Chromium fails the browser tests (tests/chromium.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import ROOT

PROBE = "tests/probes/probe_skips.py"


def _run_probe(ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env.update(CHROMIUM_PATH="/nonexistent/chromium",
               # what CI=true demands of the environment (nothing connects to them here)
               DATABASE_URL="postgres://postgres@127.0.0.1:5432/kbpo_probe",
               CELERY_BROKER_URL="redis://127.0.0.1:6379/15")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", PROBE, "-q", "-rfsx", "-p", "no:randomly",
         "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120)


def test_skips_are_failures_under_ci() -> None:
    out = _run_probe(ci=True)
    assert out.returncode == 1, out.stdout + out.stderr
    # a skip in the test is a failure, one at setup (a skipif marker) an error
    assert "2 failed, 1 xfailed, 1 error" in out.stdout, out.stdout
    assert out.stdout.count("skipped under CI=true, where nothing may be skipped") >= 2
    assert "CI=true, where browser tests must run, but no Chromium found (looked at " \
           "$CHROMIUM_PATH=/nonexistent/chromium)" in out.stdout


def test_skips_stay_skips_elsewhere() -> None:
    out = _run_probe(ci=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 skipped, 1 xfailed" in out.stdout, out.stdout


@pytest.mark.parametrize("configured", ["/nonexistent/chromium", ""])
def test_chromium_path_honours_the_variable(monkeypatch: pytest.MonkeyPatch,
                                            configured: str) -> None:
    from tests.chromium import chromium_path

    monkeypatch.setenv("CHROMIUM_PATH", configured)
    path, looked = chromium_path()
    if configured:  # set: the only candidate, no silent fallback to another binary
        assert path is None and looked == f"$CHROMIUM_PATH={configured}"
    else:
        assert looked != f"$CHROMIUM_PATH={configured}"


def test_the_mutation_check_is_well_formed() -> None:
    """scripts/mutation_check.sh stays runnable: every edit mutation's text is still in
    its file exactly once, every mirroring test file exists, every area has mutations."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mutation_check as mc
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    mutations = list(mc.MUTATIONS.values())
    assert len(mutations) >= 30
    assert {m.area for m in mutations} == set(mc.AREAS)
    for m in mutations:
        assert m.tests and all((ROOT / t).exists() for t in m.tests), m.name
        assert (m.install is None) != (not m.edits), m.name  # one kind or the other
        for path, old, new in m.edits:
            text = (ROOT / path).read_text(encoding="utf-8")
            assert text.count(old) == 1 and old != new, (m.name, path)
    # Every TAC rule has its mutation.
    from submissions.kbformat import CODES

    assert {f"tac_rule_off:{c}" for c in CODES} <= set(mc.MUTATIONS)
