"""Benchmark: answers per second accepted through `intake.submit_assignment`.

Builds a throwaway corpus with HITS HITs of 5 relation questions each, then submits 3
assignments per HIT (every answer validated and stored in one transaction, as from the
task page): first with the pipeline's receivers disconnected (the intake alone), then
with aggregation running inline after each assignment (eager mode: labels, completed
HITs, approvals), then from THREADS threads at once. Cleans up after itself.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo_bench python bench/bench_intake.py
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")

import django

django.setup()

from django.db import connection  # noqa: E402

from annotations.interfaces.intake import AnswerIn, answers_stored, submit_assignment, worker_for  # noqa: E402
from annotations.models import Backend, Hit, HitQuestion, HitState, Question  # noqa: E402
from kbpo.celery import app  # noqa: E402
from kbpo.core.corpus import split_text  # noqa: E402
from kbpo.core.models import Corpus, Document, Sentence  # noqa: E402
from submissions.models import MentionPair  # noqa: E402

SENTENCE = "Ada{i} Byron was born in London{i}. "
PER_HIT = 5


def build(tag: str, hits: int) -> list[tuple[int, list[int]]]:
    corpus = Corpus.objects.create(tag=tag)
    text = "".join(SENTENCE.format(i=i) for i in range(hits * PER_HIT))
    doc = Document.objects.create(corpus=corpus, doc_id=f"{tag}-D", text=text,
                                  text_sha256=tag, length=len(text))
    sentences = Sentence.objects.bulk_create(
        Sentence(document=doc, index=i, begin=b, end=e, tokens=t)
        for i, (b, e, t) in enumerate(split_text(text)))
    pairs = []
    for s in sentences:
        body = text[s.begin:s.end]
        name, city = body.split(" was born in ")
        sb = s.begin
        ob = s.begin + body.index(city)
        pairs.append(MentionPair(document=doc, sentence=s, subject_begin=sb,
                                 subject_end=sb + len(name), object_begin=ob,
                                 object_end=ob + len(city.rstrip(".")), subject_type="PER",
                                 object_type="GPE"))
    pairs = MentionPair.objects.bulk_create(pairs)
    out = []
    for h in range(hits):
        hit = Hit.objects.create(corpus=corpus, backend=Backend.SIMULATED, state=HitState.POSTED,
                                 reward=Decimal("0.25"), cost_estimate=Decimal("0.75"))
        qs = Question.objects.bulk_create(Question(corpus=corpus, pair=p)
                                          for p in pairs[h * PER_HIT:(h + 1) * PER_HIT])
        HitQuestion.objects.bulk_create(HitQuestion(hit=hit, question=q, position=i)
                                        for i, q in enumerate(qs))
        out.append((hit.pk, [q.pk for q in qs]))
    return out


def run(hits: list[tuple[int, list[int]]], label: str, workers: tuple[str, ...]) -> float:
    t = time.perf_counter()
    n = 0
    for hit_id, qids in hits:
        hit = Hit.objects.get(pk=hit_id)
        for w in workers:
            answers = [AnswerIn(q, ("per:place_of_birth",)) for q in qids]
            submit_assignment(hit=hit, worker=worker_for(Backend.SIMULATED, w),
                              assignment_id=f"{label}-{hit_id}-{w}", answers=answers)
            n += len(answers)
    return n / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hits", type=int, default=300)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    tag = f"bench-intake-{uuid.uuid4().hex[:8]}"
    workers = ("b1", "b2", "b3")
    print(f"database: {connection.vendor}; {args.hits} HITs x {PER_HIT} questions x 3 answers")
    try:
        data = build(tag, args.hits * 3 + args.threads * args.hits // args.threads)
        third = args.hits
        receivers = answers_stored.receivers[:]
        answers_stored.receivers.clear()
        answers_stored.sender_receivers_cache.clear()
        rate = run(data[:third], "a", workers)
        print(f"intake only:                {rate:8.0f} answers/s")
        answers_stored.receivers[:] = receivers
        answers_stored.sender_receivers_cache.clear()
        app.conf.task_always_eager = True
        rate = run(data[third:2 * third], "b", workers)
        print(f"intake + inline aggregation: {rate:7.0f} answers/s")
        answers_stored.receivers.clear()
        answers_stored.sender_receivers_cache.clear()
        chunk = data[2 * third:3 * third]
        size = len(chunk) // args.threads
        total = size * args.threads * PER_HIT * len(workers)

        def work(part: list) -> None:
            run(part, "c", workers)
            connection.close()

        threads = [threading.Thread(target=work, args=(chunk[i * size:(i + 1) * size],))
                   for i in range(args.threads)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        print(f"intake only, {args.threads} threads:     "
              f"{total / (time.perf_counter() - t):8.0f} answers/s")
        answers_stored.receivers[:] = receivers
    finally:
        from annotations.models import Assignment, CrowdWorker, PairLabel

        corpus = Corpus.objects.get(tag=tag)
        Assignment.objects.filter(hit__corpus=corpus).delete()
        PairLabel.objects.filter(pair__document__corpus=corpus).delete()
        Hit.objects.filter(corpus=corpus).delete()
        corpus.questions.all().delete()
        MentionPair.objects.filter(document__corpus=corpus).delete()
        Document.objects.filter(corpus=corpus).delete()
        corpus.delete()
        CrowdWorker.objects.filter(external_id__in=workers, assignments__isnull=True).delete()


if __name__ == "__main__":
    main()
