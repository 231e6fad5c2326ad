"""Loading a corpus from JSON Lines: validation, sentence/token splitting, idempotence.

Each line is `{"id": ..., "title": ..., "text": ..., "date": "YYYY-MM-DD"?,
"sentences": [[begin, end], ...]?}`. With `sentences` (the source's own sentence
boundaries) the text is not re-split: only tokens come from the tokenizer, inside each
given sentence. A bad line is reported with its number and skipped; good lines are
loaded. Re-loading the same file changes nothing (sentences included: they are fixed at
the first load); a different text under an existing id is refused, since
every submission refers to character offsets in that text.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import multiprocessing
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from syntok import segmenter
from syntok.tokenizer import Tokenizer

from .models import Corpus, Document, Sentence, check_tag

MAX_ID_LENGTH = 200
BATCH_DOCS = 250
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class LineError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class LoadReport:
    corpus: str
    lines: int = 0
    created: int = 0
    unchanged: int = 0
    updated: int = 0
    sentences: int = 0
    tokens: int = 0
    errors: list[LineError] = field(default_factory=list)
    seconds: float = 0.0
    unit: str = "lines"  # what `lines` counts: JSON Lines, or a DocRED file's documents

    def summary(self) -> str:
        return (f"corpus {self.corpus}: {self.lines} {self.unit} read, {self.created} documents "
                f"created, {self.updated} updated (title/date), {self.unchanged} unchanged, "
                f"{len(self.errors)} refused; {self.sentences} sentences and {self.tokens} "
                f"tokens added in {self.seconds:.1f} s")


@dataclass
class DocumentRecord:
    line: int
    doc_id: str
    title: str
    text: str
    date: dt.date | None
    sha256: str
    sentences: list[tuple[int, int]] | None = None


def split_text(text: str) -> list[tuple[int, int, list[int]]]:
    """Split a text into sentences and tokens.

    Returns `(begin, end, [b0, e0, b1, e1, ...])` per sentence, character offsets,
    half-open. syntok's `analyze` keeps every token's offset in the original text.
    """
    out: list[tuple[int, int, list[int]]] = []
    for paragraph in segmenter.analyze(text):
        for sentence in paragraph:
            flat: list[int] = []
            for token in sentence:
                if not token.value.strip():  # control characters Python counts as space
                    continue
                flat.append(token.offset)
                flat.append(token.offset + len(token.value))
            if flat:
                out.append((flat[0], flat[-1], flat))
    return out


def tokenize_sentences(text: str, sentences: list[tuple[int, int]]
                       ) -> list[tuple[int, int, list[int]]]:
    """Tokens inside given sentence boundaries, in the same shape as `split_text`.

    The sentence spans stay exactly as given (they are the source's), even when
    they start or end with spaces, so that provenance aligned to them is accepted.
    """
    tokenizer = Tokenizer()
    out: list[tuple[int, int, list[int]]] = []
    for begin, end in sentences:
        flat: list[int] = []
        for token in tokenizer.tokenize(text[begin:end]):
            if not token.value.strip():
                continue
            flat.append(begin + token.offset)
            flat.append(begin + token.offset + len(token.value))
        out.append((begin, end, flat))
    return out


def split_record(record: DocumentRecord) -> list[tuple[int, int, list[int]]]:
    """Sentences and tokens of one record: the given sentences, else the splitter's."""
    if record.sentences is not None:
        return tokenize_sentences(record.text, record.sentences)
    return split_text(record.text)


def parse_sentences(value: object, length: int) -> list[tuple[int, int]]:
    """Validate a `sentences` field: half-open spans, in order, disjoint, in the text."""
    example = "e.g. [[0, 42], [43, 97]]"
    if not isinstance(value, list) or not value:
        raise ValueError(f"'sentences' must be a non-empty list of [begin, end] pairs, {example}")
    spans: list[tuple[int, int]] = []
    previous_end = 0
    for i, item in enumerate(value):
        if (not isinstance(item, list) or len(item) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in item)):
            raise ValueError(f"sentences[{i}] must be a pair of integers [begin, end], {example}")
        begin, end = item
        if not 0 <= begin < end <= length:
            raise ValueError(f"sentences[{i}] = [{begin}, {end}] must satisfy 0 <= begin < end "
                             f"<= {length} (the text length); offsets are half-open "
                             "character offsets")
        if begin < previous_end:
            raise ValueError(f"sentences[{i}] = [{begin}, {end}] starts before the previous "
                             f"sentence ends ({previous_end}); sentences must be in order and "
                             "must not overlap")
        spans.append((begin, end))
        previous_end = end
    return spans


