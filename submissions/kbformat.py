"""The TAC KBP Cold Start KB format: streaming reader, line syntax, problem codes.

This module knows the file format but nothing about the database. `ingest.py`
checks the parsed lines against the corpus and the schema.
"""

from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from .gzipstream import GZIP_MAGIC, GzipStream

# Archives we do not read: named at upload, instead of a NOT_UTF8 error on line 1 whose
# hint (iconv) would not help. bzip2 is "BZh", a level digit and its block magic, so a
# run id starting "BZh" is not mistaken for one.
ARCHIVE_MAGIC = re.compile(rb"PK\x03\x04|PK\x05\x06|BZh[1-9]1AY&SY|\xfd7zXZ\x00|"
                           rb"7z\xbc\xaf\x27\x1c|\x28\xb5\x2f\xfd|\x1f\x9d|\x04\x22\x4d\x18|"
                           rb"Rar!\x1a\x07")
ARCHIVE_NAMES = {b"PK": "a zip", b"BZ": "a bzip2", b"\xfd7": "an xz", b"7z": "a 7z",
                 b"\x28\xb5": "a zstd", b"\x1f\x9d": "a Unix compress (.Z)",
                 b"\x04\x22": "an lz4", b"Ra": "a rar"}
# Byte order marks of the encodings that are not UTF-8 but hold the same text: a
# Windows "Unicode" export. Longest first (UTF-32 LE starts with the UTF-16 LE mark).
WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
             (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
ERROR, WARNING = "error", "warning"

# code -> (severity, hint). The hint tells the researcher what to change; the message
# (built where the problem is found) says what is wrong on that line.
CODES: dict[str, tuple[str, str]] = {
    "FILE_TOO_LARGE": (ERROR, "Split the KB or drop low-confidence lines; the limit applies "
                              "to the uncompressed size."),
    "TOO_MANY_LINES": (ERROR, "Split the KB or drop low-confidence lines; the limit counts "
                              "every line, blank ones too."),
    "TOO_MANY_ERRORS": (ERROR, "Fix the errors listed first (often every line has the same "
                               "one: a wrong corpus, a wrong column order) and upload again; "
                               "the counts cover the lines read before the check stopped."),
    "GZIP_CORRUPT": (ERROR, "Re-create the file with `gzip -c kb.tsv > kb.tsv.gz`, or "
                            "upload it uncompressed."),
    "GZIP_TRAILING_BYTES": (WARNING, "The bytes after the end of the gzip data (zero padding, "
                                     "or data that is not a gzip member) were ignored; "
                                     "check that the KB is complete."),
    "UNSUPPORTED_ARCHIVE": (ERROR, "Upload the KB as plain text or gzip (`gzip -c kb.tsv > "
                                   "kb.tsv.gz`); zip, tar, rar, bzip2, xz, 7z, zstd, lz4 "
                                   "and .Z files, and a gzip compressed twice, are not "
                                   "read."),
    "NOT_TEXT": (ERROR, "Upload the KB itself: a tab-separated UTF-8 text file, plain or "
                        "gzipped (see the format page)."),
    "CR_LINE_ENDINGS": (ERROR, "End lines with LF or CRLF, e.g. `tr '\\r' '\\n' < kb.tsv "
                               "> fixed.tsv`."),
    "EMPTY_FILE": (ERROR, "The file must start with a run id line followed by KB lines."),
    "MISSING_RUN_ID": (ERROR, "Put your run id (one word naming the system run) alone on "
                              "the first line."),
    "NOT_UTF8": (ERROR, "Save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)."),
    "LINE_TOO_LONG": (ERROR, "Each line holds one fact; check for missing newlines."),
    "MALFORMED_LINE": (ERROR, "Lines are tab-separated: `:E1<TAB>type<TAB>PER`, "
                              "`:E1<TAB>mention<TAB>\"text\"<TAB>DOC:b-e`, or "
                              "`:E1<TAB>predicate<TAB>:E2<TAB>DOC:b-e<TAB>0.9`."),
    "BAD_PROVENANCE": (ERROR, "Write provenance as DOCID:begin-end with an inclusive end "
                              "offset (begin <= end); separate several with commas."),
    "BAD_CONFIDENCE": (ERROR, "The last column is a confidence in (0, 1], e.g. 0.75."),
    "BAD_LINK": (ERROR, "Write the link as KB:ID, e.g. Wikipedia:Ada_Lovelace, or leave the "
                        "line out."),
    "MENTION_WITHOUT_PROVENANCE": (ERROR, "Add the span as a fourth column: "
                                          "`:E1<TAB>mention<TAB>\"text\"<TAB>DOC:b-e`."),
    "UNKNOWN_DOCUMENT": (ERROR, "Use document ids of the corpus you submitted to; check "
                                "that you picked the right corpus."),
    "OFFSETS_OUT_OF_RANGE": (ERROR, "Offsets are character (not byte) offsets into the "
                                    "document text, end inclusive."),
    "MENTION_TEXT_MISMATCH": (ERROR, "Offsets are Unicode character offsets with an "
                                     "inclusive end; the quoted text must equal the document "
                                     "text at those offsets."),
    "UNKNOWN_ENTITY_TYPE": (ERROR, "Entity types are PER, ORG, GPE, DATE and TITLE."),
    "UNSUPPORTED_ENTITY_TYPE": (WARNING, "FAC and LOC entities are not evaluated; their "
                                         "lines and relations are skipped."),
    "UNSUPPORTED_NODE_TYPE": (WARNING, "Events and other nodes that are not entities (a "
                                       "dotted type such as CONFLICT.ATTACK, or an ontology "
                                       "URI) are not evaluated; their lines are skipped."),
    "ENTITY_WITHOUT_TYPE": (ERROR, "Add a line `:E1<TAB>type<TAB>PER` for every entity."),
    "DUPLICATE_TYPE_LINE": (WARNING, "State each entity's type once."),
    "INCONSISTENT_ENTITY_TYPE": (ERROR, "Give every entity one type, and give a span the "
                                        "same type in every entity and filler that uses it."),
    "UNKNOWN_ENTITY": (ERROR, "Declare the entity (type and mentions) somewhere in the file."),
    "UNKNOWN_PREDICATE": (ERROR, "See the list of accepted predicates in the documentation "
                                 "(inverse and city/state/country forms are accepted)."),
    "UNSUPPORTED_PREDICATE": (WARNING, "This TAC slot is not evaluated; the line is skipped."),
    "SENTIMENT_NOT_EVALUATED": (WARNING, "Sentiment assertions (likes, dislikes and their "
                                         "inverses) are not evaluated; the line is skipped. "
                                         "Nothing to fix."),
    "ARGUMENT_TYPES_MISMATCH": (ERROR, "Check the predicate's subject and object types in "
                                       "the schema table, and the entities' type lines."),
    "SELF_RELATION": (ERROR, "A relation needs two different entities and two different "
                             "spans."),
    "PROVENANCE_CROSSES_SENTENCES": (ERROR, "Relations are judged within one sentence: give "
                                            "provenance inside the sentence expressing it."),
    "SUBJECT_NOT_IN_PROVENANCE": (ERROR, "The provenance must contain exactly one mention of "
                                         "the subject entity; add that mention to the entity."),
    "OBJECT_NOT_IN_PROVENANCE": (ERROR, "The provenance must contain exactly one mention of "
                                        "the object entity; add that mention to the entity."),
    "AMBIGUOUS_MENTION": (WARNING, "An argument has several mentions inside the provenance; "
                                   "the closest subject/object pair was used. Narrow the "
                                   "provenance to choose the mentions yourself."),
    "CONFLICTING_RELATIONS": (ERROR, "Keep only the relation your system is most confident "
                                     "about for this pair of mentions."),
    "DROPPED_WITH_ENTITY": (ERROR, "Only with drop-invalid: the line belongs to, or relates, "
                                   "an entity whose type line was dropped or missing."),
    "NO_RELATIONS": (ERROR, "A KB is evaluated on its relations: include at least one valid "
                            "relation line."),
    "TOO_MANY_INVALID_LINES": (ERROR, "Drop-invalid is for a few bad lines among many: fix "
                                      "the file, and check that its document ids are those "
                                      "of the corpus you chose."),
    # DocRED result files (docs/researchers/docred.md): "line" is the prediction's position.
    "TOO_MANY_PREDICTIONS": (ERROR, "Split the file or drop low-confidence predictions."),
    "PREDICTION_TOO_LONG": (ERROR, "Each prediction is one short object; check its strings."),
    "MALFORMED_JSON": (ERROR, "A DocRED result file is one JSON list of objects "
                              "{\"title\", \"h_idx\", \"t_idx\", \"r\", \"evidence\"?}; "
                              "check it with `python -m json.tool file.json`."),
    "MALFORMED_PREDICTION": (ERROR, "Each prediction is {\"title\": string, \"h_idx\": int, "
                                    "\"t_idx\": int, \"r\": \"P17\", \"evidence\": [int, "
                                    "...] (optional)}."),
    "UNKNOWN_TITLE": (ERROR, "Use the documents' titles exactly as in the corpus file; "
                             "check that you picked the right corpus."),
    "ENTITY_INDEX_OUT_OF_RANGE": (ERROR, "h_idx and t_idx index the document's vertexSet, "
                                         "from 0, in the corpus file's order."),
    "UNKNOWN_RELATION": (ERROR, "r is a relation id of the corpus's schema (DocRED: P17, "
                                "P131, ...; see /submissions/format/)."),
    "BAD_EVIDENCE": (ERROR, "evidence lists sentence indices of the document, from 0."),
    "DUPLICATE_PREDICTION": (WARNING, "The same (title, h_idx, t_idx, r) was given again; "
                                      "the predictions were merged (their evidence joined)."),
}


@dataclass(slots=True)
class Problem:
    line: int
    code: str
    severity: str
    message: str
    hint: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class Report:
    """Problems found in one file: the first `cap` stored, every one counted."""

    def __init__(self, cap: int = 1000, max_error_lines: int | None = None) -> None:
        self.cap = cap
        self.problems: list[Problem] = []
        self.counts: Counter[str] = Counter()
        self.errors = 0
        self.warnings = 0
        # line -> (code, message) of its first error: what drop-invalid drops. Kept for
        # at most `max_error_lines` lines (then `error_lines_full`): a file of millions
        # of bad lines must not hold them all in memory.
        self.error_lines: dict[int, tuple[str, str]] = {}
        self.max_error_lines = max_error_lines
        self.error_lines_full = False

    def add(self, line: int, code: str, message: str, hint: str | None = None,
            always: bool = False) -> None:
        """Record a problem; `always` stores it even past the cap (fatal problems)."""
        severity, default_hint = CODES[code]
        self.counts[code] += 1
        if severity == ERROR:
            self.errors += 1
            if self.max_error_lines is None or len(self.error_lines) < self.max_error_lines:
                self.error_lines.setdefault(line, (code, message))
            elif line not in self.error_lines:
                self.error_lines_full = True
        else:
            self.warnings += 1
        if always or len(self.problems) < self.cap:
            self.problems.append(Problem(line, code, severity, message, hint or default_hint))

    def as_list(self) -> list[dict[str, object]]:
        return [p.as_dict() for p in sorted(self.problems, key=lambda p: (p.line, p.code))]

    @property
    def truncated(self) -> bool:
        return self.errors + self.warnings > len(self.problems)


class FileTooLarge(Exception):
    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"over {limit} bytes uncompressed at line {line}")
        self.line = line
        self.limit = limit


