"""Compile kernels.py ahead of time into the extension module `_kernels_aot`.

    python -m estimation.core.build_kernels

Run by `make` (before the tests and the demo) and by the image's build. The module
records a digest of the source it was built from; `compiled.py` uses it only while
that digest is kernels.py's.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULE = "_kernels_aot"


def source_digest() -> int:
    """A 60-bit digest of kernels.py and of this builder (what the built module computes,
    and how: a module built without releasing the GIL is stale too)."""
    import hashlib

    digest = hashlib.sha256()
    for name in ("kernels.py", "build_kernels.py"):
        digest.update((HERE / name).read_bytes())
    return int(digest.hexdigest()[:15], 16)


@contextmanager
def _releasing_the_gil() -> Iterator[None]:
    """numba.pycc's compile flags with ``release_gil`` set, as `nogil=True` sets them
    for the just-in-time build: each export gives the GIL up while its loop runs, so a
    recompute's replicates run beside its final estimate (estimation/scoring.py).
    numba.pycc offers no option for it; its compiler reads the flags class by name."""
    from numba.core.compiler import Flags
    from numba.pycc import compiler

    class Released(Flags):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = Released
    try:
        yield
    finally:
        compiler.Flags = Flags


def build(out_dir: Path = HERE) -> Path:
    """Compile every export of kernels.py into ``out_dir``; the built file's path."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc's pending-deprecation notice
        from numba.pycc import CC

        from . import kernels

        cc = CC(MODULE)
    cc.output_dir = str(out_dir)
    cc.verbose = False
    for name, (fn, signature) in kernels.EXPORTS.items():
        cc.export(name, signature)(fn)
    scope: dict = {}
    exec(f"def digest():\n    return {source_digest()}\n", scope)  # a literal: the digest
    cc.export("digest", "i8()")(scope["digest"])
    with _releasing_the_gil():
        cc.compile()
    return out_dir / Path(cc.output_file).name


if __name__ == "__main__":
    path = build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
    print(f"built {path}")