def open_lines(path: Path) -> Iterator[bytes]:
    """Yield raw lines of a plain or gzip-compressed file (detected by magic bytes)."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    opener = gzip.open if magic == GZIP_MAGIC else open
    with opener(path, "rb") as fh:
        yield from fh


def _parse_date(value: object) -> dt.date:
    if not isinstance(value, str):
        raise ValueError("'date' must be a string like \"2016-03-01\"")
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        raise ValueError(f"'date' {value!r} is not an ISO date like \"2016-03-01\"") from None


def parse_line(number: int, raw: bytes, max_bytes: int) -> DocumentRecord | LineError | None:
    """Validate one JSON Lines record; None for a blank line."""
    if len(raw) > max_bytes:
        return LineError(number, f"line is {len(raw)} bytes, over the limit of {max_bytes} "
                                 "(KBPO_CORPUS_MAX_LINE_BYTES)")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(number, f"not valid UTF-8 (byte {exc.start}); re-encode the file "
                                 "as UTF-8")
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return LineError(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(obj, dict):
        return LineError(number, "expected a JSON object like "
                                 "{\"id\": ..., \"title\": ..., \"text\": ...}")
    doc_id, text, title = obj.get("id"), obj.get("text"), obj.get("title", "")
    if not isinstance(doc_id, str) or not doc_id.strip():
        return LineError(number, "'id' is missing or not a non-empty string")
    if (len(doc_id) > MAX_ID_LENGTH or any(c.isspace() for c in doc_id) or ":" in doc_id
            or "," in doc_id):
        return LineError(number, f"'id' {doc_id[:60]!r} must be at most {MAX_ID_LENGTH} "
                                 "characters without spaces, colons or commas (submissions "
                                 "write DOCID:begin-end, several separated by commas)")
    if not isinstance(text, str) or not text.strip():
        return LineError(number, f"document {doc_id}: 'text' is missing or empty")
    if title is None:
        title = ""
    if not isinstance(title, str):
        return LineError(number, f"document {doc_id}: 'title' must be a string")
    date = None
    if obj.get("date") not in (None, ""):
        try:
            date = _parse_date(obj["date"])
        except ValueError as exc:
            return LineError(number, f"document {doc_id}: {exc}")
    sentences = None
    if obj.get("sentences") is not None:
        try:
            sentences = parse_sentences(obj["sentences"], len(text))
        except ValueError as exc:
            return LineError(number, f"document {doc_id}: {exc}")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return DocumentRecord(number, doc_id, title, text, date, sha, sentences)


def read_records(path: Path, report: LoadReport) -> Iterator[DocumentRecord]:
    """Parse a file, recording bad lines in the report and skipping them."""
    seen: dict[str, int] = {}
    max_bytes = settings.KBPO_CORPUS_MAX_LINE_BYTES
    try:
        for number, raw in enumerate(open_lines(path), start=1):
            report.lines = number
            parsed = parse_line(number, raw, max_bytes)
            if parsed is None:
                continue
            if isinstance(parsed, LineError):
                report.errors.append(parsed)
                continue
            if parsed.doc_id in seen:
                report.errors.append(LineError(
                    number, f"document {parsed.doc_id} already appears on line "
                            f"{seen[parsed.doc_id]}; ids must be unique"))
                continue
            seen[parsed.doc_id] = number
            yield parsed
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        report.errors.append(LineError(report.lines + 1, f"file cannot be read further: {exc}"))


def _batches(items: Iterable[DocumentRecord], size: int) -> Iterator[list[DocumentRecord]]:
    batch: list[DocumentRecord] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def load_corpus(tag: str, path: Path, description: str = "",
                progress: Callable[[LoadReport, int], None] | None = None,
                workers: int | None = None) -> LoadReport:
    """Load (or re-load) a JSON Lines corpus file into the corpus `tag`.

    Raises ValidationError, before reading the file, when `tag` cannot be a corpus tag.
    """
    check_tag(tag)
    started = time.monotonic()
    report = LoadReport(corpus=tag)
    corpus, created = Corpus.objects.get_or_create(tag=tag, defaults={"description": description})
    if description and not created and corpus.description != description:
        corpus.description = description
        corpus.save(update_fields=["description"])
    existing = {doc_id: (sha, title, date) for doc_id, sha, title, date in
                Document.objects.filter(corpus=corpus).values_list(
                    "doc_id", "text_sha256", "title", "date")}

    to_create: list[DocumentRecord] = []
    for rec in read_records(path, report):
        old = existing.get(rec.doc_id)
        if old is None:
            to_create.append(rec)
        elif old[0] != rec.sha256:
            report.errors.append(LineError(
                rec.line, f"document {rec.doc_id} is already loaded with a different text; "
                          "texts are immutable because submissions refer to their offsets — "
                          "load the new version under a new id or a new corpus tag"))
        elif (old[1], old[2]) != (rec.title, rec.date):
            # Title and date carry no offsets, so they may be corrected in place.
            Document.objects.filter(corpus=corpus, doc_id=rec.doc_id).update(
                title=rec.title, date=rec.date)
            report.updated += 1
        else:
            report.unchanged += 1

    workers = workers if workers is not None else min(4, multiprocessing.cpu_count())
    total = len(to_create)
    pool = (multiprocessing.get_context("fork").Pool(workers)
            if workers > 1 and total >= 2 * BATCH_DOCS else None)
    try:
        for batch in _batches(to_create, BATCH_DOCS):
            splits = (pool.map(split_record, batch, chunksize=25) if pool
                      else [split_record(r) for r in batch])
            _insert_batch(corpus, batch, splits, report)
            if progress:
                progress(report, total)
    finally:
        if pool:
            pool.close()
            pool.join()
    report.seconds = time.monotonic() - started
    return report


def _insert_batch(corpus: Corpus, batch: list[DocumentRecord],
                  splits: list[list[tuple[int, int, list[int]]]], report: LoadReport) -> None:
    with transaction.atomic():
        docs = Document.objects.bulk_create([
            Document(corpus=corpus, doc_id=r.doc_id, title=r.title, text=r.text, date=r.date,
                     text_sha256=r.sha256, length=len(r.text))
            for r in batch])
        sentences = [
            Sentence(document=doc, index=i, begin=b, end=e, tokens=toks)
            for doc, split in zip(docs, splits, strict=True)
            for i, (b, e, toks) in enumerate(split)]
        Sentence.objects.bulk_create(sentences, batch_size=2000)
    report.created += len(docs)
    report.sentences += len(sentences)
    report.tokens += sum(len(s.tokens) // 2 for s in sentences)
