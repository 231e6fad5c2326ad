"""Reading a JSON list (plain or gzip) element by element, knowing where each element
starts, so that a problem is reported with its JSON path *and* its line and column.

DocRED files (documents) and DocRED result files (predictions) are one JSON list; a
whole-file `json.load` would say nothing about where a bad element is. Django-free.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"
_WS = " \t\r\n"


@dataclass(frozen=True)
class Where:
    """An element's JSON path and the line and column (1-based) where it starts."""

    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path} (line {self.line}, column {self.column})"


class JsonListError(ValueError):
    """Malformed JSON, or not a list: the message names the place and the fix."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def read_text(fh: IO[bytes], max_bytes: int | None = None) -> str:
    """The UTF-8 text of a plain or gzip file (by its magic bytes); `max_bytes` caps the
    uncompressed size. JsonListError when it is not UTF-8, corrupt or too large."""
    head = fh.read(2)
    fh.seek(0)
    stream: IO[bytes] = gzip.GzipFile(fileobj=fh) if head == GZIP_MAGIC else fh
    try:
        data = stream.read(-1 if max_bytes is None else max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise JsonListError(f"the gzip data is corrupt or truncated ({exc}); re-create it "
                            "with `gzip -c file.json > file.json.gz`") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise JsonListError(f"the file is larger than {max_bytes:,} bytes uncompressed "
                            "(the limit)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise JsonListError(f"byte {exc.start} is not UTF-8; save the file as UTF-8",
                            line, exc.start - data.rfind(b"\n", 0, exc.start)) from None


def _position(text: str, offset: int, lines: list[int]) -> tuple[int, int]:
    """(line, column), 1-based, of a character offset; `lines` is a running cache of
    line-start offsets, extended as offsets grow (elements come in order)."""
    start = lines[-1]
    while True:
        nl = text.find("\n", start, offset)
        if nl < 0:
            break
        start = nl + 1
        lines.append(start)
    return len(lines), offset - lines[-1] + 1


def iter_list(text: str, what: str = "element") -> Iterator[tuple[Where, object]]:
    """Each element of the JSON list in `text`, with where it starts.

    Raises JsonListError with the line and column of the first syntax error, naming
    the element it is in (`[12]`), or when the text is not a JSON list.
    """
    decoder = json.JSONDecoder()
    lines = [0]
    pos = len(text) - len(text.lstrip(_WS))
    if pos >= len(text):
        raise JsonListError("the file is empty: expected a JSON list [...]")
    if text[pos] != "[":
        line, col = _position(text, pos, lines)
        kind = "an object" if text[pos] == "{" else "not a list"
        raise JsonListError(f"expected a JSON list of {what}s ([{{...}}, {{...}}]), but the "
                            f"file starts with {kind}", line, col)
    pos += 1
    index = 0
    while True:
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        if pos < len(text) and text[pos] == "]" and index == 0:
            pos += 1
            break
        line, col = _position(text, pos, lines)
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            eline, ecol = _position(text, exc.pos, lines[:])
            raise JsonListError(f"[{index}]: not valid JSON ({exc.msg}) at line {eline}, "
                                f"column {ecol}", eline, ecol) from None
        yield Where(f"[{index}]", line, col), value
        index += 1
        pos = end
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        if pos < len(text) and text[pos] == "]":
            pos += 1
            break
        eline, ecol = _position(text, pos, lines[:])
        raise JsonListError(f"after [{index - 1}]: expected ',' or ']' at line {eline}, "
                            f"column {ecol}" + ("" if pos < len(text) else
                                                " (the file ends early: truncated?)"),
                            eline, ecol)
    rest = text[pos:].strip(_WS)
    if rest:
        eline, ecol = _position(text, pos + text[pos:].index(rest[0]), lines[:])
        raise JsonListError(f"text after the end of the list at line {eline}, column {ecol}",
                            eline, ecol)
