"""The streaming JSON list reader (ijson underneath): the same elements as json.loads
whatever the chunk size, each whole-file problem named with its element and place,
and each cap stopping the reading where it is passed."""

from __future__ import annotations

import io
import json

import pytest

from kbpo.core.jsonstream import Flawed, StreamError, stream_list

LIMITS = {"max_bytes": 10**8, "max_items": 10**6, "max_item_bytes": 100_000}


def read(data: bytes, chunk: int = 7, **limits: int) -> list[tuple[str, object]]:
    return list(stream_list(io.BytesIO(data), chunk=chunk, **{**LIMITS, **limits}))


def error(data: bytes, chunk: int = 7, **limits: int) -> StreamError:
    with pytest.raises(StreamError) as info:
        read(data, chunk, **limits)
    return info.value


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 16])
def test_chunks_cut_anywhere_give_the_in_memory_reading(chunk: int) -> None:
    """Elements, numbers, \\u escapes and multi-byte characters cut by a chunk boundary;
    a BOM and blank lines before the list."""
    values = [{"title": "Zürich \u00e9\u4e2d", "n": 12345678901234567890, "x": -1.5e-7,
               "e": "a\\u00e9\\n", "l": [True, False, None, []]}, 3.25, "\u2603", 0, [{}]]
    text = "\ufeff \n\n" + json.dumps(values, indent=2, ensure_ascii=False) + "\n"
    got = read(text.encode(), chunk)
    assert got == [(f"[{k}]", v) for k, v in enumerate(json.loads(text.lstrip("\ufeff")))]
    assert [v for _, v in got] == values
    assert read(b" [ ] ", chunk) == []


@pytest.mark.parametrize("chunk", [7, 1 << 16])
@pytest.mark.parametrize(("data", "code", "message"), [
    (b"", "EMPTY_FILE", "the file is empty"),
    (b" \n\t", "EMPTY_FILE", "the file is empty"),
    (b'{"a": []}', "MALFORMED_JSON", "the file starts with an object {...}; the list "
                                     "itself must be the whole file"),
    (b'"a"', "MALFORMED_JSON", "the file starts with no list"),
    (b"[1, 2,]", "MALFORMED_JSON", "[2]: not valid JSON (unallowed token at this point in "
                                   "JSON text) near byte 7 (line 1, column 8)"),
    (b"[1, 2", "MALFORMED_JSON", "[2]: not valid JSON (premature EOF) at the end of the "
                                 "file (the file ends early: truncated?)"),
    (b"[1] 2", "MALFORMED_JSON", "text after the end of the list"),
    (b"[1,\n 2,\n \xff]", "MALFORMED_JSON", "byte 9 (line 3, column 2, in [2]) is not UTF-8"),
    (b'[1,\n "\xc3\xa9\xe9"]', "MALFORMED_JSON", "byte 8 (line 2, column 5, in [1]) is not "
                                                "UTF-8"),
    (b"[1, [" + b"[" * 3000 + b"]" * 3001, "MALFORMED_JSON", "[1]: nested too deeply"),
    (b'[{"a": 1}, {"x": [NaN]}]', "MALFORMED_JSON", "[1]: NaN or Infinity near byte 1"),
    (b'[{"x": -Infinity}]', "MALFORMED_JSON", "[0]: NaN or Infinity near byte "),
])
def test_whole_file_problems_name_the_place(data: bytes, code: str, message: str,
                                            chunk: int) -> None:
    if chunk == 7 and b"N" in data:
        # The hint needs the constant's bytes in the chunk yajl stops in: with 7-byte
        # chunks only the element is certain.
        message = message.split(":")[0] + ": "
    exc = error(data, chunk)
    assert exc.code == code and message in str(exc), str(exc)


def test_deep_nesting_costs_no_quadratic_memory() -> None:
    """ijson's `items` keeps a prefix string per level (memory quadratic in the depth:
    100,000 levels, 200 kB of JSON, got the process killed); the cap stops it early."""
    exc = error(b"[" * 100_000 + b"]" * 100_000, chunk=1 << 16)
    assert exc.code == "MALFORMED_JSON" and str(exc).startswith("[0]: nested too deeply")


def test_each_cap_stops_where_it_is_passed() -> None:
    assert [v for _, v in read(b"[1, 2, 3]", max_items=3)] == [1, 2, 3]
    exc = error(b"[1, 2, 3, 4]", max_items=3)
    assert (exc.code, exc.index) == ("TOO_MANY_ITEMS", 3)
    exc = error(b"[1, 2, 3]" + b" " * 100, max_bytes=50)
    assert exc.code == "FILE_TOO_LARGE" and "larger than 50 bytes" in str(exc)


@pytest.mark.parametrize("chunk", [7, 64, 1 << 16])
def test_the_element_cap_holds_within_a_chunk(chunk: int) -> None:
    """ijson does not say where an element starts: the cap is checked at each read, on
    the bytes read since the last complete element. An element at the cap passes; one
    more than two chunks past it never does, and is refused before it is read whole."""
    fits = b'"' + b"x" * 98 + b'"'
    assert read(b"[1, " + fits + b", " + fits + b"]", chunk, max_item_bytes=100)[2] == \
        ("[2]", "x" * 98)
    exc = error(b'[1, "' + b"x" * (100 + 2 * chunk) + b'"]', chunk, max_item_bytes=100)
    assert (exc.code, exc.index) == ("ITEM_TOO_LONG", 1)
    assert str(exc).startswith("[1]: the element is longer than 100 bytes, the limit")

    class Endless:
        """A string that never ends: the reader must stop, not read on."""

        read_bytes = 0

        def read(self, size: int) -> bytes:
            self.read_bytes += size
            return (b'["' if self.read_bytes == size else b"").ljust(size, b"x")

    exc = error(b"[1," + b" " * (100 + 3 * chunk) + b"2]", chunk, max_item_bytes=100)
    assert str(exc) == "[1]: more than 100 bytes of blanks (spaces, newlines) and no end " \
                       "of the element, the limit of one: remove the run of blanks"

    stream = Endless()
    with pytest.raises(StreamError, match="longer than 100,000 bytes"):
        list(stream_list(stream, chunk=chunk, **LIMITS))  # type: ignore[arg-type]
    assert stream.read_bytes <= 100_000 + 2 * chunk


def test_a_repeated_key_is_a_flawed_element() -> None:
    (_, dup), (_, fine), (_, inner) = read(b'[{"a": {"b": 1, "b": 2}}, {"a": 1}, '
                                           b'[{"c": 1, "c": 1}]]')
    assert isinstance(dup, Flawed) and 'the key "b" appears twice' in dup.problem
    assert fine == {"a": 1}
    assert isinstance(inner, Flawed) and 'the key "c"' in inner.problem