class TooManyLines(Exception):
    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"over {limit} lines")
        self.line = line
        self.limit = limit


class CorruptFile(Exception):
    def __init__(self, line: int, detail: str) -> None:
        super().__init__(detail)
        self.line = line
        self.detail = detail


def open_stream(raw: IO[bytes]) -> tuple[IO[bytes], bool]:
    """Wrap a binary file in a gzip reader when it starts with the gzip magic bytes (a
    `GzipStream`: bytes after the last member are ignored and counted, not an error)."""
    head = raw.read(2)
    raw.seek(0)
    if head == GZIP_MAGIC:
        return GzipStream(raw), True
    return raw, False


def iter_lines(stream: IO[bytes], max_bytes: int, max_line: int,
               max_lines: int | None = None) -> Iterator[tuple[int, bytes | None]]:
    """Yield `(line number, raw line without EOL)`; the line is None if over `max_line`.

    Reads at most `max_line + 1` bytes at a time and counts every decompressed byte,
    raising FileTooLarge as soon as the total passes `max_bytes`: a gzip bomb costs
    at most the cap in reading and one line's worth of memory. Checking costs per line,
    not per byte (a small gzip can hold tens of millions of empty lines), so line
    `max_lines + 1` raises TooManyLines.
    """
    last = max_lines if max_lines is not None else math.inf
    total = 0
    number = 0
    try:
        while True:
            chunk = stream.readline(max_line + 1)
            if not chunk:
                return
            number += 1
            total += len(chunk)
            if total > max_bytes:
                raise FileTooLarge(number, max_bytes)
            if number > last:
                raise TooManyLines(number, int(last))
            if len(chunk) > max_line and not chunk.endswith(b"\n"):
                # Skip the rest of an over-long line without holding it.
                while chunk and not chunk.endswith(b"\n"):
                    chunk = stream.readline(max_line + 1)
                    total += len(chunk)
                    if total > max_bytes:
                        raise FileTooLarge(number, max_bytes)
                yield number, None
                continue
            yield number, chunk.rstrip(b"\r\n")
    except (EOFError, OSError, zlib.error) as exc:
        # Truncated or corrupt gzip data (BadGzipFile is an OSError).
        raise CorruptFile(number + 1, str(exc) or type(exc).__name__) from exc


