"""The streaming JSON list reader: the same elements and positions as the in-memory
reader whatever the chunk size, and each cap stops the reading where it is passed."""

from __future__ import annotations

import io
import json

import pytest

from kbpo.core.jsonlist import iter_list
from kbpo.core.jsonstream import Flawed, StreamError, stream_list

LIMITS = {"max_bytes": 10**8, "max_items": 10**6, "max_item_chars": 100_000}


def read(data: bytes, chunk: int = 7, **limits: int) -> list[tuple[str, object]]:
    return [(str(w), v) for w, v in stream_list(io.BytesIO(data), chunk=chunk,
                                                 **{**LIMITS, **limits})]


def error(data: bytes, chunk: int = 7, **limits: int) -> StreamError:
    with pytest.raises(StreamError) as info:
        read(data, chunk, **limits)
    return info.value


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 16])
def test_chunks_cut_anywhere_give_the_in_memory_reading(chunk: int) -> None:
    """Elements, numbers, \\u escapes and multi-byte characters cut by a chunk boundary."""
    values = [{"title": "Zürich \u00e9\u4e2d", "n": 12345678901234567890, "x": -1.5e-7,
               "e": "a\\u00e9\\n", "l": [True, False, None, []]}, 3.25, "\u2603", 0, [{}]]
    text = "\ufeff " + json.dumps(values, indent=2, ensure_ascii=False) + "\n"
    got = read(text.encode(), chunk)
    assert got == [(str(w), v) for w, v in iter_list(text.lstrip("\ufeff"))]
    assert [v for _, v in got] == values


@pytest.mark.parametrize(("data", "code", "message"), [
    (b"", "EMPTY_FILE", "the file is empty"),
    (b'{"a": []}', "MALFORMED_JSON", "the file starts with an object {...} at line 1"),
    (b"[1, 2,]", "MALFORMED_JSON", "[2]: not valid JSON (Expecting value) at line 1, "
                                   "column 7"),
    (b"[1, 2", "MALFORMED_JSON", "the file ends early"),
    (b"[1] 2", "MALFORMED_JSON", "text after the end of the list at line 1, column 5"),
    (b"[1,\n 2,\n \xff]", "MALFORMED_JSON", "byte 9 (line 3, column 2, in [2]) is not UTF-8"),
    (b"[1, [" + b"[" * 3000 + b"]" * 3001, "MALFORMED_JSON", "[1] (line 1, column 5): "
                                                             "nested too deeply"),
])
def test_whole_file_problems_name_the_place(data: bytes, code: str, message: str) -> None:
    exc = error(data)
    assert exc.code == code and message in str(exc), str(exc)


def test_each_cap_stops_where_it_is_passed() -> None:
    assert [v for _, v in read(b"[1, 2, 3]", max_items=3)] == [1, 2, 3]
    exc = error(b"[1, 2, 3, 4]", max_items=3)
    assert (exc.code, exc.index) == ("TOO_MANY_ITEMS", 3)
    assert read(b'["' + b"x" * 98 + b'"]', max_item_chars=100) == [("[0] (line 1, column 2)",
                                                                    "x" * 98)]
    exc = error(b'[1, "' + b"x" * 99 + b'"]', max_item_chars=100)
    assert (exc.code, exc.index) == ("ITEM_TOO_LONG", 1)
    exc = error(b"[1, 2, 3]" + b" " * 100, max_bytes=50)
    assert exc.code == "FILE_TOO_LARGE" and "larger than 50 bytes" in str(exc)


def test_what_strict_json_forbids_is_a_flawed_element() -> None:
    (_, dup), (_, nan), (_, fine) = read(b'[{"a": {"b": 1, "b": 2}}, [NaN], {"a": 1}]')
    assert isinstance(dup, Flawed) and 'the key "b" appears twice' in dup.problem
    assert isinstance(nan, Flawed) and nan.problem.startswith("NaN is not a JSON value")
    assert fine == {"a": 1}
