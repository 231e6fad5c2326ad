"""Benchmark: ingest a synthetic 1,000,000-line TAC KB file; wall time and peak RSS.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo_bench \
        python bench/bench_ingest.py [--docs 4200] [--lines 1000000] [--steps 4,2,1]

Builds (once) a corpus of synthetic documents loaded with `load_corpus`, writes a
valid KB over it (the worst case: three new entities in every sentence), then
ingests the first lines/4, lines/2 and all lines (`--steps` divisors), each in a fresh
process (ingestion only: the planning that follows in eager mode is unhooked), and
prints wall time, CPU time (user+sys of the ingesting process, and of its Postgres
backend when the server is local) and peak RSS of each. The last line compares the
peaks of the full file and the quarter:
`ingest N lines X s (CPU ...), peak N Y MB, peak N/4 Z MB, ratio R`.
The database is migrated first; use a scratch database, not production.

    python bench/bench_ingest.py --format docred [--source dev_revised.json]
        [--predictions 50000]

DocRED instead (issue 37): times `manage.py load_corpus --format docred` on the source
(the whole Re-DocRED dev split by default; a fresh corpus, deleted afterwards), writes a
DocRED result file of `--predictions` distinct valid predictions over its documents,
then times the upload checks (`inspect_upload` and `check_upload`, what the web form, the
API and `manage.py submit` run before storing the file) and, in a fresh process, the
ingestion (every prediction validated, then stored), and prints them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")

SENTENCES_PER_DOC = 24
REDOCRED_DEV = Path("/work/shared/data/redocred/dev_revised.json")


def sentence(d: int, k: int) -> str:
    return f"Alice{d}x{k} Smith works for Acme{d}x{k} Industries in Paris{d}x{k} town."


def document_text(d: int) -> str:
    return " ".join(sentence(d, k) for k in range(SENTENCES_PER_DOC))


def write_corpus(path: Path, docs: int) -> None:
    with path.open("w") as fh:
        for d in range(docs):
            fh.write(json.dumps({"id": f"BENCH_{d}", "title": f"Doc {d}",
                                 "text": document_text(d)}) + "\n")


def write_kb(path: Path, docs: int, lines: int) -> int:
    """A valid KB: per sentence 3 entities (PER, ORG, GPE) and 4 relation lines."""
    written = 0
    with path.open("w") as fh:
        fh.write("bench_run\n")
        written += 1
        for d in range(docs):
            doc = f"BENCH_{d}"
            offset = 0
            for k in range(SENTENCES_PER_DOC):
                s = sentence(d, k)
                sb, se = offset, offset + len(s)
                offset = se + 1
                names = (f"Alice{d}x{k} Smith", f"Acme{d}x{k} Industries", f"Paris{d}x{k}")
                nodes = (f":P{d}_{k}", f":O{d}_{k}", f":G{d}_{k}")
                block = []
                for node, name, typ in zip(nodes, names, ("PER", "ORG", "GPE"), strict=True):
                    b = sb + s.index(name)
                    block.append(f"{node}\ttype\t{typ}")
                    where = f"{doc}:{b}-{b + len(name) - 1}"
                    block.append(f'{node}\tcanonical_mention\t"{name}"\t{where}')
                    block.append(f'{node}\tmention\t"{name}"\t{where}')
                prov = f"{doc}:{sb}-{se - 1}"
                p, o, g = nodes
                block += [f"{p}\tper:employee_or_member_of\t{o}\t{prov}\t0.9",
                          f"{o}\torg:employees_or_members\t{p}\t{prov}\t0.8",
                          f"{p}\tper:cities_of_residence\t{g}\t{prov}\t0.7",
                          f"{g}\tgpe:headquarters_in_city\t{o}\t{prov}\t0.6"]
                for line in block:
                    if written >= lines:
                        return written
                    fh.write(line + "\n")
                    written += 1
    return written


def ingest_child(submission_id: int, profile: str | None = None) -> None:
    """Run in a fresh process: ingest and report time and peak RSS as JSON."""
    import django

    django.setup()
    from submissions.models import Submission
    from submissions.processing import run_ingestion
    from submissions.services import submission_ingested

    # Time ingestion alone: in eager mode (no broker) the planning hook would go on to
    # draw a sample inside this process (estimation/apps.py connects it).
    submission_ingested.disconnect(dispatch_uid="estimation-plan")

    backend = _backend_pid()
    before = resource.getrusage(resource.RUSAGE_SELF)
    db_before = _proc_cpu(backend)
    started = time.monotonic()
    if profile:
        import cProfile

        # CPU time of this process: the Postgres side is `db_cpu_seconds`.
        profiler = cProfile.Profile(time.process_time)
        outcome = profiler.runcall(run_ingestion, submission_id)
        profiler.dump_stats(profile)
    else:
        outcome = run_ingestion(submission_id)
    seconds = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
    db_cpu = _proc_cpu(backend) - db_before
    sub = Submission.objects.get(pk=submission_id)
    rss_mb = usage.ru_maxrss / 1024
    print(json.dumps({"outcome": outcome, "seconds": round(seconds, 1),
                      "cpu_seconds": round(cpu, 1),
                      "db_cpu_seconds": round(db_cpu, 1), "peak_rss_mb": round(rss_mb),
                      "relations": sub.n_relations,
                      "mentions": sub.n_mentions, "entities": sub.n_entities,
                      "errors": sub.n_errors, "report": sub.report[:3]}))


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()" if connection.vendor == "postgresql"
                       else "SELECT 0")
        return int(cursor.fetchone()[0])


def _proc_cpu(pid: int) -> float:
    """user+sys seconds of a local process (the Postgres backend); nan if unreadable
    (remote server, not Linux): the backend's CPU is the SQL half of the work."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=4200)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--steps", default="4,2,1",
                        help="ingest lines/k for each k (4 must be one: the ratio's base)")
    parser.add_argument("--profile", metavar="PREFIX",
                        help="write cProfile stats of each step to PREFIX-<lines>.prof")
    parser.add_argument("--format", choices=("tac", "docred"), default="tac")
    parser.add_argument("--source", type=Path, default=REDOCRED_DEV,
                        help="--format docred: the DocRED or Re-DocRED file to load")
    parser.add_argument("--predictions", type=int, default=50_000,
                        help="--format docred: predictions in the result file")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        ingest_child(args.child, args.profile)
        return
    if args.format == "docred":
        docred_main(args)
        return

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.files import File
    from django.core.management import call_command
    from django.db import connection

    from kbpo.core.corpus import load_corpus
    from kbpo.core.models import Corpus
    from submissions.models import Submission
    from submissions.processing import delete_rows

    if connection.vendor != "postgresql":
        print("warning: not on Postgres; set DATABASE_URL for the COPY path", file=sys.stderr)
    settings.KBPO_SUBMISSION_MAX_BYTES = 10**9
    call_command("migrate", verbosity=0)
    OUT.mkdir(parents=True, exist_ok=True)
    tag = f"bench{args.docs}"
    corpus = Corpus.objects.filter(tag=tag).first()
    if corpus is None or corpus.documents.count() != args.docs:
        path = OUT / f"corpus_{args.docs}.jsonl"
        write_corpus(path, args.docs)
        t = time.monotonic()
        report = load_corpus(tag, path)
        print(f"corpus: {report.summary()} ({time.monotonic() - t:.0f} s)")
        corpus = Corpus.objects.get(tag=tag)

    user, _ = User.objects.get_or_create(username="bench")
    results = {}
    divisors = sorted({int(k) for k in args.steps.split(",")} | {1, 4}, reverse=True)
    for k in divisors:
        label, n = f"1/{k}" if k > 1 else "full", args.lines // k
        kb = OUT / f"kb_{n}.tsv"
        written = write_kb(kb, args.docs, n)
        if written < n:
            sys.exit(f"only {written} lines fit in {args.docs} documents; raise --docs")
        with kb.open("rb") as fh:
            sub = Submission(owner=user, corpus=corpus, name=f"bench-{label}",
                             original_name=kb.name, file_size=kb.stat().st_size)
            sub.file.save(kb.name, File(fh), save=False)
            sub.save()
        child = [sys.executable, __file__, "--child", str(sub.pk)]
        if args.profile:
            child += ["--profile", f"{args.profile}-{n}.prof"]
        proc = subprocess.run(child,
                              capture_output=True, text=True, cwd=ROOT, check=False)
        if proc.returncode:
            sys.exit(proc.stderr)
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        results[label] = res
        print(f"{label}: {n:,} lines ({kb.stat().st_size / 1e6:.0f} MB) -> {res['outcome']} "
              f"in {res['seconds']} s (CPU {res['cpu_seconds']} s + Postgres "
              f"{res['db_cpu_seconds']} s), "
              f"peak RSS {res['peak_rss_mb']} MB; "
              f"{res['relations']:,} relations, {res['mentions']:,} mentions, "
              f"{res['entities']:,} entities")
        delete_rows(sub)
        sub.file.delete(save=False)
        sub.delete()
    print(json.dumps(results))
    q, f = results["1/4"], results["full"]
    full, quarter = _short(args.lines), _short(args.lines // 4)
    print(f"ingest {full} lines {f['seconds']} s (CPU {f['cpu_seconds']} s + Postgres "
          f"{f['db_cpu_seconds']} s), peak {full} "
          f"{f['peak_rss_mb']} MB, peak {quarter} {q['peak_rss_mb']} MB, ratio "
          f"{f['peak_rss_mb'] / q['peak_rss_mb']:.2f}")


def write_docred_predictions(source: Path, path: Path, n: int, seed: int = 7) -> int:
    """`n` distinct valid predictions over the source's documents in the DocRED result
    format, in a shuffled order: each document's gold facts first (real systems find
    them), then entity pairs of the same documents with relations of DocRED's schema;
    evidence the head's first sentence. Returns how many were written (fewer than `n`
    only when the documents have too few entity pairs)."""
    import random

    from kbpo.core.schemas import DOCRED, get_schema
    from kbpo.demo.world.docred_native import gold_facts, read_source

    relations = list(get_schema(DOCRED).relations)
    _, docs = read_source(source)
    rng = random.Random(seed)
    chosen = dict.fromkeys(gold_facts(docs, frozenset(relations)))
    pairs = [(i, h, t) for i, d in enumerate(docs) for h in range(len(d.entities))
             for t in range(len(d.entities)) if h != t]
    tries = 0
    while len(chosen) < n and tries < 20 * n:
        tries += 1
        chosen.setdefault((*rng.choice(pairs), rng.choice(relations)), None)
    facts = list(chosen)[:n]
    rng.shuffle(facts)
    rows = [{"title": docs[i].title, "h_idx": h, "t_idx": t, "r": r,
             "evidence": [docs[i].entities[h].mentions[0][0]]} for i, h, t, r in facts]
    path.write_text(json.dumps(rows), encoding="utf-8")
    return len(rows)


def docred_main(args: argparse.Namespace) -> None:
    if not args.source.is_file():
        print(f"skipped: {args.source} is absent (a DocRED or Re-DocRED file is needed)")
        return
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.files import File
    from django.core.management import call_command
    from django.db import connection

    from kbpo.core.models import Corpus
    from submissions.docred_format import check_upload
    from submissions.kbformat import inspect_upload
    from submissions.models import Submission
    from submissions.processing import delete_rows

    call_command("migrate", verbosity=0)
    OUT.mkdir(parents=True, exist_ok=True)
    tag = f"bench-docred-{os.getpid()}"
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "manage.py", "load_corpus", "--tag", tag,
                           "--format", "docred", str(args.source), "--quiet-progress"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    load_s = time.monotonic() - t
    if proc.returncode:
        sys.exit(proc.stderr)
    try:
        corpus = Corpus.objects.get(tag=tag)
        docs = corpus.documents.count()
        print(f"database: {connection.vendor}")
        print(f"load_corpus --format docred {args.source.name}: {docs} documents "
              f"({args.source.stat().st_size / 1e6:.1f} MB) in {load_s:.1f} s wall "
              f"(the command's process, Django start-up included)")
        print(f"  its report: {proc.stdout.strip().splitlines()[-1]}")
        path = OUT / f"docred_{args.predictions}.json"
        t = time.monotonic()
        n = write_docred_predictions(args.source, path, args.predictions)
        print(f"result file: {n:,} predictions, {path.stat().st_size / 1e6:.1f} MB "
              f"(written in {time.monotonic() - t:.1f} s)")
        user, _ = User.objects.get_or_create(username="bench")
        t = time.monotonic()
        with path.open("rb") as fh:
            check = inspect_upload(fh, settings.KBPO_SUBMISSION_MAX_BYTES)
            problem = check.code or check_upload(fh, check, corpus.schema, corpus.tag)
            checks_s = time.monotonic() - t
            if problem:
                sys.exit(f"upload refused: {problem} {check.message}")
            sub = Submission(owner=user, corpus=corpus, name="bench-docred",
                             original_name=path.name, file_size=path.stat().st_size)
            sub.file.save(path.name, File(fh), save=False)
            sub.save()
        stored_s = time.monotonic() - t
        proc = subprocess.run([sys.executable, __file__, "--child", str(sub.pk)],
                              capture_output=True, text=True, cwd=ROOT, check=False)
        if proc.returncode:
            sys.exit(proc.stderr)
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"upload checks {checks_s:.2f} s, stored {stored_s:.2f} s; ingestion "
              f"(validation + rows) -> {res['outcome']} in {res['seconds']} s (CPU "
              f"{res['cpu_seconds']} s + Postgres {res['db_cpu_seconds']} s), peak RSS "
              f"{res['peak_rss_mb']} MB; {res['relations']:,} relations, "
              f"{res['errors']} errors")
        delete_rows(sub)
        sub.file.delete(save=False)
        sub.delete()
    finally:
        Corpus.objects.filter(tag=tag).delete()


def _short(n: int) -> str:
    """1000000 -> 1M, 250000 -> 250k."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


if __name__ == "__main__":
    main()
