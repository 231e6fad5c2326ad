"""Reading a KB file into batches of split lines (pass 1 of the ingestor), spooling its
relation lines to a temporary file that pass 2 reads in batches."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import IO

from .ingest_nodes import BATCH_CHARS, BATCH_LINES
from .kbformat import (
    IGNORED_KINDS,
    MENTION_KINDS,
    NODE_MATCH,
    NODE_MAX_CHARS,
    CorruptFile,
    FileTooLarge,
    SyntaxProblem,
    TooManyLines,
    clean_run_id,
    clip,
    decode_line,
    iter_lines,
)

UTF8_BOM = b"\xef\xbb\xbf"
ENTITY_KINDS = frozenset({"type", "link"}) | MENTION_KINDS | IGNORED_KINDS

# One item per read line: (number, columns, None), or (number, None, (code, message))
# for a line-level problem.
Item = tuple[int, list[str] | None, tuple[str, str] | None]


def trim_empty(cols: list[str]) -> None:
    """Drop empty trailing columns past the third: many writers end every line with a
    tab (or put one before an omitted confidence), which is no extra column. The first
    three stay, so a line missing one is still named by its own rule (and an empty link
    `:E1<TAB>link<TAB>` is still read as no link)."""
    while len(cols) > 3 and not cols[-1]:
        cols.pop()


def _malformed(cols: list[str]) -> str:
    """Why a split line is not a KB line (too few columns, or no usable node)."""
    if len(cols) < 3:
        return f"found {len(cols)} tab-separated column(s), expected 3 to 5"
    if not NODE_MATCH(cols[0]):
        return f"the first column {clip(cols[0])} is not an entity node like :E1"
    return (f"the entity node {clip(cols[0])} is {len(cols[0]):,} characters long; "
            f"nodes are at most {NODE_MAX_CHARS}")


class LineBatches:
    """The lines of one file, split into columns and handed out in batches. `run_id`
    is the file's first line once read; `lines` the last line number read when the
    latest batch was handed out (or the reading stopped)."""

    def __init__(self, drop_lines: frozenset[int], max_bytes: int, max_line: int,
                 run_id: str = "", max_lines: int | None = None) -> None:
        self.drop_lines = drop_lines
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.max_line = max_line
        self.run_id = run_id
        self.lines = 0

    def batches(self, raw: IO[bytes], spool: IO[bytes]) -> Iterator[list[Item]]:
        """Split KB lines into columns, in batches of bounded size (lines, and
        characters of the lines split); line-level problems are items too (recorded
        in file order with the rest of the batch). Relation lines also go to `spool`
        as read, for pass 2 (`spooled_batches`). A file-level error (too large,
        corrupt) is raised after the lines before it are handed out. One loop over
        locals: it runs for every line."""
        drop_lines, node_match, strip = self.drop_lines, NODE_MATCH, str.strip
        entity_kinds, write = ENTITY_KINDS, spool.write
        max_line = self.max_line
        batch: list[Item] = []
        chars = 0  # characters of the lines split into the current batch
        number = 0
        try:
            for number, data in iter_lines(raw, self.max_bytes, max_line, self.max_lines):
                if number in drop_lines:
                    continue
                if data is None:
                    batch.append((number, None, (
                        "LINE_TOO_LONG", f"the line is longer than {max_line:,} bytes")))
                else:
                    if number == 1 and data.startswith(UTF8_BOM):
                        # Windows editors start UTF-8 files with a byte order mark: it
                        # is no part of the run id, nor of a KB line in its place.
                        data = data[len(UTF8_BOM):]
                    try:
                        line = data.decode("utf-8")
                        if "\x00" in line:
                            raise ValueError
                    except ValueError:  # UnicodeDecodeError too: decode_line words it
                        try:
                            decode_line(data)
                        except SyntaxProblem as exc:
                            batch.append((number, None, (exc.code, exc.message)))
                    else:
                        if number == 1:
                            stripped = line.strip()
                            looks_like_kb = stripped.startswith(":") and "\t" in stripped
                            if stripped and not looks_like_kb:
                                self.run_id = clean_run_id(stripped)
                                continue
                            batch.append((1, None, (
                                "MISSING_RUN_ID", "the first line must be the run id, "
                                f"found {clip(stripped) if stripped else 'an empty line'}")))
                            if len(batch) >= BATCH_LINES:  # (no characters counted yet)
                                self.lines = number
                                yield batch
                                batch = []
                            if not looks_like_kb:
                                continue
                        if not line or line.isspace():
                            continue
                        chars += len(line)
                        cols = list(map(strip, line.split("\t")))
                        if not cols[-1]:
                            trim_empty(cols)
                        if (len(cols) < 3 or not node_match(cols[0])
                                or len(cols[0]) > NODE_MAX_CHARS):
                            batch.append((number, None, ("MALFORMED_LINE", _malformed(cols))))
                        else:
                            batch.append((number, cols, None))
                            if cols[1] not in entity_kinds:
                                write(b"%d\t%s\n" % (number, data))
                if len(batch) >= BATCH_LINES or chars >= BATCH_CHARS:
                    self.lines = number
                    yield batch
                    batch, chars = [], 0
        except (FileTooLarge, TooManyLines, CorruptFile):
            self.lines = number
            if batch:
                yield batch
            raise
        self.lines = number
        if batch:
            yield batch


def spooled_batches(spool: IO[bytes]) -> Iterator[list[tuple[int, list[str]]]]:
    """Pass 2's batches: the relation lines `LineBatches` spooled, as (number, columns),
    split and batched by the same rules (so the same batches as re-reading the file
    and skipping its other lines), without reading or decompressing the file again."""
    spool.seek(0)
    strip = str.strip
    batch: list[tuple[int, list[str]]] = []
    chars = 0
    for raw in spool:
        number, _, data = raw.partition(b"\t")
        line = data[:-1].decode("utf-8")  # (checked when spooled)
        chars += len(line)
        cols = list(map(strip, line.split("\t")))
        if not cols[-1]:
            trim_empty(cols)
        batch.append((int(number), cols))
        if len(batch) >= BATCH_LINES or chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


# Collect cycles every this many new container objects while ingesting, not every 700.
GC_THRESHOLD = 200_000


@contextlib.contextmanager
def rare_collections() -> Iterator[None]:
    """Ingestion allocates a few lists per line and holds a batch of them, which keeps
    triggering the cyclic collector over everything the process has loaded: about a
    third of the ingestor's CPU time. Freeze what exists and collect rarely; the lines'
    objects are freed by reference counting (they form no cycles), so memory stays
    bounded by the batch as before."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
