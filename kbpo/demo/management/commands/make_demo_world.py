"""`manage.py make_demo_world --out DIR --docs N --systems K --seed S`."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from kbpo.demo.world import generate as demo_world


class Command(BaseCommand):
    help = ("Write a synthetic demo world: corpus.jsonl, gold.jsonl, systems/*.kb and "
            "truth.json (see docs/reference/demo-world.md). Deterministic for a seed.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True)
        parser.add_argument("--docs", type=int, default=200)
        parser.add_argument("--systems", type=int, default=6)
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, *args: object, **opts: object) -> None:
        started = time.monotonic()
        summary = demo_world.generate(
            opts["out"], docs=opts["docs"], systems=opts["systems"],  # type: ignore[arg-type]
            seed=opts["seed"], progress=demo_world.stderr_progress)
        self.stdout.write(f"demo world written to {opts['out']} in "
                          f"{time.monotonic() - started:.1f} s: {summary}")
