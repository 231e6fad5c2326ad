"""`manage.py scores --corpus TAG --format json|table`: the current leaderboard."""

from __future__ import annotations

import json
import unicodedata

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.serializers.json import DjangoJSONEncoder

from estimation import leaderboard as lb
from estimation.models import METRICS, interval_ends
from kbpo.core.models import Corpus


class _Operator:
    """The command runs as an operator: it sees private submissions too."""

    is_staff = True
    is_authenticated = True
    pk = None


def printable(text: str) -> str:
    """`text` with control and format characters written as escapes (\\x1b, \\n,
    \\u202e): a system name is the uploader's text, and printed raw to an operator's
    terminal an escape sequence would run there, a newline or a bidi override would
    break or reorder the table."""
    return "".join(repr(ch)[1:-1] if unicodedata.category(ch).startswith("C") else ch
                   for ch in text)


class Command(BaseCommand):
    help = "Print the latest scores of every active system on a corpus (operators' view)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True, help="Corpus tag, e.g. demo.")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument("--scheme", choices=list(lb.BOARD_SCHEMES), default="instance")
        parser.add_argument("--sort", choices=list(METRICS), default="f1")
        parser.add_argument("--kind", choices=list(lb.KINDS), default="joint")

    def handle(self, *args: object, **opts: object) -> None:
        tag = opts["corpus"]
        corpus = Corpus.objects.filter(tag=tag).first()
        if corpus is None:
            known = ", ".join(Corpus.objects.values_list("tag", flat=True)) or "none loaded"
            raise CommandError(f"--corpus {tag!r}: no such corpus (known: {known})")
        board = lb.build(corpus, _Operator(), opts["scheme"], opts["sort"],  # type: ignore[arg-type]
                         opts["kind"])  # type: ignore[arg-type]
        if opts["format"] == "json":
            self.stdout.write(json.dumps(lb.board_dict(board), cls=DjangoJSONEncoder, indent=2))
            return
        if board.run is None:
            self.stdout.write(f"No scores on {tag} yet (run `manage.py recompute_scores "
                              f"--corpus {tag}`).")
            return
        run = board.run
        self.stdout.write(
            f"{tag} · {board.scheme} scheme, {board.kind} estimates, "
            f"{round(100 * run.confidence)}% intervals · run {run.pk} "
            f"({run.n_labels} labels, {run.n_exhaustive_documents} exhaustive documents, "
            f"{run.finished_at:%Y-%m-%d %H:%M:%S} UTC)")
        header = f"{'#':>3}  {'system':<28} " + " ".join(f"{m:>21}" for m in METRICS) + \
            f" {'labels':>7}  notes"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for row in board.rows:
            cells = []
            for m in METRICS:
                v = row.metrics[m]
                est = "  n/a" if v.estimate is None else f"{v.estimate:.3f}"
                ci = ("" if v.lo is None else "exact" if v.exact
                      else "[{},{}]".format(*interval_ends(v.lo, v.hi)))
                cells.append(f"{est:>5} {ci:>15}")
            notes = [n for n, on in [("baseline", row.submission.is_baseline),
                                     ("tied with #1", row.tied_with_leader),
                                     ("refining", row.refining), ("private", row.private)]
                     if on]
            name = printable(row.submission.name)[:28]
            self.stdout.write(f"{row.rank:>3}  {name:<28} " + " ".join(cells)
                              + f" {row.score.labels_used:>7}  {', '.join(notes)}")