# ---- line syntax -------------------------------------------------------------------

# TAC entity types outside the reduced schema: skipped with a warning, not rejected.
SKIPPED_TYPES = frozenset({"FAC", "LOC"})


def is_event_type(value: str) -> bool:
    """An event's (or another non-entity node's) type: a dotted TAC 2017 event type
    (CONFLICT.ATTACK, Life.Die) or an ontology URI (AIDA's …/LDCOntology#Life.Die…);
    no entity type has a dot."""
    return "." in value or "#" in value or "/" in value


_NODE = re.compile(r"^:[^\s]+$")
# The longest entity node stored (`SubmissionEntity.node`); longer ones are refused by line.
NODE_MAX_CHARS = 200
NODE_MATCH = _NODE.match  # `is_node` without the call and bool(): a line hot path
# [0-9], not \d: \d also matches other scripts' digits ("2０7", "١"), which int() reads.
_SPAN = re.compile(r"^([^\s:,]+):([0-9]{1,10})-([0-9]{1,10})$")
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$").match
# A link names an entry of a knowledge base: `KB:ID`, e.g. Wikipedia:Ada_Lovelace.
_LINK = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*:\S+$").match
LINK_MAX_CHARS = 500
_SPAN_MATCH = _SPAN.match
MENTION_KINDS = frozenset({"mention", "canonical_mention", "nominal_mention",
                           "pronominal_mention"})
