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
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        ingest_child(args.child, args.profile)
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


def _short(n: int) -> str:
    """1000000 -> 1M, 250000 -> 250k."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


if __name__ == "__main__":
    main()
