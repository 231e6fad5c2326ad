"""`manage.py load_corpus --tag TAG [--format jsonl|docred] FILE`: load a JSON Lines
corpus, or a DocRED / Re-DocRED file as a DocRED-schema corpus (plain or .gz)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kbpo.core.corpus import LoadReport, load_corpus
from kbpo.core.docred_load import DocredLoadError, load_docred_corpus
from kbpo.core.models import check_tag

MAX_ERRORS_SHOWN = 200


class Command(BaseCommand):
    help = ("Load documents from a JSON Lines file ({\"id\", \"title\", \"text\", \"date\"?} "
            "per line, plain or gzip) into a corpus. Safe to re-run: unchanged documents are "
            "skipped; a changed text under an existing id is refused.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--tag", required=True,
                            help="corpus tag, e.g. demo (ASCII letters, digits, - and _)")
        parser.add_argument("--format", default="jsonl", choices=["jsonl", "docred"],
                            help="jsonl (default): one document per line, TAC KBP schema; "
                                 "docred: a DocRED / Re-DocRED JSON file as published, into "
                                 "a corpus on the DocRED schema (docs/researchers/docred.md)")
        parser.add_argument("--description", default="", help="corpus description")
        parser.add_argument("--workers", type=int, default=None,
                            help="processes used to split sentences (default: CPU count, max 4)")
        parser.add_argument("--quiet-progress", action="store_true",
                            help="do not print progress lines")

    def handle(self, *args: object, **opts: object) -> None:
        path: Path = opts["file"]  # type: ignore[assignment]
        try:
            check_tag(str(opts["tag"]))
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        last = [0.0]
        quiet = bool(opts["quiet_progress"])

        def progress(report: LoadReport, total: int) -> None:
            now = time.monotonic()
            if quiet or (now - last[0] < 1.0 and report.created < total):
                return
            last[0] = now
            sys.stderr.write(f"\r  {report.created}/{total} new documents stored"
                             f" ({report.sentences} sentences)")
            sys.stderr.flush()

        if opts["format"] == "docred":
            try:
                report = load_docred_corpus(str(opts["tag"]), path,
                                            description=str(opts["description"]),
                                            progress=progress)
            except DocredLoadError as exc:
                raise CommandError(str(exc)) from None
        else:
            report = load_corpus(str(opts["tag"]), path, description=str(opts["description"]),
                                 progress=progress,
                                 workers=opts["workers"])  # type: ignore[arg-type]
        if report.created and not quiet:
            sys.stderr.write("\n")
        for err in report.errors[:MAX_ERRORS_SHOWN]:
            self.stderr.write(f"{path}: {err}")
        if len(report.errors) > MAX_ERRORS_SHOWN:
            self.stderr.write(f"... and {len(report.errors) - MAX_ERRORS_SHOWN} more errors")
        self.stdout.write(report.summary())
        if report.errors:
            raise CommandError(f"{len(report.errors)} line(s) refused; fix them and re-run "
                               "(documents already loaded are kept and skipped next time)")
