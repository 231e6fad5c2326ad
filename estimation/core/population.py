"""The population of systems, stored sparsely over a global index of mention pairs.

Importance sampling runs over *mention pairs* (see docs/internals/estimation.md): system i's
mass on pair u is P_i(u) = Σ of p_i(x) over i's instances x on u. A drawn pair is
labelled once and that label decides every system's instances on the pair, so a
pair drawn by j informs i even when i predicted a different predicate there.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import scipy.sparse as sp

from .schemes import check_scheme, scheme_weights

T = TypeVar("T")
# Memoised results kept per population (a few per scheme and estimate).
MEMO_ENTRIES = 16


def _split(flat: np.ndarray, parts: list[np.ndarray]) -> list[np.ndarray]:
    """Views of ``flat`` (the concatenation of ``parts``) with the parts' lengths."""
    ends = np.cumsum([len(p) for p in parts])
    return [flat[a:b] for a, b in zip(ends - [len(p) for p in parts], ends, strict=True)]


@dataclass
class _System:
    name: str
    pairs: np.ndarray  # (n,) dense pair index of each distinct instance
    predicates: np.ndarray  # (n,) predicate code
    subjects: np.ndarray  # (n,) subject code
    inst_p: dict[str, np.ndarray] = field(default_factory=dict)  # scheme -> p(x)
    pair_rows: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # (sorted distinct pairs, pair position of each instance): the same for every scheme.
    grouping: tuple[np.ndarray, np.ndarray] | None = None

    def probs(self, scheme: str) -> np.ndarray:
        if scheme not in self.inst_p:
            self.inst_p[scheme] = scheme_weights(scheme, self.predicates, self.subjects)
        return self.inst_p[scheme]

    def pair_row(self, scheme: str) -> tuple[np.ndarray, np.ndarray]:
        """(sorted pair indices, P(u)) of the system's pair-level distribution."""
        if scheme not in self.pair_rows:
            if self.grouping is None:
                cols, inv = np.unique(self.pairs, return_inverse=True)
                self.grouping = (cols, inv.ravel())
            cols, inv = self.grouping
            data = np.bincount(inv, weights=self.probs(scheme), minlength=len(cols))
            self.pair_rows[scheme] = (cols, data)
        return self.pair_rows[scheme]


