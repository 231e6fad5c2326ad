"""A simulated crowd that answers MTurk HITs through the real task pages.

Each simulated worker (`annotations.crowd.simulation`: per-worker accuracy, spammers,
per-worker, per-relation confusion) accepts a HIT on the fake MTurk requester, opens
the task page with the parameters MTurk adds to the HIT's URL, answers the questions
the page shows among the options the page offers, posts the page's JSON to the page's
answer URL and then submits the same answers to MTurk (the page's externalSubmit).
Nothing counts until the service confirms the assignment with MTurk: `run` lets the
periodic sync do that after each round, as production does.

Used by `test_page_crowd.py` and `bench/bench_noisy_demo.py --pages`. The gold key is
the simulator's oracle only: the answers are chosen from the page's own options.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.test import Client

from annotations.crowd import periodic
from annotations.crowd.live import truth_for
from annotations.crowd.simulation import GoldKey, SimWorker, assign_workers, simulate_answer
from annotations.interfaces.answers import page_order
from annotations.models import Backend, Hit, HitState, Question, Response, TaskKind
from tests.annotations.crowd.fake_mturk import FakeMTurk, WorkerCannotAccept

SANDBOX = "https://workersandbox.mturk.com"
# The seconds each answer reports (above KBPO_MIN_SECONDS_PER_QUESTION: not "too fast").
SECONDS_PER_ANSWER = 4.0
_SCRIPT = re.compile(r'<script id="(task-data|task-config)" type="application/json">'
                     r"(.*?)</script>", re.S)


def mturk_worker_id(sim: SimWorker) -> str:
    """An MTurk-shaped worker id (capital letters and digits) for a simulated worker."""
    return "ASIM" + re.sub(r"[^A-Z0-9]", "", sim.worker_id.upper())


def page_json(html: str) -> dict[str, Any]:
    """The task page's embedded JSON blocks: {"task-data": ..., "task-config": ...}."""
    return {name: json.loads(body) for name, body in _SCRIPT.findall(html)}


@dataclass
class PageCrowd:
    fake: FakeMTurk
    key: GoldKey
    pool: list[SimWorker]
    seed: int = 0
    client: Client = field(default_factory=Client)
    # Wraps each request and each sync; tests pass django_capture_on_commit_callbacks
    # (execute=True) so that the on-commit work runs inside their transaction.
    capture: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    counts: Counter = field(default_factory=Counter)

    def answer(self, hit: Hit, sim: SimWorker) -> bool:
        """One worker's assignment: accept on MTurk, GET the page, POST its form, submit
        to MTurk. False when MTurk or the page would not take the work."""
        worker = mturk_worker_id(sim)
        try:
            aid = self.fake.worker_accepts(hit.external_id, worker)
        except WorkerCannotAccept:
            self.counts["not_accepted"] += 1
            return False
        params = {"assignmentId": aid, "hitId": hit.external_id, "workerId": worker,
                  "turkSubmitTo": SANDBOX}
        page = self.client.get(f"/annotate/hit/{hit.url_key}/", params)
        if page.status_code != 200:
            raise RuntimeError(f"task page of HIT {hit.pk}: HTTP {page.status_code}")
        blocks = page_json(page.content.decode())
        config, data = blocks["task-config"], blocks["task-data"]
        if config.get("mode") != "mturk":
            self.fake.worker_returns(hit.external_id, worker)
            self.counts["closed"] += 1
            return False
        order = page_order(hit)
        questions = Question.objects.in_bulk(order)
        answers = []
        for q in data["questions"]:
            question = questions[order[q["id"]]]  # the oracle's view: the truth to answer
            options = [o["value"] for o in q["options"]]
            choices = simulate_answer(sim, truth_for(self.key, question), options,
                                      self.seed, question.pk, config["max_relations"])
            link = True if q["subject"].get("link") or q["object"].get("link") else None
            answers.append({"question": q["id"], "choices": sorted(choices),
                            "extra": {"subject_ok": True, "object_ok": True, "link_ok": link},
                            "seconds": SECONDS_PER_ANSWER})
        body = {**config["mturk"], "answers": answers}
        with self.capture():
            response = self.client.post(config["answers_url"], data=json.dumps(body),
                                        content_type="application/json")
        if response.status_code != 200:
            # The page shows the error and the worker returns the HIT.
            self.fake.worker_returns(hit.external_id, worker)
            self.counts[f"refused_{response.status_code}"] += 1
            return False
        self.fake.worker_submits(hit.external_id, worker,
                                 {"answers": json.dumps({"answers": answers})})
        self.counts["posted"] += 1
        self.counts["answers"] += len(answers)
        return True

    def open_hits(self, corpus_id: int | None = None) -> list[Hit]:
        hits = Hit.objects.filter(state=HitState.POSTED, kind=TaskKind.RELATION,
                                  backend=Backend.MTURK, external_id__isnull=False)
        if corpus_id is not None:
            hits = hits.filter(corpus_id=corpus_id)
        return list(hits.order_by("pk"))

    def round(self, number: int, corpus_id: int | None = None) -> int:
        """Fill every open slot MTurk shows on the posted HITs; the assignments done."""
        done = 0
        for hit in self.open_hits(corpus_id):
            if self.fake.hit_status(hit.external_id) != "Assignable":
                continue
            # Never a worker who already answered one of the HIT's questions (the page
            # would refuse a second answer to a question; a re-asked question's new HIT).
            answered = set(Response.objects.filter(question__hit_items__hit=hit)
                           .values_list("worker__external_id", flat=True))
            exclude = {s.worker_id for s in self.pool if mturk_worker_id(s) in answered}
            for sim in assign_workers(self.pool, len(self.pool), self.seed,
                                      hit.pk * 100 + number, exclude=exclude):
                if self.fake.hit_status(hit.external_id) != "Assignable":
                    break
                done += self.answer(hit, sim)
        return done

    def sync(self) -> periodic.SyncResult:
        with self.capture():
            return periodic.sync_all()

    def run(self, corpus_id: int | None = None, max_rounds: int = 30) -> int:
        """Rounds of work, each followed by the periodic sync that confirms it with MTurk,
        until a round finds nothing to do. Returns the rounds run."""
        for number in range(1, max_rounds + 1):
            worked = self.round(number, corpus_id)
            result = self.sync()
            self.counts["confirmed"] += result.reconciled
            if not worked:
                return number
        return max_rounds