# TAC line kinds we accept but do not use (normalized date strings carry no offsets).
IGNORED_KINDS = frozenset({"normalized_mention"})

RawSpan = tuple[str, int, int]  # (doc id, begin, end) half-open


class SyntaxProblem(Exception):
    """A line that cannot be parsed; carries the problem code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_node(value: str) -> bool:
    return bool(_NODE.match(value))


def parse_string(value: str) -> str:
    """A double-quoted TAC string with backslash escapes."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        raise SyntaxProblem("MALFORMED_LINE",
                            f"expected text in double quotes, got {_clip(value)}")
    inner = value[1:-1]
    return inner.replace('\\"', '"').replace("\\\\", "\\") if "\\" in inner else inner


def _foreign_digit(value: str) -> str:
    """A note naming the first digit of another script in `value`, or ""."""
    for c in value:
        if c.isdecimal() and not c.isascii():
            name = unicodedata.name(c, "a digit")
            return (f": {c!r} (U+{ord(c):04X} {name}) is not an ASCII digit; write "
                    "numbers with the digits 0-9")
    return ""


def parse_provenance(value: str, column: int = 4) -> list[RawSpan]:
    """`DOC:b-e[,DOC:b-e...]` with inclusive ends -> half-open spans."""
    if "," not in value:  # the usual single span, without the loop
        m = _SPAN_MATCH(value.strip())
        if m is not None:
            doc, b, e = m.groups()
            begin, end = int(b), int(e)
            if end >= begin:
                return [(doc, begin, end + 1)]
    spans: list[RawSpan] = []
    for part in value.split(","):
        m = _SPAN_MATCH(part.strip())
        if m is None:
            raise SyntaxProblem("BAD_PROVENANCE", f"provenance {_clip(part)} (column "
                                f"{column}) " + (_foreign_digit(part)[2:] or
                                                 "is not DOCID:begin-end"))
        doc, b, e = m.groups()
        begin, end = int(b), int(e)
        if end < begin:
            raise SyntaxProblem("BAD_PROVENANCE",
                                f"provenance {_clip(part)} ends before it begins")
        spans.append((doc, begin, end + 1))
    return spans


