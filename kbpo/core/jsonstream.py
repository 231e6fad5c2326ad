"""Reading a JSON list element by element from a byte stream, with bounded work and
memory: what an upload of a JSON list (a DocRED result file) goes through.

`jsonlist.iter_list` parses text already in memory; `stream_list` reads the stream in
chunks, decodes UTF-8 incrementally and hands each element to the standard decoder
as soon as the text holds all of it. It holds at most one element (and a chunk)
beyond what it has read, so the caps say what a file can cost:

- `max_bytes`: decompressed bytes read at most (a gzip bomb stops there);
- `max_items`: elements read at most; element `max_items + 1` stops the file (a small
  gzip holds millions of tiny elements, and checking costs per element);
- `max_item_chars`: characters of one element's JSON text at most (a 50 MB string is
  refused once its first `max_item_chars` characters are buffered, not read whole).

A whole-file problem raises `StreamError`, whose `code` names it (`MALFORMED_JSON`,
`FILE_TOO_LARGE`, `GZIP_CORRUPT`, `EMPTY_FILE`, `TOO_MANY_ITEMS`, `ITEM_TOO_LONG`) and
whose message gives the element (`[12]`), the line and the column. An element that
parses but is not strict JSON (a repeated key, NaN or Infinity) is yielded as a
`Flawed` value: the caller reports it as that element's problem. Django-free.
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from .jsonlist import JsonListError, Where

CHUNK = 1 << 16
_WS = re.compile(r"[ \t\r\n]*")
# A decoding error this close to the end of the buffered text may only mean the element
# goes on in the next chunk (a literal, a number or a \u escape cut in two).
_SLACK = 16


class StreamError(JsonListError):
    """A problem with the file as a whole; `code` says which."""

    def __init__(self, code: str, message: str, line: int = 1, column: int = 1,
                 index: int = 0) -> None:
        super().__init__(message, line, column)
        self.code = code
        self.index = index  # elements read before it (its position is index + 1)


@dataclass(frozen=True)
class Flawed:
    """An element that Python's json module reads but that is not strict JSON."""

    problem: str


class _Strict:
    """The decoder of one element, noting what strict JSON forbids."""

    def __init__(self) -> None:
        self.problem = ""
        self.decoder = json.JSONDecoder(object_pairs_hook=self._object,
                                        parse_constant=self._constant)

    def _object(self, pairs: list[tuple[str, object]]) -> dict[str, object]:
        obj = dict(pairs)
        if len(obj) != len(pairs) and not self.problem:
            seen: set[str] = set()
            key = ""
            for key, _ in pairs:
                if key in seen:
                    break
                seen.add(key)
            self.problem = (f"the key {json.dumps(key)[:80]} appears twice in one object; "
                            "JSON readers disagree on which value counts: keep one")
        return obj

    def _constant(self, name: str) -> float:
        if not self.problem:
            self.problem = (f"{name} is not a JSON value (Python's json.dump writes it for "
                            "a float that is not a number): write a number or null")
        return float(name)


