"""Benchmark: score recomputation per label batch at 100 systems, in Postgres.

Builds a synthetic corpus at service scale in a scratch Postgres database with COPY
(default: 2,000 documents, 300,000 mention pairs, 100 systems × 10,000 predictions =
1M relation instances, 500 draws per system, 100 exhaustively annotated documents),
labels 90% of the drawn pairs — each label with the crowd's answers behind it, as in
production (default 3 per pair from a pool of workers of mixed accuracy: question, HIT,
assignment and response rows, the label's majority vote and posterior; `--answers 0`
stores bare labels) — then adds label batches (default 3 × 200 labels, answered alike) and
times `estimation.scoring.recompute` — the same code the Celery task runs — three ways
per batch: incremental (stored instance arrays, population kept in memory), in a new
worker (stored arrays only) and a full rebuild (`full=True`: every instance row read
again), and checks that incremental and full store identical scores (the two later
runs find exactly the incremental run's numbers, so they store nothing new and return
that run; a difference would store a new run and fail the check). Prints the split
and drops the database; the last line is `incremental X s, full Y s, peak Z MB`
(medians per batch). Z is the recompute's peak: before each run the process's peak RSS
is reset (Linux: "5" into /proc/self/clear_refs, which sets VmHWM to the current RSS)
and VmHWM read after it, so every run's peak counts all the memory resident while it
runs — what it allocates, its caches kept from earlier runs and whatever the build left
in the process — but not the build's own transient peak; Z is the largest over all runs
(cold full, incremental, new worker, full). The line before it gives each run kind's
peak, the build's peak and the whole process's peak (VmHWM's maximum over all phases).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo python bench/bench_recompute.py \
        [--systems 100] [--per-system 10000] [--batches 3] [--batch-size 200] \
        [--answers 3] [--new-workers 0] [--profile FILE] [--hard-labels] \
        [--schemes instance,...] [--save-db NAME | --from-db NAME] [--live-only] \
        [--dump-scores FILE]     (the last four: see --help and bench_saved.py)

With KBPO_SCORE_FOLLOW_UP on (the default) "incremental" is the live run (the draw
scheme, the reweighted schemes' rows carried) and "follow-up" the queued task that
replaces those rows, timed apart; each batch is announced as a new label generation.

`--new-workers N` has N workers never seen before answer one HIT each in every batch, as a
crowd on MTurk does (the noise correction's stored fit has no rates for them).
OpenBLAS runs one thread, as in the image (OPENBLAS_NUM_THREADS=1 unless the environment
sets it: with its default of a thread per core, its threads spin beside the sparse sums and
runs alternated took 2.25 / 2.72 s instead of 1.94 / 2.18 s, and 3.2 / 3.8 s of CPU instead
of 2.5 / 2.8 s).
`--profile FILE` also writes a cProfile of the incremental runs (all batches) to FILE
(read it with `python -m pstats FILE`); the profiled runs are timed with the profiler on.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import secrets
import sys
import time
from pathlib import Path

# As the image runs every service (Dockerfile): one OpenBLAS thread. Set before numpy
# loads OpenBLAS; OPENBLAS_NUM_THREADS in the environment wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import memory_map  # noqa: E402
from bench_common import _admin, drop_db, peak_mb, reset_peak, scratch_db  # noqa: E402
from bench_saved import restore, save  # noqa: E402

TYPES = ("PER", "ORG", "GPE")
SENTENCES, SENTENCE_CHARS = 25, 160  # per document (4,000 characters)
WORDS = ("the", "company", "was", "founded", "in", "by", "her", "brother", "and", "later",
         "moved", "its", "headquarters", "to", "city", "where", "he", "studied", "law",
         "before", "joining", "board", "of", "university")


def mention_offsets(slot: int) -> tuple[int, int, int, int]:
    """Subject and object spans (begin, end, begin, end) of a document's pair ``slot``,
    inside its sentence (slot mod SENTENCES), distinct for each of MAX_PAIRS_PER_DOC slots."""
    start = (slot % SENTENCES) * SENTENCE_CHARS
    k = slot // SENTENCES
    subj, obj = start + 6 * (k % 12), start + 80 + 6 * (k // 12)
    return subj, subj + 4, obj, obj + 4


MAX_PAIRS_PER_DOC = SENTENCES * 12 * 13  # subject 12 places × object 13 per sentence


def copy(cursor, table: str, columns: list[str], rows) -> int:
    """Stream rows into a table with COPY (tab-separated, \\N for NULL)."""
    buf = io.StringIO()
    n = 0
    for row in rows:
        buf.write("\t".join("\\N" if v is None else str(v) for v in row) + "\n")
        n += 1
    buf.seek(0)
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buf)
    return n


def corpus_relations() -> int:
    """How many relations the bench's corpus evaluates: its schema's (TAC KBP, the
    default), whose codes come first in the estimators' table (estimation.data). Systems,
    gold and the crowd name only these, as on a real corpus: drawing from the whole
    table (TAC KBP's and DocRED's, 122) gave every pair 4.7 times as many categories."""
    from estimation.data import PREDICATES
    from kbpo.core.schema import CANONICAL_PREDICATES

    n = len(CANONICAL_PREDICATES)
    assert set(PREDICATES[:n]) == CANONICAL_PREDICATES
    return n


@functools.cache
def offered_codes() -> tuple[np.ndarray, np.ndarray]:
    """Per pair type (subject PER, object TYPES[k]): the codes of the relations its
    question offers (`predicates_for`), padded with -1, and how many. Truths, systems
    and the crowd name only these: the task page refuses any other answer, and with the
    crowd naming any of the 26 on every pair the crowd model's two halves disagree on
    what a pair offered (docs/internals/crowd-bias.md §9)."""
    from estimation.data import PREDICATES
    from kbpo.core.schema import predicates_for

    sets = [[PREDICATES.index(p) for p in predicates_for("PER", t)] for t in TYPES]
    table = np.full((len(sets), max(map(len, sets))), -1, np.int64)
    for k, codes in enumerate(sets):
        table[k, :len(codes)] = codes
    return table, np.array([len(c) for c in sets])


def typed_relations(kinds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A relation drawn uniformly among those each pair's type offers (``kinds``: the
    pairs' type indices, any shape)."""
    table, sizes = offered_codes()
    return table[kinds, (rng.random(kinds.shape) * sizes[kinds]).astype(np.int64)]