def parse_confidence(value: str, column: int = 5) -> float:
    if _NUMBER(value) is None:
        # A writer in a German or French locale prints 0.9 as "0,9".
        dotted = value.replace(",", ".", 1) if value.count(",") == 1 else ""
        foreign = _foreign_digit(value)
        if foreign:
            why = foreign[2:]
        elif _NUMBER(dotted) is not None:
            why = f"has a decimal comma; write {dotted}"
        else:
            why = "is not a number"
        raise SyntaxProblem("BAD_CONFIDENCE",
                            f"confidence {_clip(value)} (column {column}) {why}")
    conf = float(value)
    if not 0.0 < conf <= 1.0:
        raise SyntaxProblem("BAD_CONFIDENCE", f"confidence {_clip(value)} is not in (0, 1]")
    return conf


def check_link(value: str) -> str:
    """The link column (3) of a link line, if it has the documented form `KB:ID`."""
    if len(value) > LINK_MAX_CHARS:
        raise SyntaxProblem("BAD_LINK", f"the link (column 3) is longer than "
                                        f"{LINK_MAX_CHARS} characters")
    if _LINK(value) is None or not value.isprintable():
        raise SyntaxProblem("BAD_LINK", f"link {_clip(value)} (column 3) is not KB:ID, "
                                        "e.g. Wikipedia:Ada_Lovelace")
    return value


def decode_line(raw: bytes) -> str:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SyntaxProblem(
            "NOT_UTF8", f"byte {exc.start + 1} of the line (0x{raw[exc.start]:02x}) is not "
                        "valid UTF-8") from None
    if "\x00" in line:
        # Databases cannot store NUL; it never belongs in a KB line.
        raise SyntaxProblem("MALFORMED_LINE", "the line contains a NUL character")
    return line


def _clip(value: str, n: int = 60) -> str:
    value = value if len(value) <= n else value[:n] + "…"
    return repr(value)


def clip(value: str, n: int = 60) -> str:
    """A short, quoted rendering of user text for messages."""
    return _clip(value, n)


@dataclass
class UploadCheck:
    """What a quick streaming pass over an upload found (before it is stored)."""

    compressed: bool
    uncompressed_bytes: int
    run_id: str
    code: str | None = None
    message: str = ""


# A carriage return followed by text: a line ended by CR alone. (CR CR LF, from a CRLF
# file converted twice, is one line end, as reading takes it.)
_CR_BEFORE_TEXT = re.compile(rb"\r[^\r\n]")


