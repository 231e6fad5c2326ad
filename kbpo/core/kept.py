"""What a process keeps between runs or requests: the newest few entries, under a lock."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(OrderedDict[K, V], Generic[K, V]):
    """An ordered dict that keeps its ``size`` most recently used entries (`kept` and
    `keep` count as a use), with a lock for the threads of one worker. Plain reads and
    writes stay those of a dict."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.lock = threading.Lock()

    def kept(self, key: K) -> V | None:
        with self.lock:
            value = self.get(key)
            if value is not None:
                self.move_to_end(key)
            return value

    def keep(self, key: K, value: V) -> None:
        with self.lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > self.size:
                self.popitem(last=False)

    def forget(self, key: K | None = None) -> None:
        """Drop ``key`` (None: everything)."""
        with self.lock:
            if key is None:
                self.clear()
            else:
                self.pop(key, None)
