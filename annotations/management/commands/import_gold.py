"""`manage.py import_gold --format kbpo|docred --corpus TAG FILE`: import exhaustive gold."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.exhaustive.docred import import_docred
from annotations.exhaustive.docred_gold import import_docred_native
from annotations.exhaustive.gold import GoldImportError, import_kbpo
from kbpo.core.models import Corpus, check_tag
from kbpo.core.schemas import DOCRED


class Command(BaseCommand):
    help = ("Import an existing exhaustive annotation as the corpus's true-instance sample: "
            "--format kbpo reads the demo world's gold.jsonl (documents must be loaded); "
            "--format docred reads DocRED / Re-DocRED JSON: into a DocRED corpus (load_corpus "
            "--format docred) its labels are gold for every relation, otherwise it creates "
            "the documents and maps the labels to TAC KBP. "
            "Safe to re-run. See docs/operators/exhaustive.md and docs/researchers/docred.md.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", required=True, choices=["kbpo", "docred"])
        parser.add_argument("--corpus", required=True, help="corpus tag")
        parser.add_argument("--only-planned", action="store_true",
                            help="import only documents already in the exhaustive plan "
                                 "(complete the two-stage sample from gold); kbpo, and "
                                 "docred into a DocRED corpus")
        parser.add_argument("--doc-prefix", default="",
                            help="docred: prefix for the document ids built from titles")
        parser.add_argument("--json", action="store_true",
                            help="print the full report as JSON")

    def handle(self, *args: object, **opts: object) -> None:
        path: Path = opts["file"]  # type: ignore[assignment]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        tag = str(opts["corpus"])
        fmt = opts["format"]
        if fmt == "kbpo":
            corpus = Corpus.objects.filter(tag=tag).first()
            if corpus is None:
                raise CommandError(f"corpus {tag!r} does not exist; load its documents first "
                                   f"(manage.py load_corpus --tag {tag} corpus.jsonl)")
        elif (native := Corpus.objects.filter(tag=tag, schema=DOCRED).first()) is not None:
            corpus = native
        else:
            if opts["only_planned"]:
                raise CommandError("--only-planned applies to --format kbpo, and to --format "
                                   "docred into a DocRED corpus (load_corpus --format docred)")
            try:
                check_tag(tag)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
            corpus, _ = Corpus.objects.get_or_create(
                tag=tag, defaults={"description": f"Imported from {path.name} (DocRED format)"})
        try:
            if fmt == "kbpo":
                report = import_kbpo(corpus, path, only_planned=bool(opts["only_planned"]))
            elif corpus.schema == DOCRED:
                report = import_docred_native(corpus, path,
                                              only_planned=bool(opts["only_planned"]))
            else:
                report = import_docred(corpus, path, doc_prefix=str(opts["doc_prefix"]))
        except GoldImportError as exc:
            raise CommandError(str(exc)) from exc
        for message in report.messages:
            self.stderr.write(f"{path}: {message}")
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=1, sort_keys=True))
        else:
            self.stdout.write(report.summary())
        if (report.documents_read and not opts["only_planned"]
                and not (report.documents_imported or report.documents_unchanged)):
            raise CommandError("nothing was imported; see the reasons above")
