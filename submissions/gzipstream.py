"""A streaming gzip reader that, as GNU gunzip does, ignores bytes after the last member.

`gzip.GzipFile` refuses a file whose members are followed by anything but zero bytes
("Not a gzipped file"), and skips zero padding without saying so. Tools and transfer
layers pad files (tape blocks, some uploaders): `GzipMembers` reads every member, zero
padding between members as Python does, and stops at the first bytes that are neither
padding nor a member, counting every byte it ignored so the caller can say so. A
truncated or corrupt member (the first or a later one) still raises, as GzipFile does:
EOFError for a stream that ends early, zlib.error for bad data.
"""

from __future__ import annotations

import io
import zlib
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"
# Compressed bytes read at a time (as GzipFile reads: a gzip bomb is refused after reading
# little of it), and the decompressed buffer (fewer, larger reads: readline is faster).
READ = 1 << 13
BUFFER = 1 << 17
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib parses and checks the gzip header and trailer


class GzipMembers(io.RawIOBase):
    """The decompressed bytes of every gzip member of `raw` (which starts with one).

    Memory stays bounded: at most `READ` compressed bytes are held, and a read
    decompresses no more than it was asked for (a gzip bomb costs what is read).
    After the end, `ignored` is the number of bytes that were not gzip data (zero
    padding and trailing bytes) and `garbage` whether any of them was not zero."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._inflate = zlib.decompressobj(_GZIP_WBITS)
        self._pending = b""  # compressed input read but not yet given to zlib
        self._done = False
        self.ignored = 0
        self.garbage = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        size = len(buf)
        while not self._done:
            inflate = self._inflate
            data = inflate.unconsumed_tail or self._take()
            if not data:
                raise EOFError("Compressed file ended before the end-of-stream marker was "
                               "reached")
            out = inflate.decompress(data, size)
            if inflate.eof:
                self._after_member(inflate.unused_data)
            if out:
                buf[:len(out)] = out
                return len(out)
        return 0

    def _take(self) -> bytes:
        data, self._pending = self._pending or self._raw.read(READ), b""
        return data

    def _after_member(self, rest: bytes) -> None:
        """Start the next member, or count what follows the last one and stop."""
        zeros = 0
        while True:  # look past zero padding, holding no more than a few bytes of it
            stripped = rest.lstrip(b"\0")
            zeros += len(rest) - len(stripped)
            rest = stripped
            if len(rest) >= 2:
                break
            more = self._raw.read(READ)
            if not more:
                break
            rest += more
        self.ignored += zeros
        if rest[:2] == GZIP_MAGIC:  # another member: a concatenated gzip file is valid
            self._inflate = zlib.decompressobj(_GZIP_WBITS)
            self._pending = rest
            return
        # Not gzip data: gunzip ignores it too ("trailing garbage ignored").
        self._done = True
        self.garbage = self.garbage or bool(rest)
        self.ignored += len(rest)
        while more := self._raw.read(BUFFER):  # counted, not held
            self.ignored += len(more)


class GzipStream(io.BufferedReader):
    """A buffered `GzipMembers` (readline, read), exposing what it ignored."""

    raw: GzipMembers

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(GzipMembers(raw), buffer_size=BUFFER)

    @property
    def ignored(self) -> int:
        """Bytes after the gzip data that were not read as KB text (0 until the end)."""
        return self.raw.ignored

    @property
    def garbage(self) -> bool:
        return self.raw.garbage


def ignored_message(stream: GzipStream) -> str:
    """The GZIP_TRAILING_BYTES message for a stream read to its end."""
    what = "trailing bytes that are not a gzip member" if stream.garbage else "zero padding"
    return (f"{stream.ignored:,} bytes after the end of the gzip data ({what}) were "
            "ignored, as GNU gunzip ignores them")
