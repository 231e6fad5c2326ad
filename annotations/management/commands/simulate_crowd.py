"""`manage.py simulate_crowd --gold gold.jsonl`: a simulated crowd answers the open HITs.

Every posted simulated/local relation HIT gets its missing assignments from a pool of
simulated workers (per-worker accuracy, a few spammers; `annotations.crowd.simulation`), sent
through `intake.submit_assignment` — the path real answers take — and aggregated. Rounds
repeat until no HIT needs answers (ties ask for more). See docs/internals/crowd.md.
"""

from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count, F

from annotations.crowd import budget
from annotations.crowd.labels import aggregate
from annotations.crowd.live import truth_for
from annotations.crowd.simulation import (
    GoldKey,
    assign_workers,
    load_confusion,
    make_pool,
    simulate_answer,
)
from annotations.interfaces.caps import relation_cap
from annotations.interfaces.intake import (
    AnswerIn,
    IntakeError,
    allowed_choices,
    submit_assignment,
    worker_for,
)
from annotations.models import (
    Backend,
    Hit,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    Response,
    TaskKind,
)
from annotations.quality.workers import update_worker_quality
from kbpo.core import jobs
from kbpo.core.models import Corpus


class Command(BaseCommand):
    help = ("Answer every open question of posted simulated/local HITs with a pool of "
            "simulated workers reading the gold key (gold.jsonl of the demo world), through "
            "the same intake path as real answers, until no question needs answers.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gold", type=Path, required=True,
                            help="gold.jsonl of the demo world (docs/reference/demo-world.md), "
                                 "or a DocRED file (a JSON list, recognised by its content) for "
                                 "a DocRED corpus (docs/researchers/docred.md)")
        parser.add_argument("--workers", type=int, default=20, help="pool size (default 20)")
        parser.add_argument("--error-rate", type=float, default=0.1,
                            help="mean error rate of honest workers (default 0.1)")
        parser.add_argument("--spammers", type=float, default=0.1,
                            help="share of workers answering at random (default 0.1)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--corpus", default=None, help="only HITs of this corpus tag")
        parser.add_argument("--max-rounds", type=int, default=20)
        parser.add_argument("--confusion", type=Path, default=None,
                            help="JSON file of per-worker, per-relation rates: false yes "
                                 "on pairs holding none, misses (docs/operators/crowd.md)")

    def handle(self, *args: object, **opts: object) -> None:
        gold = Path(str(opts["gold"]))
        if not gold.is_file():
            raise CommandError(f"--gold {gold}: no such file (the demo world writes gold.jsonl)")
        try:
            key = GoldKey.load(gold)
            pool = make_pool(int(opts["workers"]), float(opts["error_rate"]),  # type: ignore[arg-type]
                             int(opts["seed"]), float(opts["spammers"]))  # type: ignore[arg-type]
            if opts["confusion"] is not None:
                pool = load_confusion(Path(str(opts["confusion"])), pool)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        seed = int(opts["seed"])  # type: ignore[arg-type]
        corpus = None
        if opts["corpus"]:
            corpus = Corpus.objects.filter(tag=opts["corpus"]).first()
            if corpus is None:
                raise CommandError(f"--corpus {opts['corpus']}: no such corpus")
        hits = Hit.objects.filter(state=HitState.POSTED, kind=TaskKind.RELATION,
                                  backend__in=(Backend.SIMULATED, Backend.LOCAL))
        if corpus is not None:
            hits = hits.filter(corpus=corpus)
        started = time.monotonic()
        labels_before = PairLabel.objects.count()
        touched: set[int] = set()
        totals: Counter[str] = Counter({"cost": Decimal(0)})
        before_round = labels_before
        # Score recomputations wait for the end of the command: one per corpus, not
        # one per aggregated HIT (eager mode ignores the debounce countdown).
        with jobs.coalesced():
            for round_no in range(1, int(opts["max_rounds"]) + 1):  # type: ignore[arg-type]
                answered, qids = self._round(hits, pool, key, seed, round_no, totals)
                touched.update(qids)
                if qids:
                    aggregate(qids)
                waiting = Question.objects.filter(pk__in=touched,
                                                  state=QuestionState.OPEN).count()
                now = PairLabel.objects.count()
                self.stdout.write(f"round {round_no}: {answered} assignments on "
                                  f"{len(set(qids))} questions; "
                                  f"{now - before_round} new labels this round; "
                                  f"{waiting} questions still open")
                before_round = now
                if answered == 0:
                    break
        self._summary(key, touched, totals, labels_before, time.monotonic() - started, corpus)

    def _round(self, hits, pool, key: GoldKey, seed: int, round_no: int,
               totals: Counter[str]) -> tuple[int, list[int]]:
        answered = 0
        qids: list[int] = []
        open_hits = (hits.annotate(n=Count("assignments")).filter(n__lt=F("max_assignments"))
                     .order_by("pk"))
        for hit in open_hits:
            items = list(hit.items.select_related("question__pair__document", "question__corpus")
                         .order_by("position"))
            done = set(Response.objects.filter(question__in=[i.question for i in items])
                       .values_list("worker__external_id", flat=True))
            done |= set(hit.assignments.values_list("worker__external_id", flat=True))
            need = hit.max_assignments - hit.n
            for sim in assign_workers(pool, need, seed, hit.pk * 100 + round_no, exclude=done):
                answers = [AnswerIn(i.question_id, tuple(simulate_answer(
                    sim, truth_for(key, i.question), sorted(allowed_choices(i.question)),
                    seed, i.question_id, relation_cap(i.question.corpus.schema))))
                    for i in items]
                worker = worker_for(Backend.SIMULATED, sim.worker_id)
                try:
                    submit_assignment(hit=hit, worker=worker,
                                      assignment_id=f"sim-{hit.pk}-{sim.worker_id}",
                                      answers=answers, source="simulated")
                except IntakeError as exc:
                    totals["refused"] += 1
                    self.stderr.write(f"HIT {hit.pk}: {sim.worker_id} refused: {exc.message}")
                    continue
                answered += 1
                totals["cost"] += budget.hit_cost(hit.backend, hit.reward, 1)
                totals["assignments"] += 1
                totals["answers"] += len(answers)
                qids.extend(i.question_id for i in items)
        return answered, qids

    def _summary(self, key: GoldKey, touched: set[int], totals: Counter[str],
                 labels_before: int, seconds: float, corpus: Corpus | None) -> None:
        questions = list(Question.objects.filter(pk__in=touched)
                         .select_related("pair__document"))
        report = update_worker_quality(corpus.pk if corpus else None)
        # After the quality pass: the stored label and the majority vote it started from.
        labels = {p: (stored, vote or stored) for p, stored, vote in
                  PairLabel.objects.filter(pair_id__in=[q.pair_id for q in questions])
                  .values_list("pair_id", "predicates", "majority")}
        majority_ok = stored_ok = ds_ok = coin_ok = judged = 0
        for q in questions:
            if q.pair_id not in labels:
                continue
            truth = truth_for(key, q)
            judged += 1
            stored_ok += frozenset(labels[q.pair_id][0]) == truth
            majority_ok += frozenset(labels[q.pair_id][1]) == truth
            ds_ok += frozenset(report.ds_labels.get(q.pk, [])) == truth
            coin_ok += frozenset(report.coin_labels.get(q.pk, [])) == truth
        spend = budget.spend()
        new_labels = PairLabel.objects.count() - labels_before
        self.stdout.write(self.style.SUCCESS(
            f"\n{totals['assignments']} assignments, {totals['answers']} answers "
            f"({totals['refused']} refused) in {seconds:.1f} s; {new_labels} new labels."))
        if judged:
            self.stdout.write(f"accuracy against gold on {judged} labelled questions: "
                              f"majority {majority_ok / judged:.3f}, "
                              f"stored ({settings.KBPO_LABEL_AGGREGATION}) "
                              f"{stored_ok / judged:.3f}, "
                              f"Dawid–Skene {ds_ok / judged:.3f}, "
                              f"one-coin {coin_ok / judged:.3f}")
        for cid, alpha in report.alpha.items():
            shown = "n/a" if alpha is None else f"{alpha:.3f}"
            self.stdout.write(f"Krippendorff's alpha (corpus {cid}): {shown}")
        if report.relabelled:
            self.stdout.write(f"{len(report.relabelled)} label(s) changed by the quality pass "
                              f"({settings.KBPO_LABEL_AGGREGATION})")
        if report.flagged:
            self.stdout.write(f"flagged workers (agreement below threshold): "
                              f"{', '.join(report.flagged)}")
        # What this run's answers cost over this run's labels (the totals above hold every
        # earlier run's spend too).
        run_cost = totals["cost"]
        per_pair = (run_cost / new_labels).quantize(Decimal("0.001")) if new_labels else None
        self.stdout.write(f"money: ${spend.spent} spent, ${spend.committed} committed of "
                          f"${spend.cap} in all; this run's answers ${run_cost}"
                          + (f", ${per_pair} per new label" if per_pair is not None else ""))
        held = Hit.objects.filter(state=HitState.PENDING).exclude(post_error="").count()
        if held:
            self.stdout.write(self.style.WARNING(
                f"{held} HIT(s) are held (budget or posting errors); see the admin."))