def label_name(code: int) -> str:
    from estimation.data import PREDICATES

    return "no_relation" if code < 0 else PREDICATES[code]


class Crowd:
    """Crowd workers answering relation questions, as the intake stores them: one
    question per labelled pair, HITs of 10 questions done by `answers` distinct workers
    each (an assignment per worker), one response per worker and question.

    Workers differ in accuracy (60-95%); a wrong answer is another of the relations the
    pair's type offers (`typed_relations`) or "no relation". The stored label stays the
    bench's truth (so the scores do not depend on the crowd); its majority vote and
    posterior come from the answers.
    """

    WORKERS = 80
    PER_HIT = 10

    def __init__(self, raw, corpus_id: int, answers: int, rng: np.random.Generator,
                 now: str) -> None:
        self.raw, self.corpus_id, self.answers, self.rng, self.now = (
            raw, corpus_id, answers, rng, now)
        self.serial = 0
        copy(raw, "annotations_crowdworker",
             ["backend", "external_id", "flagged", "blocked", "blocked_reason", "n_answers",
              "created_at", "control_answers", "control_right"],
             (("simulated", f"bench-w{w}", "f", "f", "", 0, now, 0, 0)
              for w in range(self.WORKERS)))
        raw.execute("SELECT id FROM annotations_crowdworker ORDER BY id")
        self.worker_ids = np.array([r[0] for r in raw.fetchall()])
        self.accuracy = rng.uniform(0.6, 0.95, self.WORKERS)
        self.newcomers: list[int] = []  # positions of workers recruited for the next batch

    def recruit(self, n: int) -> None:
        """Add ``n`` workers never seen before; the next batch's first ``n`` HITs each
        get one of them (a crowd on MTurk brings new workers all the time)."""
        if n <= 0:
            return
        top = self._top("annotations_crowdworker")
        copy(self.raw, "annotations_crowdworker",
             ["backend", "external_id", "flagged", "blocked", "blocked_reason", "n_answers",
              "created_at", "control_answers", "control_right"],
             (("simulated", f"bench-n{len(self.worker_ids) + w}", "f", "f", "", 0, self.now,
               0, 0) for w in range(n)))
        self.newcomers = list(range(len(self.worker_ids), len(self.worker_ids) + n))
        self.worker_ids = np.concatenate([self.worker_ids,
                                          self._new_ids("annotations_crowdworker", top)])
        self.accuracy = np.concatenate([self.accuracy, self.rng.uniform(0.6, 0.95, n)])

    def _new_ids(self, table: str, before: int) -> np.ndarray:
        self.raw.execute(f"SELECT id FROM {table} WHERE id > %s ORDER BY id", [before])
        return np.array([r[0] for r in self.raw.fetchall()], np.int64)

    def _top(self, table: str) -> int:
        self.raw.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")
        return self.raw.fetchone()[0]

    def answer(self, pairs: np.ndarray, codes: np.ndarray,
               kinds: np.ndarray) -> tuple[np.ndarray, list, list]:
        """Questions, hits, assignments and responses for these pairs (true codes, -1
        none; ``kinds``: their types' indices in TYPES); returns the question ids, each
        pair's majority vote and posterior."""
        raw, now, k = self.raw, self.now, self.answers
        top = self._top("annotations_question")
        copy(raw, "annotations_question",
             ["corpus_id", "kind", "pair_id", "state", "answers_needed", "created_at",
              "completed_at"],
             ((self.corpus_id, "relation", int(p), "complete", k, now, now) for p in pairs))
        questions = self._new_ids("annotations_question", top)
        n_hits = -(-len(pairs) // self.PER_HIT)
        top = self._top("annotations_hit")
        copy(raw, "annotations_hit",
             ["corpus_id", "kind", "backend", "state", "max_assignments", "reward",
              "cost_estimate", "hit_type_id", "post_error", "created_at", "url_key"],
             ((self.corpus_id, "relation", "simulated", "complete", k, "0.50", "0.00", "", "",
               now, secrets.token_urlsafe(24)) for _ in range(n_hits)))
        hits = self._new_ids("annotations_hit", top)
        # k distinct workers per hit (of the first pool); a newcomer takes a first seat.
        crew = np.argsort(self.rng.random((n_hits, self.WORKERS)), axis=1)[:, :k]
        for h, w in enumerate(self.newcomers[:n_hits]):
            crew[h, 0] = w
        self.newcomers = []
        top = self._top("annotations_assignment")
        base = self.serial
        self.serial += n_hits * k
        copy(raw, "annotations_assignment",
             ["hit_id", "worker_id", "external_id", "state", "source", "submitted_at",
              "feedback", "paid", "refusal", "refusal_reason"],
             ((int(hits[h]), int(self.worker_ids[crew[h, a]]), f"bench-a{base + h * k + a}",
               "approved", "intake", now, "", "0.50", "", "")
              for h in range(n_hits) for a in range(k)))
        assignments = self._new_ids("annotations_assignment", top).reshape(n_hits, k)
        hit_of = np.arange(len(pairs)) // self.PER_HIT
        who = crew[hit_of]  # (questions × k) worker positions
        right = self.rng.random(who.shape) < self.accuracy[who]
        other = typed_relations(np.repeat(kinds[:, None], k, axis=1), self.rng)
        wrong = np.where(codes[:, None] < 0, other,
                         np.where(self.rng.random(who.shape) < 0.5, -1, other))
        given = np.where(right, codes[:, None], wrong)
        copy(raw, "annotations_response",
             ["assignment_id", "question_id", "worker_id", "choices", "extra", "seconds",
              "created_at"],
             ((int(assignments[hit_of[q], a]), int(questions[q]),
               int(self.worker_ids[who[q, a]]), json.dumps([label_name(given[q, a])]), "{}",
               12.0, now) for q in range(len(pairs)) for a in range(k)))
        votes, posteriors = [], []
        for q in range(len(pairs)):
            names, counts = np.unique(given[q], return_counts=True)
            votes.append(json.dumps([label_name(names[np.argmax(counts)])]))
            # Counts smoothed toward the true answer: a stand-in for the worker model.
            share = {label_name(c): (n + 0.5 * (c == codes[q])) / (k + 1)
                     for c, n in zip(names, counts, strict=True)}
            share.setdefault(label_name(codes[q]), 0.5 / (k + 1))
            posteriors.append(json.dumps(share))
        return questions, votes, posteriors


def add_labels(raw, pairs: np.ndarray, truth: np.ndarray, index_of: dict, crowd: Crowd | None,
               now: str, kinds: np.ndarray) -> int:
    """Store the labels of these pairs (the truth), with their crowd answers when
    `crowd` is given; returns the number of answers written."""
    at = np.array([index_of[int(p)] for p in pairs], np.int64)
    codes = truth[at]
    labels = [json.dumps([label_name(c)]) for c in codes]
    if crowd is None:
        rows = ((int(p), lab, "majority", lab, 1.0, 3, now, "{}", "{}", "{}", None)
                for p, lab in zip(pairs, labels, strict=True))
        answers = 0
    else:
        questions, votes, posteriors = crowd.answer(pairs, codes, kinds[at])
        rows = ((int(p), lab, "lopsided", vote, 1.0, crowd.answers, now, post, "{}", "{}",
                 int(q))
                for p, lab, vote, post, q in zip(pairs, labels, votes, posteriors, questions,
                                                 strict=True))
        answers = len(pairs) * crowd.answers
    copy(raw, "annotations_pairlabel",
         ["pair_id", "predicates", "method", "majority", "support", "n_answers",
          "created_at", "posterior", "prior", "type_prior", "question_id"], rows)
    return answers


def build(args: argparse.Namespace, rng: np.random.Generator) -> dict:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from estimation.data import PREDICATES
    from kbpo.core.models import Corpus, Document, Sentence
    from submissions.models import State, Submission

    call_command("migrate", verbosity=0)
    now = timezone.now().isoformat()
    corpus = Corpus.objects.create(tag="bench", description="recompute benchmark")
    # Documents of SENTENCES sentences of SENTENCE_CHARS characters each (words, as in
    # real text: a report page shows the sentence of each sample, so its size is real).
    text = " ".join(WORDS[(7 * k) % len(WORDS)] for k in range(4 * SENTENCES * SENTENCE_CHARS))
    sentences = [(text[i * SENTENCE_CHARS:(i + 1) * SENTENCE_CHARS - 1] + ".")
                 for i in range(SENTENCES)]
    doc_text = "".join(sentences)
    docs = Document.objects.bulk_create(
        Document(corpus=corpus, doc_id=f"D{i:05d}", text=doc_text, text_sha256=str(i),
                 length=len(doc_text)) for i in range(args.docs))
    sents = Sentence.objects.bulk_create(
        Sentence(document=d, index=j, begin=j * SENTENCE_CHARS, end=(j + 1) * SENTENCE_CHARS,
                 tokens=[]) for d in docs for j in range(SENTENCES))
    owner = User.objects.create(username="bench", email="bench@example.org")
    subs = Submission.objects.bulk_create(
        Submission(owner=owner, corpus=corpus, name=f"system-{i:03d}", state=State.SCORED,
                   public=True, file="submissions/bench.kb") for i in range(args.systems))
    n_pairs = args.pairs
    per_doc = -(-n_pairs // args.docs)  # the last documents get fewer: n_pairs in all
    if per_doc > MAX_PAIRS_PER_DOC:
        sys.exit(f"at most {MAX_PAIRS_PER_DOC} pairs per document: raise --docs")
    corpus_relations()  # checks the codes: TAC KBP's predicates come first
    doc_of = np.repeat(np.arange(args.docs), per_doc)[:n_pairs]
    slot = np.tile(np.arange(per_doc), args.docs)[:n_pairs]
    kinds = slot % len(TYPES)  # each pair's object type, TYPES[k] (its subject: PER)
    truth = np.where(rng.random(n_pairs) < 0.3, typed_relations(kinds, rng), -1)
    popularity = rng.zipf(1.3, n_pairs).astype(float)
    popularity /= popularity.sum()
    stats = {}
    with transaction.atomic(), connection.cursor() as c:
        raw = c.cursor
        copy(raw, "submissions_mentionpair",
             ["document_id", "sentence_id", "subject_begin", "subject_end", "object_begin",
              "object_end", "subject_type", "object_type"],
             ((docs[d].pk, sents[d * SENTENCES + s % SENTENCES].pk, *mention_offsets(s),
               "PER", TYPES[k]) for d, s, k in zip(doc_of, slot, kinds, strict=True)))
        c.execute("SELECT id FROM submissions_mentionpair ORDER BY id")
        pair_ids = np.array([r[0] for r in c.fetchall()])
        t = time.monotonic()
        for k, sub in enumerate(subs):
            ents = 300
            copy(raw, "submissions_submissionentity", ["submission_id", "node", "type", "link"],
                 ((sub.pk, f":E{e}", "PER", "") for e in range(ents)))
            c.execute("SELECT id FROM submissions_submissionentity WHERE submission_id = %s "
                      "ORDER BY id", [sub.pk])
            ent_ids = np.array([r[0] for r in c.fetchall()])
            # Shared popular core plus a private slice per system (novel predictions).
            core = rng.choice(n_pairs, size=int(args.per_system * 0.8), replace=False,
                              p=popularity)
            private = rng.integers(0, n_pairs, args.per_system - len(core))
            picks = np.unique(np.concatenate([core, private]))
            precise = rng.random(len(picks)) < rng.uniform(0.3, 0.9)
            preds = np.where(precise & (truth[picks] >= 0), truth[picks],
                             typed_relations(kinds[picks], rng))
            copy(raw, "submissions_relationinstance",
                 ["submission_id", "pair_id", "predicate", "subject_entity_id", "confidence",
                  "line"],
                 ((sub.pk, pair_ids[p], PREDICATES[q], ent_ids[(p * 7 + k) % ents], 1.0, i + 2)
                  for i, (p, q) in enumerate(zip(picks, preds, strict=True))))
            c.execute("SELECT id FROM submissions_relationinstance WHERE submission_id = %s",
                      [sub.pk])
            inst = np.array([r[0] for r in c.fetchall()])
            drawn = inst[rng.integers(0, len(inst), args.draws)]
            copy(raw, "annotations_sampledraw",
                 ["submission_id", "scheme", "index", "instance_id", "created_at"],
                 ((sub.pk, "instance", i, x, now) for i, x in enumerate(drawn)))
        stats["instances_s"] = time.monotonic() - t
        c.execute("SELECT DISTINCT r.pair_id FROM annotations_sampledraw d JOIN "
                  "submissions_relationinstance r ON r.id = d.instance_id")
        drawn_pairs = np.array(sorted(r[0] for r in c.fetchall()))
        rng.shuffle(drawn_pairs)
        labelled = drawn_pairs[: int(0.9 * len(drawn_pairs))]

        index_of = {int(p): i for i, p in enumerate(pair_ids)}
        crowd = Crowd(raw, corpus.pk, args.answers, rng, now) if args.answers else None
        stats["answers"] = add_labels(raw, labelled, truth, index_of, crowd, now, kinds)
        ex_docs = rng.choice(args.docs, args.exhaustive, replace=False)
        copy(raw, "annotations_exhaustivedocument",
             ["corpus_id", "document_id", "stage", "state", "matched_entity", "created_at"],
             ((corpus.pk, docs[d].pk, "seed", "complete", "", now) for d in ex_docs))
        ex = set(int(d) for d in ex_docs)
        gold = ((docs[d].pk, 2 * s, 2 * s + 1, 2000 + 2 * s, 2001 + 2 * s,
                 PREDICATES[truth[i]], f"e{d}-{s % 20}", "import")
                for i, (d, s) in enumerate(zip(doc_of, slot, strict=True))
                if d in ex and truth[i] >= 0)
        stats["gold"] = copy(raw, "annotations_goldrelation",
                             ["document_id", "subject_begin", "subject_end", "object_begin",
                              "object_end", "predicate", "subject_entity", "source"], gold)
        c.execute("ANALYZE")
    stats.update(corpus=corpus, pending=drawn_pairs[len(labelled):], truth=truth,
                 index_of=index_of, crowd=crowd, kinds=kinds)
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--per-system", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=300_000)
    parser.add_argument("--docs", type=int, default=2_000)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--exhaustive", type=int, default=100)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--answers", type=int, default=3,
                        help="crowd answers per labelled pair (0: labels without answers)")
    parser.add_argument("--new-workers", type=int, default=0, metavar="N",
                        help="workers never seen before answering in each batch (one HIT "
                             "each; default 0: the first pool answers everything)")
    parser.add_argument("--profile", metavar="FILE",
                        help="write a cProfile of the incremental runs to FILE")
    parser.add_argument("--hard-labels", action="store_true",
                        help="score without the noise correction (KBPO_SOFT_LABELS=false)")
    parser.add_argument("--save-db", metavar="NAME", help="keep the database, after the "
                        "cold run, as template NAME (state in /tmp/NAME.pickle)")
    parser.add_argument("--from-db", metavar="NAME", help="start from a --save-db copy (same "
                        "build arguments); a warm-up of every scheme replaces the cold run")
    parser.add_argument("--live-only", action="store_true", help="per batch only the live "
                        "run and follow-up (no new worker, full rebuild or identity check)")
    parser.add_argument("--dump-scores", metavar="FILE", help="pickle the last batch's "
                        "scores (to compare two versions of the code on one database)")
    parser.add_argument("--memory-map", metavar="FILE",
                        help="trace allocations (tracemalloc) and write where the memory held "
                             "before the first live run, and at that run's peak, was allocated "
                             "(bench/memory_map.py; slows the runs)")
    parser.add_argument("--schemes", metavar="LIST",
                        help="schemes recomputed, comma-separated (KBPO_SCORE_SCHEMES; "
                             "default: every scheme)")
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a Postgres server (a scratch database is created)")
    name = f"kbpo_bench_rc_{os.getpid()}"
    if args.from_db:  # a copy of a built database (1,000 systems: the build is ~9 min)
        _admin(base, f'CREATE DATABASE "{name}" TEMPLATE "{args.from_db}"')
        os.environ["DATABASE_URL"] = base.rsplit("/", 1)[0] + "/" + name
    else:
        os.environ["DATABASE_URL"] = scratch_db(base, name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    try:
        t = time.monotonic()
        data = restore(args.from_db) if args.from_db else build(args, np.random.default_rng(7))
        peaks: dict[str, list[float]] = {"build": [peak_mb()]}
        print(f"{'restored' if args.from_db else 'built'} {args.systems} systems × "
              f"{args.per_system:,} predictions over "
              f"{args.pairs:,} pairs, {args.draws} draws each, {data['gold']:,} gold "
              f"relations, {data['answers']:,} crowd answers in {time.monotonic() - t:.1f} s")
        import django.db
        from django.conf import settings
        from django.db import connection, transaction
        from django.utils import timezone

        from estimation import correction, instance_cache
        from estimation import data as data_module
        from estimation.models import ScoringState, SystemScore
        from estimation.scoring import complete_reweighted, follow_up, recompute, score_schemes

        if args.hard_labels:
            settings.KBPO_SOFT_LABELS = False
        if args.schemes:
            from estimation.core import SCHEMES

            wanted = [s.strip() for s in args.schemes.split(",")]
            unknown = sorted(set(wanted) - set(SCHEMES))
            if unknown:
                sys.exit(f"--schemes: unknown {', '.join(unknown)}; choose from "
                         f"{', '.join(SCHEMES)}")
            settings.KBPO_SCORE_SCHEMES = wanted
        print(f"soft labels: {'on' if settings.KBPO_SOFT_LABELS else 'off'}; schemes: "
              f"{', '.join(score_schemes(settings.KBPO_SAMPLING_SCHEME))}; OpenBLAS threads: "
              f"{os.environ['OPENBLAS_NUM_THREADS']}")
        corpus = data["corpus"]

        def scores(run) -> dict:
            out = {}
            for r in SystemScore.objects.filter(run=run).values():
                del r["id"], r["run_id"], r["generation"]
                out[(r["submission_id"], r["scheme"])] = r
            return out

        profiler = cProfile.Profile() if args.profile else None
        cpus: dict[str, list[float]] = {}
        loads: dict[str, list[tuple[float, float]]] = {}

        live = follow_up() and len(score_schemes(settings.KBPO_SAMPLING_SCHEME)) > 1
        # From a saved database: its runs' generations go on (a live run carries the
        # reweighted rows only when the last run's generation is older).
        generation = [ScoringState.objects.filter(corpus=corpus).values_list(
            "generation", flat=True).first() or 0]

        def announce() -> int:
            """A label change, as `request_recompute` records it: the next generation."""
            generation[0] += 1
            ScoringState.objects.update_or_create(corpus=corpus,
                                                  defaults={"generation": generation[0]})
            return generation[0]

        def timed(label: str, profile: bool = False, **kw) -> tuple[float, object]:
            marks: list[tuple[float, str, float]] = []
            t, cpu = time.monotonic(), time.process_time()
            cpu0 = cpu
            reset_peak()
            if profile and profiler is not None:
                profiler.enable()
            say = lambda m, marks=marks: marks.append(  # noqa: E731
                (time.monotonic(), m, time.process_time()))
            if label == "follow-up":
                run = complete_reweighted(corpus, generation[0], progress=say)
            else:
                run = recompute(corpus, trigger=label, generation=announce(), **kw,
                                progress=say)
            if profile and profiler is not None:
                profiler.disable()
            total, cpu = time.monotonic() - t, time.process_time() - cpu
            peaks.setdefault(label, []).append(peak_mb())
            split = "; ".join(f"{m.split(' ')[0]} at {ts - t:.2f} s" for ts, m, _ in marks[1:])
            if len(marks) > 1:  # the load phase: to the first mark after "loading"
                loads.setdefault(label, []).append((marks[1][0] - t, marks[1][2] - cpu0))
            # On a shared machine wall time swings with the neighbours' load; this
            # process's CPU time (the database's is not in it) swings far less.
            print(f"  {label}: {total:.2f} s, {cpu:.2f} s CPU ({split})")
            cpus.setdefault(label, []).append(cpu)
            return total, run

        if args.memory_map:
            memory_map.start()
        if args.from_db:
            # Every scheme, as the cold run would: a worker's overlaps and memos of the
            # reweighted schemes are then there for the batches' follow-ups.
            print(f"from {args.from_db} (stored arrays; a new worker's first run, every "
                  "scheme):")
            timed("warm-up")
        else:
            print("cold start (no stored arrays):")
            timed("cold full", full=True)
        if args.save_db:
            save(args.save_db, data, base, name)
        if not args.batches:
            return
        pending = list(data["pending"])
        inc, full, restart, follow = [], [], [], []
        same = True
        for b in range(args.batches):
            batch, pending = pending[:args.batch_size], pending[args.batch_size:]
            with transaction.atomic(), connection.cursor() as c:
                if data["crowd"] is not None:
                    data["crowd"].raw = c.cursor
                    data["crowd"].recruit(args.new_workers)
                answered = add_labels(c.cursor, np.asarray(batch), data["truth"],
                                      data["index_of"], data["crowd"], timezone.now().isoformat(),
                                      data["kinds"])
            print(f"batch {b + 1}: +{len(batch)} labels, +{answered} crowd answers")
            # Live (KBPO_SCORE_FOLLOW_UP, the default): the draw scheme, then the queued
            # follow-up's reweighted schemes, timed apart.
            if args.memory_map and b == 0:
                held = memory_map.tracemalloc.take_snapshot()
                with memory_map.PeakSampler() as sampler:
                    t_inc, run_inc = timed("incremental", profile=True, live=live)
                memory_map.write(args.memory_map, held, sampler)
                del held, sampler
            else:
                t_inc, run_inc = timed("incremental", profile=True, live=live)
            inc.append(t_inc)
            if live:
                t_follow, _ = timed("follow-up", profile=True)
                follow.append(t_follow)
            if args.live_only:
                continue
            # A fresh worker: the stored arrays, no population or answers in memory.
            instance_cache._HOT.clear()
            correction.forget_answers()  # nor the crowd answers it read
            data_module.forget()  # nor the draws and exhaustive sample
            t_restart, _ = timed("incremental, new worker", live=live)
            restart.append(t_restart)
            t_full, run_full = timed("full", full=True)
            full.append(t_full)
            same &= scores(run_inc) == scores(run_full)
        if args.dump_scores and args.batches:
            import pickle
            with open(args.dump_scores, "wb") as f:
                pickle.dump(scores(run_inc), f)
        n_schemes = len(score_schemes(settings.KBPO_SAMPLING_SCHEME))
        print(f"per label batch at {args.systems} systems ({n_schemes} scheme(s), "
              f"{args.systems * n_schemes} score rows): incremental median "
              f"{np.median(inc):.2f} s (max {max(inc):.2f}), in a new worker "
              f"{np.median(restart or [np.nan]):.2f} s, full rebuild "
              f"{np.median(full or [np.nan]):.2f} s; incremental and full scores identical: "
              f"{'not checked' if args.live_only else 'yes' if same else 'NO'}")
        if follow:
            print(f"live: the draw scheme per batch, median {np.median(inc):.2f} s; the "
                  f"reweighted schemes' follow-up median {np.median(follow):.2f} s "
                  f"(max {max(follow):.2f})")
        print("CPU of this process per run, median (min): " + ", ".join(
            f"{k} {np.median(v):.2f} ({min(v):.2f}) s" for k, v in cpus.items()
            if k not in ("cold full", "warm-up")))
        print("load phase (to the first mark), median wall / CPU of this process: " + ", ".join(
            f"{k} {np.median([w for w, _ in v]):.3f} / {np.median([c for _, c in v]):.3f} s"
            for k, v in loads.items() if k not in ("cold full", "warm-up")))
        if profiler is not None:
            profiler.dump_stats(args.profile)
            print(f"profile of the incremental runs written to {args.profile}")
        run_peak = max(max(v) for k, v in peaks.items() if k != "build")
        print(f"finished {timezone.now():%H:%M:%S}")
        print("peak RSS (VmHWM, reset before each phase), max per kind: " + ", ".join(
            f"{k} {max(v):.0f} MB" for k, v in peaks.items())
            + f"; whole process {max(max(v) for v in peaks.values()):.0f} MB")
        print(f"incremental {np.median(inc):.2f} s, full {np.median(full or [np.nan]):.2f} s, "
              f"peak {run_peak:.0f} MB")
        django.db.connections.close_all()
    finally:
        drop_db(base, name)


if __name__ == "__main__":
    main()