# Files people upload by mistake (a screenshot, a PDF of the paper, a binary), by their
# magic bytes: named, instead of "classic Mac line endings" (a PNG holds "\r\n\x1a") or
# hundreds of NOT_UTF8 lines telling them to run iconv.
BINARY_MAGIC = ((b"\x89PNG\r\n\x1a\n", "PNG image"), (b"\xff\xd8\xff", "JPEG image"),
                (b"GIF87a", "GIF image"), (b"GIF89a", "GIF image"), (b"%PDF-", "PDF"),
                (b"II*\x00", "TIFF image"), (b"MM\x00*", "TIFF image"),
                (b"\x7fELF", "ELF executable"), (b"\x00asm", "WebAssembly"))
# Bytes no text file holds: NUL and the C0 controls other than tab, LF, FF, CR and ESC.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")


def _binary_kind(head: bytes) -> str | None:
    """"PNG"-like names for known binary formats, "binary" for other data with control
    bytes in its first bytes, None for what may be text."""
    for magic, name in BINARY_MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP image"
    if len(_CONTROL.findall(head[:512])) > 4:  # a stray control byte is a line's problem
        return "binary"
    return None


def _archive_kind(head: bytes) -> str:
    """The name of the archive format whose magic bytes start `head` (ARCHIVE_MAGIC)."""
    return next(v for k, v in ARCHIVE_NAMES.items() if head.startswith(k))


def inspect_upload(fh: IO[bytes], max_bytes: int, chunk: int = 1 << 20) -> UploadCheck:
    """Stream through an upload once: size cap (uncompressed), gzip integrity, run id.

    Reads at most `max_bytes + chunk` decompressed bytes and holds one chunk at a
    time, so a gzip bomb is refused after reading about the cap. Rewinds `fh`.
    """
    fh.seek(0)
    head = fh.read(10)
    fh.seek(0)
    if ARCHIVE_MAGIC.match(head):
        return UploadCheck(False, 0, "", "UNSUPPORTED_ARCHIVE",
                           f"This is {_archive_kind(head)} file. "
                           + CODES["UNSUPPORTED_ARCHIVE"][1])
    stream, compressed = open_stream(fh)
    total = 0
    first = b""
    newlines = lone_crs = 0  # LF, and CR before text: each ends a line for someone
    ended_cr = False
    try:
        while True:
            data = stream.read(chunk)
            if not data:
                break
            if len(first) < 512 and b"\n" not in first[:400]:
                first += data[:512]
            newlines += data.count(b"\n")
            lone_crs += len(_CR_BEFORE_TEXT.findall(data))
            if ended_cr and data[:1] not in (b"\r", b"\n"):  # split between two chunks
                lone_crs += 1
            ended_cr = data.endswith(b"\r")
            total += len(data)
            if total > max_bytes:
                return UploadCheck(compressed, total, "", "FILE_TOO_LARGE",
                                   f"The file is larger than {max_bytes:,} bytes uncompressed "
                                   "(the limit). " + CODES["FILE_TOO_LARGE"][1])
    except (EOFError, OSError, zlib.error) as exc:
        return UploadCheck(compressed, total, "", "GZIP_CORRUPT",
                           f"The gzip data is corrupt or truncated ({exc}). "
                           + CODES["GZIP_CORRUPT"][1])
    finally:
        fh.seek(0)
    if total == 0:
        return UploadCheck(compressed, 0, "", "EMPTY_FILE",
                           "The file is empty. " + CODES["EMPTY_FILE"][1])
    inner = _inner_archive(first, compressed)
    if inner:
        return UploadCheck(compressed, total, "", "UNSUPPORTED_ARCHIVE",
                           f"This is {inner}. " + CODES["UNSUPPORTED_ARCHIVE"][1])
    wide = _wide_encoding(first)
    if wide:
        return UploadCheck(compressed, total, "", "NOT_UTF8",
                           f"The file is {wide} encoded, not UTF-8. Save it as UTF-8, e.g. "
                           f"`iconv -f {wide.lower()} -t utf-8 kb.tsv > kb-utf8.tsv`.")
    binary = _binary_kind(first)
    if binary:
        return UploadCheck(compressed, total, "", "NOT_TEXT",
                           f"Not a text KB (looks like {binary} data). "
                           + CODES["NOT_TEXT"][1])
    line1 = first.split(b"\n", 1)[0]
    # CR alone ends the lines (of the first, or of most: a run id line written apart
    # from a Mac-converted body): they would read as one line.
    if b"\r" in line1.rstrip(b"\r") or lone_crs > newlines:
        return UploadCheck(compressed, total, "", "CR_LINE_ENDINGS",
                           "Lines end with a carriage return alone (classic Mac style), so "
                           "they would read as one long line. "
                           + CODES["CR_LINE_ENDINGS"][1])
    return UploadCheck(compressed, total, clean_run_id(line1))


