"""Benchmark: load 10,000 news-length demo-world documents with load_corpus.

Prints the wall time of a first load and of an idempotent re-load, and peak RSS.
Run through `make bench` (Postgres when available) or directly with DATABASE_URL set.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")

import django

django.setup()

from django.db import connection  # noqa: E402

from kbpo.core.corpus import load_corpus  # noqa: E402
from kbpo.core.models import Corpus  # noqa: E402
from kbpo.demo.world import generate as demo_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    args, _ = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t = time.monotonic()
        demo_world.generate(out, docs=args.docs, systems=2, seed=7, progress=None)
        gen = time.monotonic() - t
        path = out / "corpus.jsonl"
        size_mb = path.stat().st_size / 1e6
        tag = f"bench-{os.getpid()}"
        try:
            first = load_corpus(tag, path)
            again = load_corpus(tag, path)
        finally:
            Corpus.objects.filter(tag=tag).delete()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"database: {connection.vendor}")
    print(f"corpus: {args.docs} documents, {size_mb:.1f} MB JSONL (generated in {gen:.1f} s)")
    print(f"first load: {first.seconds:.1f} s ({args.docs / first.seconds:.0f} docs/s), "
          f"{first.sentences} sentences, {first.tokens} tokens")
    print(f"re-load (idempotent): {again.seconds:.2f} s, created {again.created}")
    print(f"peak RSS of this process: {rss:.0f} MB")


if __name__ == "__main__":
    main()
