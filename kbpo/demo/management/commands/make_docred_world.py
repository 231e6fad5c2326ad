"""`manage.py make_docred_world FILE --out DIR [--docs N] [--systems K] [--seed S]`."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kbpo.demo.world import docred as docred_world
from kbpo.demo.world import generate as demo_world


class Command(BaseCommand):
    help = ("Write the real-text demo world from a DocRED / Re-DocRED JSON file: corpus.jsonl "
            "(with the source's sentences), gold.jsonl, systems/*.kb (synthetic systems "
            "writing whole-sentence provenance and a few invalid lines) and truth.json, in "
            "the demo world's formats (docs/reference/demo-world.md). Deterministic for a seed.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="DocRED JSON, e.g. dev_revised.json")
        parser.add_argument("--out", type=Path, required=True)
        parser.add_argument("--docs", type=int, default=150,
                            help="documents drawn from the file (default 150)")
        parser.add_argument("--systems", type=int, default=6)
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, *args: object, **opts: object) -> None:
        started = time.monotonic()
        try:
            summary = docred_world.generate(
                opts["file"], opts["out"], docs=opts["docs"],  # type: ignore[arg-type]
                systems=opts["systems"], seed=opts["seed"],  # type: ignore[arg-type]
                progress=demo_world.stderr_progress)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"docred world written to {opts['out']} in "
                          f"{time.monotonic() - started:.1f} s: {summary}")