def _inner_archive(head: bytes, compressed: bool) -> str | None:
    """What archive the (decompressed) content is, if any: a tar file (`ustar` at
    offset 257 after a NUL-padded file name, plain or gzipped), or an archive or a
    second gzip inside a gzip."""
    if head[257:262] == b"ustar" and b"\x00" in head[:257]:  # (NUL-padded name field)
        return "a tar archive" + (" (gzipped)" if compressed else "")
    if not compressed:
        return None  # the raw magic bytes were checked before reading
    if head.startswith(GZIP_MAGIC):
        return "a gzip file compressed a second time"
    if ARCHIVE_MAGIC.match(head):
        return f"{_archive_kind(head)} file inside a gzip file"
    return None


def _wide_encoding(head: bytes) -> str | None:
    """"UTF-16"/"UTF-32" when the content starts with their byte order mark, or is
    either without one: ASCII text has three NUL bytes of four in UTF-32, every other
    byte NUL in UTF-16 (UTF-8 text has none)."""
    for bom, name in WIDE_BOMS:
        if head.startswith(bom):
            return name
    sample = head[:64]
    if len(sample) < 8:
        return None
    if all(not any(sample[i::4]) for i in (0, 1, 2)) or not any(sample[1::4] + sample[2::4]
                                                                 + sample[3::4]):
        return "UTF-32"
    if not any(sample[1::2]) or not any(sample[0::2]):
        return "UTF-16"
    return None


def clean_run_id(raw: bytes | str) -> str:
    """A printable run id (control characters such as NUL cannot be stored)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return "".join(c for c in text if c.isprintable()).strip()[:200]


def same_text(actual: str, text: str) -> bool:
    """Equal up to runs of whitespace and Unicode normalization: a decomposed "é"
    (NFD, as macOS and some NLP tools write it) is the same text as the composed one."""
    a, t = " ".join(actual.split()), " ".join(text.split())
    return a == t or unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", t)


# ---- what an ingestion ends with ---------------------------------------------

# Problems about the file as a whole: dropping lines cannot cure them.
FILE_CODES = frozenset({"FILE_TOO_LARGE", "GZIP_CORRUPT", "EMPTY_FILE", "MISSING_RUN_ID",
                        "NO_RELATIONS", "TOO_MANY_INVALID_LINES", "TOO_MANY_LINES",
                        "MALFORMED_JSON", "TOO_MANY_PREDICTIONS", "PREDICTION_TOO_LONG"})


class Rejected(Exception):
    """The file has errors; carries the report (the caller rolls back)."""

    def __init__(self, report: Report, stats: dict[str, Any], run_id: str,
                 bad_nodes: frozenset[str] = frozenset()) -> None:
        super().__init__(f"{report.errors} errors")
        self.report = report
        self.stats = stats
        self.run_id = run_id
        self.bad_nodes = bad_nodes  # entities whose type is missing or invalid

    @property
    def curable(self) -> bool:
        """Whether dropping the offending lines could make the file acceptable."""
        return not FILE_CODES & set(self.report.counts)


@dataclass
class Outcome:
    report: Report
    stats: dict[str, Any]
    run_id: str
    n_entities: int
    n_mentions: int
    n_relations: int
    # line -> (code, message) of lines dropped with an entity (drop mode only)
    cascaded: dict[int, tuple[str, str]] = field(default_factory=dict)
