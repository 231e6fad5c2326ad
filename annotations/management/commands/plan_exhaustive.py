"""`manage.py plan_exhaustive --corpus TAG --docs 100 --seed-fraction 0.2 [--seed S]`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.exhaustive.sampling import PlanError, plan_exhaustive
from annotations.exhaustive.workflow import progress
from kbpo.core.models import Corpus


class Command(BaseCommand):
    help = ("Advance the two-stage exhaustive-annotation sample of a corpus by one step: the "
            "first run draws the uniform seed documents (stage 1); once their entities are "
            "annotated, the next run draws the remaining documents among those mentioning a "
            "seed entity (stage 2). Entity tasks start for new documents unless --no-tasks. "
            "Safe to re-run; prints the progress per stage and state.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True, help="corpus tag")
        parser.add_argument("--docs", type=int, default=100, help="documents in the sample")
        parser.add_argument("--seed-fraction", type=float, default=0.2,
                            help="share of the documents drawn uniformly in stage 1")
        parser.add_argument("--seed", type=int, default=0, help="random seed of the draws")
        parser.add_argument("--no-tasks", action="store_true",
                            help="plan only; create no crowd tasks (e.g. to import gold)")

    def handle(self, *args: object, **opts: object) -> None:
        tag = str(opts["corpus"])
        corpus = Corpus.objects.filter(tag=tag).first()
        if corpus is None:
            raise CommandError(f"corpus {tag!r} does not exist (manage.py load_corpus)")
        try:
            report = plan_exhaustive(corpus, int(opts["docs"]),  # type: ignore[arg-type]
                                     float(opts["seed_fraction"]),  # type: ignore[arg-type]
                                     int(opts["seed"]),  # type: ignore[arg-type]
                                     start_tasks=not opts["no_tasks"])
        except PlanError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(report.summary())
        p = progress(corpus)
        for stage, states in p["stages"].items():
            if p["totals"][stage]:
                counts = ", ".join(f"{n} {s}" for s, n in states.items() if n)
                self.stdout.write(f"  {stage}: {counts}")
        self.stdout.write(f"  gold so far: {p['mentions']} mentions, {p['relations']} true "
                          f"instances in {p['complete']} complete documents")
