"""The estimators' compiled loops (kernels.py): the ahead-of-time build when it is
current, else numba's just-in-time compiler.

The built module (`build_kernels`) needs neither numba nor LLVM at run time: a scoring
process stays ~165 MB smaller and never compiles. When it is missing or was built from
another version of kernels.py, the same source is compiled on first use (and cached by
numba on disk), with a warning: the numbers are the same either way.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

logger = logging.getLogger(__name__)
_LOADED: SimpleNamespace | None = None
# Kernels exported once per index width: the positions of their index arguments (one
# width per call, the first one's; another integer type is converted).
_BY_WIDTH = {"reprior": (1,), "scheme_sums": (0, 1, 4), "nu_sums": (0, 1)}


def _ahead_of_time() -> object | None:
    from .build_kernels import MODULE, source_digest

    try:
        module = importlib.import_module(f"{__package__}.{MODULE}")
    except ImportError:
        logger.warning("estimation kernels not built (python -m estimation.core.build_kernels):"
                       " compiling them with numba at run time")
        return None
    if module.digest() != source_digest():
        logger.warning("estimation kernels built from another kernels.py (rebuild with python "
                       "-m estimation.core.build_kernels): compiling them with numba at run time")
        return None
    return module


def _just_in_time() -> dict[str, object]:
    import numba as nb

    from . import kernels

    jit = nb.njit(**kernels.JIT)
    return {name: jit(fn) for name, (fn, _sig) in kernels.EXPORTS.items()}


def _by_width(variants: dict[str, object], name: str) -> Callable[..., object]:
    at = _BY_WIDTH[name]

    def call(*args: object) -> object:
        args = list(args)
        wide = np.asarray(args[at[0]]).dtype != np.int32
        kind = np.int64 if wide else np.int32
        for k in at:
            args[k] = np.asarray(args[k], dtype=kind)
        return variants[f"{name}_{'i8' if wide else 'i4'}"](*args)
    return call


def kernels() -> SimpleNamespace:
    """The loops: fixed_point_shares, reprior, moving_items, spread_soft, scheme_sums,
    nu_sums and rows_dense_add (kernels.py documents each)."""
    global _LOADED
    if _LOADED is None:
        module = _ahead_of_time()
        found = {name: getattr(module, name) for name in dir(module)} if module is not None \
            else _just_in_time()
        loops = {name: fn for name, fn in found.items()
                 if not name.startswith("_") and not any(name.startswith(b + "_")
                                                         for b in _BY_WIDTH)}
        for name in _BY_WIDTH:
            loops[name] = _by_width(found, name)
        _LOADED = SimpleNamespace(**loops)
    return _LOADED