class _Text:
    """The decoded text of a byte stream, read on demand, with line and column of any
    offset at or after the last one asked (elements come in order)."""

    def __init__(self, stream: IO[bytes], max_bytes: int, chunk: int) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        self.chunk = chunk
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.buf = ""
        self.eof = False
        self.read_bytes = 0
        self.bad: int | None = None  # the offset of the first byte that is not UTF-8
        self.index = 0  # elements begun, for the messages of errors found while reading
        self.mark, self.line, self.column = 0, 1, 1  # a known position in `buf`

    def where(self, offset: int, commit: bool = True) -> tuple[int, int]:
        """(line, column), 1-based, of `buf[offset]`."""
        newlines = self.buf.count("\n", self.mark, offset)
        if newlines:
            line = self.line + newlines
            column = offset - self.buf.rindex("\n", self.mark, offset)
        else:
            line, column = self.line, self.column + offset - self.mark
        if commit:
            self.mark, self.line, self.column = offset, line, column
        return line, column

    def drop_before(self, offset: int) -> int:
        """Forget the text before `offset` (read and parsed); the new offset of it."""
        if offset < max(self.chunk, len(self.buf) // 2):
            return offset
        self.where(offset)
        self.buf = self.buf[offset:]
        self.mark = 0
        return 0

    def more(self, at_least: int = 0) -> bool:
        """Read about max(chunk, at_least) more bytes; False at the end of the stream.
        Raises the error of a byte that is not UTF-8 once the text before it is used up:
        the message then names the element it is in."""
        if self.bad is not None:
            line, column = self.where(len(self.buf), commit=False)
            raise StreamError("MALFORMED_JSON", f"byte {self.bad:,} (line {line}, column "
                              f"{column}, {self._place()}) is not UTF-8; save the file as UTF-8",
                              line, column, max(self.index, 0))
        if self.eof:
            return False
        want = max(self.chunk, at_least)
        got = 0
        while got < want:
            try:
                data = self.stream.read(min(want - got, 1 << 20))
            except (OSError, EOFError, zlib.error) as exc:
                line, column = self.where(len(self.buf), commit=False)
                raise StreamError("GZIP_CORRUPT", f"the gzip data is corrupt or truncated "
                                  f"near line {line} ({exc}); re-create it with "
                                  "`gzip -c result.json > result.json.gz`", line, column,
                                  max(self.index, 0)) from None
            if not data:
                self.eof = True
                self._decode(b"", final=True)
                return got > 0 or self.bad is not None
            got += len(data)
            self.read_bytes += len(data)
            if self.read_bytes > self.max_bytes:
                line, column = self.where(len(self.buf), commit=False)
                raise StreamError("FILE_TOO_LARGE", f"the file is larger than "
                                  f"{self.max_bytes:,} bytes uncompressed (limit reached "
                                  f"{self._place()}, near line {line})", line, column,
                                  max(self.index, 0))
            self._decode(data)
            if self.bad is not None:
                return True
        return True

    def _place(self) -> str:
        return f"in [{self.index}]" if self.index >= 0 else "after the list"

    def _decode(self, data: bytes, final: bool = False) -> None:
        pending = self.decoder.getstate()[0]
        try:
            self.buf += self.decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            # Keep the text before the bad byte; `more` raises when it is needed.
            whole, offset = pending + data, self.read_bytes - len(data) - len(pending)
            self.buf += whole[:exc.start].decode("utf-8-sig" if offset == 0 else "utf-8")
            self.bad = offset + exc.start

    def skip_ws(self, pos: int) -> int:
        """The offset of the next non-blank character, reading on as needed; len(buf)
        at the end of the stream."""
        while True:
            pos = _WS.match(self.buf, pos).end()  # type: ignore[union-attr]
            if pos < len(self.buf) or not self.more():
                return pos
            pos = self.drop_before(pos)


def stream_list(stream: IO[bytes], *, max_bytes: int, max_items: int, max_item_chars: int,
                what: str = "element", chunk: int = CHUNK
                ) -> Iterator[tuple[Where, object]]:
    """Each element of the JSON list in `stream` (decompressed bytes), with where it
    starts; `Flawed` for an element with a repeated key, NaN or Infinity. Raises
    StreamError for the first whole-file problem (module docstring)."""
    text = _Text(stream, max_bytes, chunk)
    strict = _Strict()
    pos = text.skip_ws(0)
    if pos >= len(text.buf):
        raise StreamError("EMPTY_FILE", "the file is empty: expected a JSON list [...]")
    if text.buf[pos] != "[":
        line, column = text.where(pos)
        kind = "an object {...}" if text.buf[pos] == "{" else "no list"
        raise StreamError("MALFORMED_JSON", f"expected a JSON list of {what}s "
                          f"([{{...}}, {{...}}]), but the file starts with {kind} at line "
                          f"{line}, column {column}; the list itself must be the whole "
                          "file", line, column)
    pos = text.skip_ws(pos + 1)
    index = 0
    if pos < len(text.buf) and text.buf[pos] == "]":
        pos += 1
    else:
        while True:
            text.index = index
            if index >= max_items:
                line, column = text.where(pos)
                raise StreamError("TOO_MANY_ITEMS", f"[{index}] (line {line}, column "
                                  f"{column}): the file has more than {max_items:,} "
                                  f"{what}s, the limit", line, column, index)
            pos = text.drop_before(pos)
            line, column = text.where(pos)
            value, pos = _element(text, strict, pos, index, max_item_chars, what)
            if strict.problem:
                value, strict.problem = Flawed(strict.problem), ""
            yield Where(f"[{index}]", line, column), value
            index += 1
            text.index = index
            pos = text.skip_ws(pos)
            if pos < len(text.buf) and text.buf[pos] == ",":
                pos = text.skip_ws(pos + 1)
                continue
            if pos < len(text.buf) and text.buf[pos] == "]":
                pos += 1
                break
            eline, ecol = text.where(pos, commit=False)
            ended = "" if pos < len(text.buf) else " (the file ends early: truncated?)"
            raise StreamError("MALFORMED_JSON", f"after [{index - 1}]: expected ',' or ']' "
                              f"at line {eline}, column {ecol}{ended}", eline, ecol, index)
    text.index = -1  # past the list
    pos = text.skip_ws(pos)
    if pos < len(text.buf):
        eline, ecol = text.where(pos, commit=False)
        raise StreamError("MALFORMED_JSON", f"text after the end of the list at line "
                          f"{eline}, column {ecol}", eline, ecol, index)


def _element(text: _Text, strict: _Strict, start: int, index: int, max_chars: int,
             what: str) -> tuple[object, int]:
    """The element starting at `start` and the offset after it, reading on until the
    buffered text holds all of it (the buffer at least doubles each time, so an
    element costs a bounded number of decoding attempts)."""
    while True:
        try:
            value, end = strict.decoder.raw_decode(text.buf, start)
        except json.JSONDecodeError as exc:
            cut = exc.msg.startswith("Unterminated string") or \
                exc.pos >= len(text.buf) - _SLACK
            if cut and not text.eof:
                _check_size(text, start, len(text.buf), index, max_chars, what)
                text.more(len(text.buf) - start)
                strict.problem = ""
                continue
            eline, ecol = text.where(exc.pos, commit=False)
            ended = (" (the file ends early: truncated?)" if text.eof and (
                exc.msg.startswith("Unterminated string")
                or not text.buf[exc.pos:].strip()) else "")
            raise StreamError("MALFORMED_JSON", f"[{index}]: not valid JSON ({exc.msg}) at "
                              f"line {eline}, column {ecol}{ended}", eline, ecol,
                              index) from None
        except RecursionError:
            line, column = text.where(start, commit=False)
            raise StreamError("MALFORMED_JSON", f"[{index}] (line {line}, column {column}): "
                              f"nested too deeply (lists or objects inside each other "
                              f"hundreds of levels down); each {what} is a flat object",
                              line, column, index) from None
        if end == len(text.buf) and not text.eof:
            # A number may go on in the next chunk: read on and parse again.
            _check_size(text, start, end, index, max_chars, what)
            if text.more():
                strict.problem = ""
                continue
        _check_size(text, start, end, index, max_chars, what)
        return value, end


def _check_size(text: _Text, start: int, end: int, index: int, max_chars: int,
                what: str) -> None:
    if end - start > max_chars:
        line, column = text.where(start, commit=False)
        raise StreamError("ITEM_TOO_LONG", f"[{index}] (line {line}, column {column}): the "
                          f"{what} is longer than {max_chars:,} characters, the limit "
                          f"(each {what} is one short object: is a key or a string much "
                          "longer than it should be?)", line, column, index)
