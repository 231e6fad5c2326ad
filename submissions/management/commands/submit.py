"""`manage.py submit --user U --corpus TAG --name NAME FILE`: upload from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from kbpo.core.models import Corpus
from submissions.docred_format import FORMATS, check_upload
from submissions.forms import SubmissionForm
from submissions.kbformat import inspect_upload
from submissions.models import Submission
from submissions.services import DuplicateUpload, LimitExceeded, create_submission

# Command option -> Submission field, checked by the upload form's own fields.
TEXT_OPTIONS = {"name": "name", "description": "description", "method": "method_description",
                "paper_url": "paper_url"}


def _clean_fields(opts: dict[str, Any]) -> dict[str, str]:
    """The text options as the upload form would accept them (length, NUL, URL scheme),
    so the shell cannot store what the form and the API refuse."""
    form_fields = SubmissionForm.base_fields
    out: dict[str, str] = {}
    for option, field in TEXT_OPTIONS.items():
        flag = "--" + option.replace("_", "-")
        try:
            # A shell in a non-UTF-8 locale passes its bytes as lone surrogates.
            opts[option].encode("utf-8")
        except UnicodeEncodeError:
            raise CommandError(f"{flag}: the text is not valid UTF-8; run the command in "
                               "a UTF-8 locale (e.g. LANG=C.UTF-8).") from None
        try:
            out[field] = form_fields[field].clean(opts[option])
        except ValidationError as exc:
            raise CommandError(f"{flag}: {' '.join(exc.messages)}") from None
    return out


class Command(BaseCommand):
    help = ("Upload a TAC KB file, or a DocRED result file for a DocRED corpus (plain or "
            "gzip), as a submission of USER on corpus TAG.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--user", required=True, help="Username of the owner.")
        parser.add_argument("--corpus", required=True, help="Corpus tag.")
        parser.add_argument("--name", required=True, help="System name.")
        parser.add_argument("--description", default="")
        parser.add_argument("--method", default="", help="Method description.")
        parser.add_argument("--paper-url", default="")
        parser.add_argument("--public", action="store_true")
        parser.add_argument("--format", choices=FORMATS, default=None,
                            help="tac (TAC KB) or docred (DocRED result JSON); by default "
                                 "recognised from the content. It must be the corpus's.")
        parser.add_argument("--drop-invalid", action="store_true",
                            help="Accept the valid lines of a file with errors, dropping "
                                 "(and listing) the invalid ones.")
        parser.add_argument("--ignore-limits", action="store_true",
                            help="Operators: do not apply the per-user limits.")

    def handle(self, *args: Any, **opts: Any) -> None:
        path: Path = opts["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        fields = _clean_fields(opts)
        try:
            owner = get_user_model().objects.get(username=opts["user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {opts['user']!r}") from None
        try:
            corpus = Corpus.objects.get(tag=opts["corpus"])
        except Corpus.DoesNotExist:
            raise CommandError(f"no corpus tagged {opts['corpus']!r}") from None
        with path.open("rb") as fh:
            check = inspect_upload(fh, settings.KBPO_SUBMISSION_MAX_BYTES)
            if check.code:
                raise CommandError(f"{check.code}: {check.message}")
            problem = check_upload(fh, check, corpus.schema, corpus.tag, opts["format"])
            if problem:
                raise CommandError(problem)
            try:
                # on_commit runs the task (inline in eager mode) after this block.
                with transaction.atomic():
                    sub = create_submission(
                        owner=owner, corpus=corpus, file=fh,
                        original_name=path.name, compressed=check.compressed,
                        public=opts["public"], run_id=check.run_id,
                        enforce_limits=not opts["ignore_limits"],
                        drop_invalid=opts["drop_invalid"], **fields)
            except (DuplicateUpload, LimitExceeded) as exc:
                raise CommandError(str(exc)) from None
        sub = Submission.objects.get(pk=sub.pk)
        self.stdout.write(f"submission {sub.pk}: {sub.state}")
        if sub.state in ("ingested", "rejected"):
            self.stdout.write(f"  {sub.n_relations} relations, {sub.n_mentions} mentions, "
                              f"{sub.n_warnings} warnings, {sub.n_errors} errors"
                              + (f", {sub.n_dropped} lines dropped" if sub.drop_invalid
                                 else ""))
            for line, code, message in sub.dropped[:20]:
                self.stdout.write(f"  line {line}: dropped {code}: {message}")
            for p in sub.report[:20]:
                self.stdout.write(f"  line {p['line']}: {p['severity']} {p['code']}: "
                                  f"{p['message']}")
            if sub.state == "rejected":
                raise CommandError(f"submission {sub.pk} was rejected")
