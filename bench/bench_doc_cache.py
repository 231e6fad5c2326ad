"""Microbenchmark: pass 2's document cache when two batches cite more documents than
DOC_CACHE (they are never evicted, so every other entry and miss is past the bound).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kbpo_bench \
        python bench/bench_doc_cache.py [--cache 4000] [--batches 4]

Creates (inside a transaction rolled back at the end) a corpus of one-sentence
documents, then runs what pass 2 does per batch: `prefetch_batch` of 1.5 x cache
documents (the prefetch loads `cache` of them) and a `sentence_of` and `text` for each,
the others loaded on a miss each. Prints the process CPU time (user+sys) of that part,
and the client side only: the Postgres backend's share is the same queries either way.
The database is migrated first; use a scratch database, not production.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", type=int, default=4000, help="DOC_CACHE for the run")
    ap.add_argument("--batches", type=int, default=4)
    args = ap.parse_args()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from kbpo.core.models import Corpus, Document, Sentence
    from submissions import indexes

    call_command("migrate", verbosity=0)
    indexes.DOC_CACHE = args.cache
    per_batch = args.cache * 3 // 2
    with transaction.atomic():
        corpus = Corpus.objects.create(tag="bench-doc-cache")
        Document.objects.bulk_create(
            (Document(corpus=corpus, doc_id=f"D{i}", text=f"doc {i}.", text_sha256="0",
                      length=7) for i in range(per_batch * args.batches)), batch_size=5000)
        docs = list(Document.objects.filter(corpus=corpus).order_by("id")
                    .values_list("id", flat=True))
        Sentence.objects.bulk_create(
            (Sentence(document_id=pk, index=0, begin=0, end=7) for pk in docs),
            batch_size=5000)
        index = indexes.DocumentIndex(corpus.pk)
        start = cpu()
        for b in range(args.batches):
            batch = docs[b * per_batch:(b + 1) * per_batch]
            index.prefetch_batch(set(batch), set(batch))
            for pk in batch:
                index.sentence_of(pk, 0, 1)
                index.text(pk)
        spent = cpu() - start
        transaction.set_rollback(True)
    lookups = per_batch * args.batches
    print(f"doc cache {args.cache}: {args.batches} batches of {per_batch} documents, "
          f"CPU {spent:.2f} s ({spent / lookups * 1e6:.0f} us a document)")


if __name__ == "__main__":
    main()
