"""`manage.py simulate_exhaustive --corpus TAG --gold gold.jsonl`: a simulated crowd."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.exhaustive.simulation import simulate_exhaustive
from annotations.exhaustive.workflow import progress
from kbpo.core.models import Corpus


class Command(BaseCommand):
    help = ("Answer the corpus's posted entity and exhaustive-relation HITs (DocRED: fact "
            "HITs; simulated backend) with simulated workers reading the gold file, through "
            "the normal "
            "answer intake, until the exhaustive sample is complete.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True)
        parser.add_argument("--gold", type=Path, required=True,
                            help="gold.jsonl of the demo world (docs/reference/demo-world.md), "
                                 "or the DocRED file a DocRED corpus was loaded from")
        parser.add_argument("--error-rate", type=float, default=0.1)
        parser.add_argument("--workers", type=int, default=10)
        parser.add_argument("--spammers", type=float, default=0.1,
                            help="share of spammers in the worker pool")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--wait", type=float, default=0.0,
                            help="seconds to wait for new HITs when Celery runs in "
                                 "separate workers (0 with eager Celery)")

    def handle(self, *args: object, **opts: object) -> None:
        corpus = Corpus.objects.filter(tag=opts["corpus"]).first()
        if corpus is None:
            raise CommandError(f"corpus {opts['corpus']!r} does not exist")
        gold: Path = opts["gold"]  # type: ignore[assignment]
        if not gold.is_file():
            raise CommandError(f"{gold}: no such file")
        try:
            report = simulate_exhaustive(
                corpus, gold, error_rate=float(opts["error_rate"]),  # type: ignore[arg-type]
                seed=int(opts["seed"]), n_workers=int(opts["workers"]),  # type: ignore[arg-type]
                spammer_fraction=float(opts["spammers"]),  # type: ignore[arg-type]
                wait_seconds=float(opts["wait"]))  # type: ignore[arg-type]
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(report.summary())
        p = progress(corpus)
        self.stdout.write(f"{p['complete']} of {p['documents']} exhaustive documents complete: "
                          f"{p['mentions']} gold mentions, {p['relations']} true instances; "
                          f"crowd cost ${p['spent_usd']}")
