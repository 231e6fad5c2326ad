"""Reading a JSON list element by element from a byte stream with ijson (yajl), with
bounded work and memory: what an upload of a JSON list (a DocRED result file) goes
through.

ijson's C parser reads the stream in chunks and hands out its events; the elements of
the top-level list are built from them here, one at a time. The file object ijson
reads from (`_Counted`) counts what it hands over, so the caps say what a file can cost:

- `max_bytes`: decompressed bytes read at most (a gzip bomb stops there);
- `max_items`: elements read at most; element `max_items + 1` stops the file (a small
  gzip holds millions of tiny elements, and checking costs per element);
- `max_item_bytes`: bytes of one element at most. ijson does not say where an element
  starts, so this is checked at each read: once more than `max_item_bytes` bytes have
  been read since the last complete element, the element being read is longer (one
  up to two chunks longer can get through). A 50 MB string is refused after
  `max_item_bytes` and a chunk, not read whole;
- nesting: at most `MAX_DEPTH` levels (ijson's own `items` would cost memory quadratic
  in the depth).

A whole-file problem raises `StreamError`, whose `code` names it (`MALFORMED_JSON`,
`FILE_TOO_LARGE`, `GZIP_CORRUPT`, `EMPTY_FILE`, `TOO_MANY_ITEMS`, `ITEM_TOO_LONG`) and
whose message gives the element (`[12]`) and, for a syntax error, the byte, line and
column where the parser stopped. yajl is strict: NaN, Infinity and bytes that are not
UTF-8 are syntax errors of the file. An element with a repeated key is yielded as a
`Flawed` value: the caller reports it as that element's problem. Django-free.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import IO

import ijson

CHUNK = 1 << 16
MAX_DEPTH = 64
_BOM = b"\xef\xbb\xbf"
_BLANK = b" \t\r\n"
_CONSTANT = re.compile(rb"NaN|Inf")


class StreamError(ValueError):
    """A problem with the file as a whole; `code` says which."""

    def __init__(self, code: str, message: str, index: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.index = index  # elements read before it (its position is index + 1)


@dataclass(frozen=True)
class Flawed:
    """An element that parses but that strict JSON forbids (a repeated key)."""

    problem: str


class _Counted:
    """The stream as ijson reads it: bytes and lines counted, the caps applied, gzip
    errors named, a leading BOM left out, the last chunk kept for error positions."""

    def __init__(self, stream: IO[bytes], max_bytes: int, max_item: int, what: str,
                 chunk: int) -> None:
        self.stream = stream
        self.chunk = chunk
        self.max_bytes = max_bytes
        self.max_item = max_item
        self.what = what
        self.pending, self.pending_at = b"", 0  # read by `head`, not yet parsed
        self.offset = 0  # bytes of the file read (the BOM included)
        self.mark = 0  # `offset` when the last element was complete
        self.content = True  # a chunk read since `mark` was not all blanks
        self.index = 0  # the element being read; -1 past the list
        self.last, self.last_at = b"", 0  # the last chunk and its offset
        self.tail = b""  # the end of the chunk before it
        self.lines, self.line_at = 1, 0  # lines before `last`; offset of its line start

    def place(self, prefix: str = "") -> str:
        return f"{prefix}[{self.index}]" if self.index >= 0 else "after the list"

    def _raw(self, size: int) -> bytes:
        try:
            data = self.stream.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise StreamError("GZIP_CORRUPT", f"the gzip data is corrupt or truncated near "
                              f"byte {self.offset:,} ({self.place()}: {exc}); re-create it "
                              "with `gzip -c result.json > result.json.gz`",
                              max(self.index, 0)) from None
        self.offset += len(data)
        if self.offset > self.max_bytes:
            raise StreamError("FILE_TOO_LARGE", f"the file is larger than "
                              f"{self.max_bytes:,} bytes uncompressed (limit reached "
                              f"{self.place('in ')})", max(self.index, 0))
        return data

    def head(self) -> bytes:
        """The first non-blank byte (BOM left out), b"" for a blank file; what was read
        is handed to the parser first."""
        while True:
            data = self._raw(self.chunk)
            ended = not data
            if self.offset == len(data) and data[:1] == b"\xef":
                while len(data) < 3 and (more := self._raw(3 - len(data))):
                    data += more
                if data.startswith(_BOM):
                    data, self.pending_at = data[3:], 3
            text = data.lstrip(_BLANK)
            if text or ended:
                self.pending = data
                return text[:1]
            if (nl := data.rfind(b"\n")) >= 0:  # only blanks so far: counted, not kept
                self.lines += data.count(b"\n")
                self.line_at = self.offset - len(data) + nl + 1
            self.pending_at = self.offset

    def read(self, size: int) -> bytes:
        if not size:  # ijson's first call, to see whether the stream gives bytes
            return b""
        if self.pending:
            data, at, self.pending = self.pending, self.pending_at, b""
        else:
            # No element was complete since `mark`: the one being read holds all the
            # bytes read since.
            if self.offset - self.mark > self.max_item:
                raise StreamError("ITEM_TOO_LONG", f"{self.place()}: the {self.what} is "
                                  f"longer than {self.max_item:,} bytes, the limit (each "
                                  f"{self.what} is one short object: is a key or a string "
                                  "much longer than it should be?)" if self.content else
                                  f"{self.place()}: more than {self.max_item:,} bytes of "
                                  f"blanks (spaces, newlines) and no end of the {self.what}, "
                                  "the limit of one: remove the run of blanks",
                                  max(self.index, 0))
            data = self._raw(size)
            at = self.offset - len(data)
            self.content = self.content or bool(data.strip(_BLANK))
        self.tail = self.last[-16:]
        self.lines += self.last.count(b"\n")
        nl = self.last.rfind(b"\n")
        if nl >= 0:
            self.line_at = self.last_at + nl + 1
        self.last, self.last_at = data, at
        return data

    def where(self, off: int) -> str:
        """Byte, line and column of offset `off` of the last chunk."""
        line = self.lines + self.last.count(b"\n", 0, off)
        nl = self.last.rfind(b"\n", 0, off)
        start = self.last_at + nl + 1 if nl >= 0 else self.line_at
        at = self.last_at + off
        return f"byte {at:,} (line {line}, column {at - start + 1}"

    def syntax(self, exc: Exception) -> StreamError:
        """The StreamError of a yajl error, placed where the parser stopped."""
        raw = exc.args[0] if exc.args else b""
        msg = raw if isinstance(raw, bytes) else str(raw).encode("utf-8", "replace")
        lines = msg.split(b"\n")
        what = lines[0].decode("utf-8", "replace").split(": ", 1)[-1].rstrip(".")
        snippet = lines[1] if len(lines) > 1 else b""
        index = max(self.index, 0)
        if what == "trailing garbage":
            return StreamError("MALFORMED_JSON", "text after the end of the list: the list "
                               "must be the whole file", index)
        if not snippet.strip():
            return StreamError("MALFORMED_JSON", f"{self.place()}: not valid JSON ({what}) "
                               "at the end of the file (the file ends early: truncated?)",
                               index)
        off = _offset(snippet, self.last)
        if off is None:
            return StreamError("MALFORMED_JSON", f"{self.place()}: not valid JSON ({what}) "
                               f"between bytes {self.last_at:,} and {self.offset:,}", index)
        if "UTF8" in what or (what == "invalid char in json text" and
                              _first_bad_utf8(self.last, off) is not None):
            bad = _first_bad_utf8(self.last, off)
            if bad is not None:
                return StreamError("MALFORMED_JSON", f"{self.where(bad)}, in "
                                   f"{self.place()}) is not UTF-8; save the file as UTF-8",
                                   index)
        place = self.where(off)
        if _CONSTANT.search(self.tail + self.last, max(0, off + len(self.tail) - 10),
                            off + len(self.tail) + 4):
            return StreamError("MALFORMED_JSON", f"{self.place()}: NaN or Infinity near "
                               f"{place}) is not a JSON value (Python's json.dump writes it "
                               "for a float that is not a number): write a number or null",
                               index)
        return StreamError("MALFORMED_JSON", f"{self.place()}: not valid JSON ({what}) "
                           f"near {place})", index)


def _offset(snippet: bytes, chunk: bytes) -> int | None:
    """The offset in `chunk` of yajl's error, from the excerpt its message shows: the
    character at column 40 of the excerpt (chunk[offset - 30:offset + 30], newlines as
    spaces, after 10 spaces, or after 40 - offset spaces when offset < 30)."""
    text = chunk.translate(_NEWLINES)
    for off in range(min(30, len(text) + 1)):
        if snippet == b" " * (40 - off) + text[:off + 30]:
            return off
    found = text.find(snippet[10:])
    return None if found < 0 else found + 30


_NEWLINES = bytes.maketrans(b"\r\n", b"  ")


def _first_bad_utf8(chunk: bytes, off: int) -> int | None:
    """The offset of the first byte of `chunk[:off + 4]` that is not UTF-8 (a character
    cut at either end of the chunk is not counted)."""
    start = 0
    while start < min(3, len(chunk)) and 0x80 <= chunk[start] < 0xC0:
        start += 1
    try:
        chunk[start:off + 4].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            return start + exc.start
    return None


def stream_list(stream: IO[bytes], *, max_bytes: int, max_items: int, max_item_bytes: int,
                what: str = "element", chunk: int = CHUNK) -> Iterator[tuple[str, object]]:
    """Each element of the JSON list in `stream` (decompressed bytes) with its path
    (`[12]`); `Flawed` for an element with a repeated key. Raises StreamError for the
    first whole-file problem (module docstring)."""
    counted = _Counted(stream, max_bytes, max_item_bytes, what, chunk)
    first = counted.head()
    if not first:
        raise StreamError("EMPTY_FILE", "the file is empty: expected a JSON list [...]")
    if first != b"[":
        kind = "an object {...}" if first == b"{" else "no list"
        raise StreamError("MALFORMED_JSON", f"expected a JSON list of {what}s "
                          f"([{{...}}, {{...}}]), but the file starts with {kind}; the "
                          "list itself must be the whole file")
    # (use_float would make yajl refuse integers past 64 bits: floats come as Decimal.)
    events = ijson.basic_parse(counted, buf_size=chunk)
    try:
        yield from _elements(events, counted, max_items)
    except ijson.JSONError as exc:
        raise counted.syntax(exc) from None


def _elements(events: Iterator[tuple[str, object]], counted: _Counted, max_items: int
              ) -> Iterator[tuple[str, object]]:
    """The list's elements built from ijson's events, with depth and count capped. The
    container being filled and its key are locals (the hot path); `stack` holds the
    containers around it with their keys."""
    next(events)  # the list's start_array (`head` saw the "[")
    stack: list[tuple[object, str]] = []
    top: dict[str, object] | list[object] | None = None
    key = ""
    flaw = ""
    index = 0
    for event, value in events:
        if event == "map_key":
            assert isinstance(value, str) and isinstance(top, dict)
            if value in top and not flaw:
                flaw = (f"the key {json.dumps(value)[:80]} appears twice in one object; JSON "
                        "readers disagree on which value counts: keep one")
            key = value
            continue
        if event == "start_map" or event == "start_array":
            if len(stack) >= MAX_DEPTH:
                raise StreamError("MALFORMED_JSON", f"[{index}]: nested too deeply (more "
                                  f"than {MAX_DEPTH} lists or objects inside each other); "
                                  f"each {counted.what} is a flat object", index)
            new: dict[str, object] | list[object] = {} if event == "start_map" else []
            if type(top) is dict:
                top[key] = new
            elif top is not None:
                top.append(new)
            stack.append((top, key))
            top = new
            continue
        if event == "end_map" or event == "end_array":
            if top is None:  # the end of the list
                counted.index = -1
                continue
            value = top
            top, key = stack.pop()  # type: ignore[assignment]
            if top is not None:
                continue
        else:
            if type(value) is Decimal:
                value = float(value)
            if type(top) is dict:
                top[key] = value
                continue
            if top is not None:
                top.append(value)
                continue
        if index >= max_items:
            raise StreamError("TOO_MANY_ITEMS", f"[{index}]: the file has more than "
                              f"{max_items:,} {counted.what}s, the limit", index)
        counted.mark, counted.content = counted.offset, False
        yield f"[{index}]", Flawed(flaw) if flaw else value
        flaw = ""
        index += 1
        counted.index = index
