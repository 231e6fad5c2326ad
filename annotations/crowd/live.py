"""The demo's simulated crowd at work: it answers newly posted HITs by itself, paced like
a real crowd, for as long as the demo's server runs (`manage.py serve_demo`).

Only HITs of the simulated backend are answered (never `local`, whose HITs wait for
in-house annotators, nor MTurk). Each simulated worker takes one HIT at a time, reads
for a few seconds per question and submits through `intake.submit_assignment`, the path
real answers take; the answers come from the demo world's gold key
(`annotations.crowd.simulation`), so the labels match what `simulate_crowd` would give.

The scheduler (`LiveCrowd.tick`) takes the time as an argument, so tests drive it with
a made-up clock; `start()` runs it in a daemon thread, which dies with the server.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connections
from django.db.models import Count, F, QuerySet
from django.utils import timezone

from annotations.crowd.labels import aggregate
from annotations.crowd.simulation import (
    NO_RELATION,
    GoldKey,
    SimWorker,
    assign_workers,
    simulate_answer,
)
from annotations.interfaces.intake import (
    AnswerIn,
    IntakeError,
    allowed_choices,
    submit_assignment,
    worker_for,
)
from annotations.models import Backend, CrowdWorker, Hit, HitState, Question, TaskKind
from kbpo.core import jobs

logger = logging.getLogger(__name__)

# Seconds a worker spends per question (uniform): a five-question HIT takes 10-30 s.
# Spammers take as long (they would otherwise take most HITs, and the re-asking after
# their rejection would hold up every sample). With twenty workers the demo's new
# upload (about 40 HITs of three answers) is labelled in about three minutes, inside
# the five the README promises.
SECONDS_PER_QUESTION = (2.0, 6.0)
# A worker looks for the next HIT this long after submitting one (uniform).
PAUSE_BETWEEN_HITS = (1.0, 4.0)
# Score recomputations the answers ask for are sent at most this often, so the report's
# "how the estimates narrowed" gains a point every few HITs instead of one per label.
RECOMPUTE_EVERY = 15.0
RECOMPUTE_TASK = "estimation.recompute_corpus"  # estimation/scoring.py, queued by name


def truth_for(key: GoldKey, question: Question) -> frozenset[str]:
    """The gold answer the interface can express for this pair (its type-valid options)."""
    pair = question.pair
    truth = key.truth((pair.document.doc_id, pair.subject_begin, pair.subject_end,
                       pair.object_begin, pair.object_end))
    allowed = allowed_choices(question)
    kept = frozenset(t for t in truth if t in allowed)
    return kept or frozenset({NO_RELATION})


@dataclass
class Job:
    """One worker at work on one HIT, submitting at `due`."""
    worker: SimWorker
    hit_id: int
    due: float


@dataclass
class Status:
    """What the operator page shows about the crowd of this process."""
    running: bool = False
    corpus: str = ""
    workers: int = 0
    started_at: datetime | None = None
    submitted: int = 0
    refused: int = 0
    last_submitted_at: datetime | None = None
    at_work: int = 0
    hits_at_work: int = 0
    last_error: str = ""


STATUS = Status()


@dataclass
class LiveCrowd:
    """A pool of simulated workers answering the posted simulated HITs of one corpus."""
    key: GoldKey
    pool: list[SimWorker]
    corpus_id: int
    seed: int = 0
    # Multiplies every duration (1: the pace above; tests and impatient demos go faster).
    pace: float = 1.0
    jobs: list[Job] = field(default_factory=list)
    free_at: dict[str, float] = field(default_factory=dict)

    def _rng(self, *parts: object) -> random.Random:
        return random.Random(repr((self.seed, *parts)))

    def work_seconds(self, worker: SimWorker, hit_id: int, questions: int) -> float:
        """How long this worker takes over this HIT (deterministic per seed)."""
        rng = self._rng("work", worker.worker_id, hit_id)
        return self.pace * sum(rng.uniform(*SECONDS_PER_QUESTION) for _ in range(questions))

    def tick(self, now: float) -> int:
        """Submit the work due by `now`, then set idle workers to the HITs still short of
        answers. Returns the assignments submitted."""
        due = [j for j in self.jobs if j.due <= now]
        self.jobs = [j for j in self.jobs if j.due > now]
        submitted = 0
        for job in due:
            submitted += self._submit(job)
            self.free_at[job.worker.worker_id] = now + self.pace * self._rng(
                "pause", job.worker.worker_id, job.hit_id).uniform(*PAUSE_BETWEEN_HITS)
        self._assign(now)
        STATUS.at_work = len(self.jobs)
        STATUS.hits_at_work = len({j.hit_id for j in self.jobs})
        return submitted

    def open_hits(self) -> QuerySet[Hit]:
        return (Hit.objects.filter(state=HitState.POSTED, kind=TaskKind.RELATION,
                                   backend=Backend.SIMULATED, corpus_id=self.corpus_id)
                .annotate(n=Count("assignments")).filter(n__lt=F("max_assignments"))
                .order_by("pk"))

    def _assign(self, now: float) -> None:
        busy = {j.worker.worker_id for j in self.jobs}
        # A blocked worker's answers are refused: sent again and again, they would only
        # hold a HIT's slot.
        busy |= set(CrowdWorker.objects.filter(backend=Backend.SIMULATED, blocked=True)
                    .values_list("external_id", flat=True))
        idle = [w for w in self.pool if w.worker_id not in busy
                and self.free_at.get(w.worker_id, 0.0) <= now]
        if not idle:
            return
        for hit in self.open_hits():
            working = [j for j in self.jobs if j.hit_id == hit.pk]
            need = hit.max_assignments - hit.n - len(working)
            if need <= 0:
                continue
            # Never a worker who already answered one of this HIT's questions (the
            # intake would refuse the second answer) or is at work on it.
            done = set(hit.assignments.values_list("worker__external_id", flat=True))
            done |= set(Question.objects.filter(hit_items__hit=hit).values_list(
                "responses__worker__external_id", flat=True))
            done |= {j.worker.worker_id for j in working}
            n_questions = hit.items.count()
            for worker in assign_workers(idle, need, self.seed, hit.pk * 1000 + hit.n,
                                         exclude=done):
                self.jobs.append(Job(worker, hit.pk, now + self.work_seconds(
                    worker, hit.pk, n_questions)))
                idle.remove(worker)
            if not idle:
                return

    def _submit(self, job: Job) -> int:
        hit = Hit.objects.filter(pk=job.hit_id).first()
        if hit is None:
            return 0
        items = list(hit.items.select_related("question__pair__document").order_by("position"))
        answers = [AnswerIn(i.question_id, tuple(simulate_answer(
            job.worker, truth_for(self.key, i.question), sorted(allowed_choices(i.question)),
            self.seed, i.question_id, settings.KBPO_MAX_RELATIONS_PER_ANSWER)))
            for i in items]
        try:
            submit_assignment(hit=hit, worker=worker_for(Backend.SIMULATED, job.worker.worker_id),
                              assignment_id=f"sim-{hit.pk}-{job.worker.worker_id}",
                              answers=answers, source="simulated")
        except IntakeError as exc:
            # The HIT filled up or closed while the worker read it, as on a real site.
            STATUS.refused += 1
            logger.info("simulated crowd: HIT %s, %s: %s", hit.pk, job.worker.worker_id,
                        exc.message)
            return 0
        aggregate([i.question_id for i in items])
        STATUS.submitted += 1
        STATUS.last_submitted_at = timezone.now()
        return 1


def run(crowd: LiveCrowd, stop: threading.Event, poll: float = 1.0) -> None:
    """Tick every `poll` seconds until `stop` is set; the recomputations the answers ask
    for go out at most every RECOMPUTE_EVERY × pace seconds."""
    try:
        # Without a broker nothing queued outlives the process: a recomputation held
        # when the last server stopped (Ctrl-C, a reload) is served now.
        jobs.send(RECOMPUTE_TASK, crowd.corpus_id)
    except Exception:  # a failed recomputation is on the operator page, not fatal here
        logger.exception("simulated crowd: recomputation at start failed")
    try:
        _work(crowd, stop, poll)
    finally:
        connections.close_all()  # this thread's own connections


def _work(crowd: LiveCrowd, stop: threading.Event, poll: float) -> None:
    while not stop.is_set():
        with jobs.coalesced():
            flush = time.monotonic() + RECOMPUTE_EVERY * crowd.pace
            while not stop.is_set() and time.monotonic() < flush:
                close_old_connections()
                try:
                    crowd.tick(time.monotonic())
                    STATUS.last_error = ""
                except Exception as exc:  # the crowd keeps working
                    logger.exception("simulated crowd: tick failed")
                    STATUS.last_error = f"{type(exc).__name__}: {exc}"
                stop.wait(poll)


def start(crowd: LiveCrowd, corpus_tag: str, stop: threading.Event | None = None,
          poll: float = 1.0) -> threading.Thread:
    """Run `crowd` in a daemon thread (it ends with the process: Ctrl-C stops it), until
    `stop` is set."""
    STATUS.running, STATUS.corpus, STATUS.workers = True, corpus_tag, len(crowd.pool)
    STATUS.started_at = timezone.now()
    thread = threading.Thread(target=run, args=(crowd, stop or threading.Event(), poll),
                              name="kbpo-simulated-crowd", daemon=True)
    thread.start()
    return thread


def describe() -> str:
    """What the simulated crowd of this process is doing, in a sentence for the pages;
    empty on the MTurk and local backends, which it never serves."""
    if settings.KBPO_CROWD_BACKEND != Backend.SIMULATED:
        return ""
    s = STATUS
    if not s.running:
        return ("No simulated crowd runs in this server: posted HITs wait until "
                "`manage.py simulate_crowd --gold demo/gold.jsonl` answers them "
                "(`make demo` serves with `manage.py serve_demo`, whose crowd answers "
                "new HITs by itself).")
    last = (f", the last {timezone.localtime(s.last_submitted_at):%H:%M:%S}"
            if s.last_submitted_at else "")
    return (f"A simulated crowd of {s.workers} workers answers new HITs of corpus "
            f"'{s.corpus}' by itself, a few seconds per question: {s.at_work} at work "
            f"on {s.hits_at_work} HIT(s) now; {s.submitted} assignment(s) submitted "
            f"since {timezone.localtime(s.started_at):%H:%M:%S}{last}."
            + (f" Last error: {s.last_error}" if s.last_error else ""))
