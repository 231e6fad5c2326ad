"""Compile kernels.py ahead of time into the extension module `_kernels_aot`.

    python -m estimation.core.build_kernels

Run by `make` (before the tests and the demo) and by the image's build. The module
records a digest of the source it was built from; `compiled.py` uses it only while
that digest is kernels.py's.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULE = "_kernels_aot"


def source_digest() -> int:
    """A 60-bit digest of kernels.py (what the built module computes)."""
    import hashlib

    return int(hashlib.sha256((HERE / "kernels.py").read_bytes()).hexdigest()[:15], 16)


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
    cc.compile()
    return out_dir / Path(cc.output_file).name


if __name__ == "__main__":
    path = build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
    print(f"built {path}")
