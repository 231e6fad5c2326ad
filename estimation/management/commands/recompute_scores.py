"""`manage.py recompute_scores --corpus TAG`: recompute every system's scores now."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from estimation.scoring import request_recompute, run_scheduled
from kbpo.core import jobs
from kbpo.core.models import Corpus


class Command(BaseCommand):
    help = ("Recompute precision, recall and F1 of every active system on a corpus, "
            "synchronously, printing progress. Waits while a worker is already computing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True, help="Corpus tag, e.g. demo.")
        parser.add_argument("--wait", type=float, default=600,
                            help="Seconds to wait for a run already in progress (default 600).")
        parser.add_argument("--full", action="store_true",
                            help="Rebuild the stored instance arrays from the database first "
                                 "(the numbers are the same as an incremental run's).")

    def handle(self, *args: object, **opts: object) -> None:
        tag = opts["corpus"]
        corpus = Corpus.objects.filter(tag=tag).first()
        if corpus is None:
            known = ", ".join(Corpus.objects.values_list("tag", flat=True)) or "none loaded"
            raise CommandError(f"--corpus {tag!r}: no such corpus (known: {known})")
        # Count as a change, so the run is recorded against a fresh generation; the
        # task that request queues finds the scores up to date (no second run).
        with jobs.coalesced():
            request_recompute(corpus.pk, "recompute_scores command")
            self._run(corpus, float(opts["wait"]), bool(opts["full"]))  # type: ignore[arg-type]

    def _run(self, corpus: Corpus, wait: float, full: bool = False) -> None:
        deadline = time.monotonic() + wait
        while True:
            out = run_scheduled(corpus.pk, force=True, trigger="recompute_scores command",
                                progress=lambda msg: self.stdout.write(f"  {msg}"), full=full,
                                live=False)  # every scheme now: the operator waits for it
            if out.status != "busy":
                break
            if time.monotonic() > deadline:
                raise CommandError("another recomputation is still running; try again later "
                                   "or raise --wait")
            self.stdout.write("  another recomputation is running; waiting…")
            time.sleep(2)
        run = out.run
        if run is None:
            self.stdout.write(f"Scores of {corpus.tag} are up to date.")
            return
        self.stdout.write(self.style.SUCCESS(
            f"Run {run.pk}: {run.n_systems} systems, {run.n_labels} labels, "
            f"{run.n_exhaustive_documents} exhaustive documents in {run.duration_s:.2f} s."))