class Population:
    """Systems as sparse rows over a growing index of mention pairs.

    Pair ids and subject ids are arbitrary int64 (e.g. database keys); predicates
    are small non-negative integer codes. The overlap matrices
    O[s, t]_ij = Σ_u P_{i,s}(u) P_{j,t}(u) are kept up to date incrementally once
    requested.
    """

    def __init__(self) -> None:
        self._sorted_ids = np.zeros(0, dtype=np.int64)  # known pair ids, sorted
        self._sorted_idx = np.zeros(0, dtype=np.int64)  # their dense index
        self.pair_ids = np.zeros(0, dtype=np.int64)  # dense index -> pair id
        self._systems: list[_System] = []
        self._stack_cache: dict[str, sp.csr_matrix] = {}
        self._inst_cache: dict[str, np.ndarray] = {}
        self._overlaps: dict[tuple[str, str], np.ndarray] = {}
        # Results derived from the systems and given inputs (see `memo`).
        self._memo: OrderedDict[tuple, object] = OrderedDict()
        # A recompute reads the population from two threads (the correction's replicates
        # beside the final estimate): what fills a cache, or reorders the memo, holds it.
        self._lock = threading.RLock()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # ---- pair index -------------------------------------------------------
    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self._systems]

    def __len__(self) -> int:
        return len(self._systems)

    def index_of(self, name: str) -> int:
        for k, s in enumerate(self._systems):
            if s.name == name:
                return k
        raise KeyError(name)

    def lookup_pairs(self, pair_ids: np.ndarray) -> np.ndarray:
        """Dense index of each pair id, -1 for pairs no system predicted."""
        pair_ids = np.asarray(pair_ids, dtype=np.int64)
        pos = np.searchsorted(self._sorted_ids, pair_ids)
        pos_c = np.minimum(pos, max(len(self._sorted_ids) - 1, 0))
        if len(self._sorted_ids) == 0:
            return np.full(len(pair_ids), -1, dtype=np.int64)
        found = self._sorted_ids[pos_c] == pair_ids
        return np.where(found, self._sorted_idx[pos_c], -1)

    def _intern_pairs(self, pair_ids: np.ndarray) -> np.ndarray:
        idx = self.lookup_pairs(pair_ids)
        new_ids = np.unique(pair_ids[idx < 0])
        if len(new_ids):
            new_idx = np.arange(self.n_pairs, self.n_pairs + len(new_ids))
            self.pair_ids = np.concatenate([self.pair_ids, new_ids])
            at = np.searchsorted(self._sorted_ids, new_ids)
            self._sorted_ids = np.insert(self._sorted_ids, at, new_ids)
            self._sorted_idx = np.insert(self._sorted_idx, at, new_idx)
            idx = self.lookup_pairs(pair_ids)
            # New pairs are appended as columns, so cached stacks only widen.
            for mat in self._stack_cache.values():
                mat.resize((mat.shape[0], self.n_pairs))
        return idx

    # ---- systems ----------------------------------------------------------
    def add_system(
        self,
        name: str,
        pair_ids: np.ndarray,
        predicates: np.ndarray,
        subjects: np.ndarray | None = None,
    ) -> int:
        """Add a system; duplicate (pair, predicate) instances are kept once.

        Returns the system's row index. Cached overlap matrices gain one row and
        column, computed from the new row only (O(nnz) of the touched columns).
        """
        if name in self.names:
            raise ValueError(f"system {name!r} already in the population")
        pair_ids = np.asarray(pair_ids, dtype=np.int64)
        predicates = np.asarray(predicates, dtype=np.int64)
        subjects = (
            pair_ids if subjects is None else np.asarray(subjects, dtype=np.int64)
        )
        if not (len(pair_ids) == len(predicates) == len(subjects)):
            raise ValueError(
                "pair_ids, predicates and subjects must have the same length"
            )
        if len(predicates) and predicates.min() < 0:
            raise ValueError("predicate codes must be non-negative")
        pairs = self._intern_pairs(pair_ids)
        key = pairs * (int(predicates.max(initial=0)) + 1) + predicates
        _, first = np.unique(key, return_index=True)
        first = np.sort(first)
        system = _System(name, pairs[first], predicates[first], subjects[first])

        # Grow the cached overlaps before the stacks are invalidated.
        for (s, t), old in list(self._overlaps.items()):
            m = len(self._systems)
            new = np.zeros((m + 1, m + 1))
            new[:m, :m] = old
            if m:
                a = self._row_matrix(system, s)
                b = self._row_matrix(system, t)
                new[m, :m] = (a @ self.stacked(t).T).toarray().ravel()
                new[:m, m] = (self.stacked(s) @ b.T).toarray().ravel()
            new[m, m] = (
                self._row_matrix(system, s).multiply(self._row_matrix(system, t)).sum()
            )
            self._overlaps[(s, t)] = new
        self._systems.append(system)
        self._invalidate()
        return len(self._systems) - 1

    def remove_system(self, name: str) -> None:
        """Withdraw a system: its row and column leave every overlap matrix."""
        k = self.index_of(name)
        del self._systems[k]
        for key, old in self._overlaps.items():
            self._overlaps[key] = np.delete(np.delete(old, k, axis=0), k, axis=1)
        self._invalidate()

    def _invalidate(self) -> None:
        self._stack_cache.clear()
        self._inst_cache.clear()
        self._memo.clear()

    def memo(self, key: tuple, make: Callable[[], T]) -> T:
        """``make()``, remembered under ``key`` until a system is added or withdrawn.

        For quantities that depend on the systems and on inputs the key captures in
        full (e.g. by content digest): label batches leave them valid, and a
        worker's hot population keeps them between batches. The newest
        ``MEMO_ENTRIES`` are kept.
        """
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]  # type: ignore[return-value]
        value = make()  # outside the lock: the other thread need not wait for it
        with self._lock:
            self._memo[key] = value
            while len(self._memo) > MEMO_ENTRIES:
                self._memo.popitem(last=False)
        return value

    def _row_matrix(self, system: _System, scheme: str) -> sp.csr_matrix:
        cols, data = system.pair_row(scheme)
        return sp.csr_matrix(
            (data, cols, np.array([0, len(cols)])), shape=(1, max(self.n_pairs, 1))
        )

    def system_instances(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dense pair index, predicate, subject) of system k's distinct instances."""
        s = self._systems[k]
        return s.pairs, s.predicates, s.subjects

    # ---- stacked views ----------------------------------------------------
    def stacked(self, scheme: str) -> sp.csr_matrix:
        """(m × n_pairs) CSR matrix of P_{i,scheme}(u).

        The schemes' matrices share one pattern (indptr, indices): each system's pairs
        are the same under every scheme. Each system's pair row becomes a view of the
        matrix's data, so the values are held once, not per system and again stacked.
        """
        check_scheme(scheme)
        if scheme in self._stack_cache:
            return self._stack_cache[scheme]
        with self._lock:
            return self._stack(scheme)

    def _stack(self, scheme: str) -> sp.csr_matrix:
        if scheme not in self._stack_cache:
            rows = [s.pair_row(scheme) for s in self._systems]
            data = np.concatenate([d for _, d in rows]) if rows else np.zeros(0)
            shape = (len(rows), max(self.n_pairs, 1))
            pattern = self._inst_cache.get("stack_pattern")
            if pattern is None:
                indptr = np.concatenate(
                    [[0], np.cumsum([len(c) for c, _ in rows])]
                ).astype(np.int64)
                indices = (
                    np.concatenate([c for c, _ in rows]) if rows else np.zeros(0, np.int64)
                )
                mat = sp.csr_matrix((data, indices, indptr), shape=shape)
                # scipy's (possibly narrowed) copies, reused by the other schemes.
                self._inst_cache["stack_pattern"] = (mat.indptr, mat.indices)
            else:
                indptr, indices = pattern
                mat = sp.csr_matrix((data, indices, indptr), shape=shape)
            for k, (system, (cols, _)) in enumerate(zip(self._systems, rows, strict=True)):
                system.pair_rows[scheme] = (cols, mat.data[mat.indptr[k]:mat.indptr[k + 1]])
            self._stack_cache[scheme] = mat
        return self._stack_cache[scheme]

    def instances(self) -> dict[str, np.ndarray]:
        """All systems' instances concatenated: arrays system, pair, predicate.

        The systems' own pair and predicate arrays become views of these (held once).
        """
        if "predicates" in self._inst_cache:  # the last one filled
            return self._inst_cache
        with self._lock:
            return self._instances()

    def _instances(self) -> dict[str, np.ndarray]:
        if "system" not in self._inst_cache:
            sy = self._systems
            self._inst_cache["system"] = np.repeat(
                np.arange(len(sy)), [len(s.pairs) for s in sy]
            ).astype(np.int64)
            for key in ("pairs", "predicates"):
                parts = [getattr(s, key) for s in sy]
                flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
                for s, view in zip(sy, _split(flat, parts), strict=True):
                    setattr(s, key, view)
                self._inst_cache[key] = flat
        return self._inst_cache

    def mass_moments(self, scheme: str) -> tuple[np.ndarray, np.ndarray]:
        """(Σ_u P_i(u), Σ_u P_i(u)²) per system: 1 (0 for an empty system) and O_ii."""
        key = "moments_" + check_scheme(scheme)
        if key in self._inst_cache:
            return self._inst_cache[key]
        with self._lock:
            return self._moments(key, scheme)

    def _moments(self, key: str, scheme: str) -> tuple[np.ndarray, np.ndarray]:
        if key not in self._inst_cache:
            ps = self.stacked(scheme)
            rows = np.repeat(np.arange(len(self)), np.diff(ps.indptr))
            self._inst_cache[key] = (
                np.bincount(rows, weights=ps.data, minlength=len(self)),
                np.bincount(rows, weights=ps.data**2, minlength=len(self)),
            )
        return self._inst_cache[key]

    def instance_entries(self) -> np.ndarray:
        """Position of each instance (in :meth:`instances` order) among the entries of
        the stacked pair-level matrices (their pattern is the same for every scheme)."""
        if "entries" in self._inst_cache:
            return self._inst_cache["entries"]
        with self._lock:
            return self._entries()

    def _entries(self) -> np.ndarray:
        if "entries" not in self._inst_cache:
            ps = self.stacked("instance")
            parts = []
            for k, system in enumerate(self._systems):
                system.pair_row("instance")
                assert system.grouping is not None
                parts.append(ps.indptr[k] + system.grouping[1])
            self._inst_cache["entries"] = (
                np.concatenate(parts) if parts else np.zeros(0, np.int64)
            )
        return self._inst_cache["entries"]

    def instance_probs(self, scheme: str) -> np.ndarray:
        """p_{i,scheme}(x) aligned with :meth:`instances`."""
        key = "p_" + check_scheme(scheme)
        if key in self._inst_cache:
            return self._inst_cache[key]
        with self._lock:
            return self._probs(key, scheme)

    def _probs(self, key: str, scheme: str) -> np.ndarray:
        if key not in self._inst_cache:
            parts = [s.probs(scheme) for s in self._systems]
            flat = np.concatenate(parts) if parts else np.zeros(0)
            # The systems' own p(x) become views of the concatenation (held once).
            for s, view in zip(self._systems, _split(flat, parts), strict=True):
                s.inst_p[scheme] = view
            self._inst_cache[key] = flat
        return self._inst_cache[key]

    # ---- overlaps ---------------------------------------------------------
    def overlap(
        self, scheme: str = "instance", draw_scheme: str | None = None
    ) -> np.ndarray:
        """O_ij = Σ_u P_{i,scheme}(u) P_{j,draw_scheme}(u), maintained incrementally."""
        draw_scheme = draw_scheme or scheme
        key = (check_scheme(scheme), check_scheme(draw_scheme))
        if key not in self._overlaps:
            with self._lock:
                if key not in self._overlaps:
                    self._overlaps[key] = self.overlap_full(scheme, draw_scheme)
        return self._overlaps[key]

    def overlap_full(
        self, scheme: str = "instance", draw_scheme: str | None = None
    ) -> np.ndarray:
        """Full recomputation of :meth:`overlap` (for checking the incremental update)."""
        draw_scheme = draw_scheme or scheme
        return (self.stacked(scheme) @ self.stacked(draw_scheme).T).toarray()
