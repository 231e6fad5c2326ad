"""Where a recompute's memory is: tracemalloc snapshots grouped by the project's own line
that allocated each block (numpy and scipy report their buffers to tracemalloc).

`bench_recompute.py --memory-map FILE` traces from before the warm-up: the map of what
the worker *holds* is taken just before a batch's live run, and the map of the live run's
*peak* by a sampler thread that snapshots whenever the traced total passes its highest
so far. Tracing slows allocation-heavy code (a few percent here), so the timings of a
run with the map are not the bench's figures.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
FRAMES = 12


def _own_frame(tb: tracemalloc.Traceback) -> str:
    """The innermost frame in the project's code (not its virtualenv), else the
    innermost frame."""
    for frame in reversed(tb):  # tracemalloc stores the most recent call last
        name = frame.filename
        if name.startswith(ROOT) and "/.venv/" not in name and not name.endswith(__file__):
            return f"{name[len(ROOT) + 1:]}:{frame.lineno}"
    f = tb[-1]
    return f"{f.filename}:{f.lineno}"


def by_line(snapshot: tracemalloc.Snapshot) -> list[tuple[str, int, int]]:
    """(project line, bytes, blocks) of the snapshot's live blocks, largest first."""
    size: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for stat in snapshot.statistics("traceback"):
        key = _own_frame(stat.traceback)
        size[key] += stat.size
        count[key] += stat.count
    return sorted(((k, size[k], count[k]) for k in size), key=lambda r: -r[1])


def report(title: str, snapshot: tracemalloc.Snapshot, top: int = 30) -> str:
    rows = by_line(snapshot)
    total = sum(s for _, s, _ in rows)
    lines = [f"## {title}: {total / 2**20:,.0f} MB traced", "",
             "| MB | blocks | allocated at |", "|---|---|---|"]
    lines += [f"| {s / 2**20:,.1f} | {c:,} | `{k}` |" for k, s, c in rows[:top]]
    rest = sum(s for _, s, _ in rows[top:])
    lines += [f"| {rest / 2**20:,.1f} | | (the other {max(len(rows) - top, 0)} lines) |", ""]
    return "\n".join(lines)


def start() -> None:
    tracemalloc.start(FRAMES)


class PeakSampler:
    """Snapshots the traced memory whenever it passes its highest so far (checked every
    ``every`` s, after growing by ``step`` of it), keeping the last: the map near the
    peak. A snapshot takes time, so a short spike between checks can be missed; the
    traced peak itself is exact (tracemalloc's own)."""

    def __init__(self, every: float = 0.1, step: float = 0.03) -> None:
        self.every, self.step = every, step
        self.best = 0
        self.snapshot: tracemalloc.Snapshot | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakSampler:
        tracemalloc.reset_peak()
        self.best = tracemalloc.get_traced_memory()[0]
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            current = tracemalloc.get_traced_memory()[0]
            if current > self.best * (1 + self.step):
                self.snapshot = tracemalloc.take_snapshot()
                self.best = max(current, tracemalloc.get_traced_memory()[0])

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = tracemalloc.get_traced_memory()[1]


def write(path: str, held: tracemalloc.Snapshot, sampler: PeakSampler) -> None:
    parts = [f"# Memory map ({time.strftime('%Y-%m-%d %H:%M')})", "",
             report("held before the live run", held)]
    if sampler.snapshot is not None:
        parts.append(report(f"near the live run's peak (traced peak "
                            f"{sampler.peak / 2**20:,.0f} MB)", sampler.snapshot))
        diff = sampler.snapshot.compare_to(held, "traceback")
        grown: dict[str, int] = defaultdict(int)
        for stat in diff:
            grown[_own_frame(stat.traceback)] += stat.size_diff
        rows = sorted(grown.items(), key=lambda r: -r[1])[:30]
        parts += ["## grown from held to the peak", "", "| MB | allocated at |", "|---|---|"]
        parts += [f"| {s / 2**20:,.1f} | `{k}` |" for k, s in rows]
    Path(path).write_text("\n".join(parts) + "\n")
    print(f"memory map written to {path}")
