"""kbpo.core.kept: the per-process store of the newest-used entries."""

from __future__ import annotations

from kbpo.core.kept import Kept


def test_keeps_the_most_recently_used_entries() -> None:
    kept: Kept[str, int] = Kept(2)
    kept.keep("a", 1)
    kept.keep("b", 2)
    assert kept.kept("a") == 1  # a used: b is now the oldest
    kept.keep("c", 3)
    assert kept.kept("b") is None and kept.kept("a") == 1 and kept.kept("c") == 3
    kept.keep("a", 4)  # a replaced, still one entry
    assert len(kept) == 2 and kept.kept("a") == 4
    kept.forget("a")
    assert kept.kept("a") is None and list(kept) == ["c"]
    kept.forget()
    assert not kept
