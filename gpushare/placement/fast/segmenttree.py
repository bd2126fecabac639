"""Nodes by what they can still give, each capacity's nodes in order: the best node with room for a request in
O(log capacity), for both fast engines (ack's `engine`, upstream's `scoreindex`).

The tree is a flat list while a GPU's units are few enough for it (up to 2^18: 256 GiB a GPU in MiB units; the hot
path's list indexing), and a dict of the segments that hold a node beyond that (`SparseCapacityIndex`): there its
size grows with the nodes and the log of a GPU's units, not with the units, so a node of a million units a GPU (or
of more than any integer type holds) costs what one of 80 does, at about a third more time a lookup."""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterator
from typing import Any

#: Any orderable tuple: smaller is better (engine: (score, name, id); scoreindex: (-local, -room, name, id)).
Key = tuple[Any, ...]


class CapacityIndex:
    """Nodes by capacity value (0..limit), each capacity's nodes sorted by key; yields keys best-first for cap >= r.

    A segment tree over capacities holds each segment's best key. One index serves one kind of pod (for ack: node
    class, GPU count `m`, cpu, memory and other requests; `kind` is its GPU kind). Made by `capacity_index`.

    Each capacity's keys are a plain sorted list, as `scoreindex.Group`'s are: a leaf holds at most the fleet's
    nodes, and at that size `insort` and `del` (one memmove in C) cost less than a balanced structure's Python
    steps (sortedcontainers' SortedList here was a third of the engine's time on 100,000 distinct pods).
    """

    def __init__(self, limit: int, m: int = 1, kind: str = "") -> None:
        self.size = 1 << max(1, (limit + 1).bit_length())
        self.leaves: dict[int, list[Key]] = {}
        self.best: list[Key | None] = [None] * (2 * self.size)
        self.m = m
        self.kind = kind

    def _refresh(self, cap: int) -> None:
        leaf = self.leaves.get(cap)
        i = cap + self.size
        self.best[i] = leaf[0] if leaf else None
        i >>= 1
        best = self.best
        while i:
            a, b = best[2 * i], best[2 * i + 1]
            better = a if b is None or (a is not None and a < b) else b
            if better == best[i]:  # the segments above are made of this one's best: they stand
                break
            best[i] = better
            i >>= 1

    def add(self, cap: int, key: Key) -> None:
        leaf = self.leaves.get(cap)
        if leaf is None:
            leaf = self.leaves[cap] = []
        insort(leaf, key)
        if leaf[0] == key:
            self._refresh(cap)

    def remove(self, cap: int, key: Key) -> None:
        leaf = self.leaves[cap]
        first = leaf[0] == key
        del leaf[bisect_left(leaf, key)]
        if first:
            self._refresh(cap)

    def first(self, low: int) -> Key | None:
        """The best (smallest) key among nodes with capacity >= low: the least of the segments covering [low, size)."""
        size, best = self.size, self.best
        if low <= 0:
            return best[1]
        if low >= size:
            return None
        found = None
        lo, hi = low + size, 2 * size - 1
        while lo <= hi:
            if lo & 1:
                value = best[lo]
                if value is not None and (found is None or value < found):
                    found = value
                lo += 1
            if not hi & 1:
                value = best[hi]
                if value is not None and (found is None or value < found):
                    found = value
                hi -= 1
            lo >>= 1
            hi >>= 1
        return found

    def ordered(self, low: int) -> Iterator[Key]:
        """Keys of nodes with capacity >= low, best (smallest) first."""
        size = self.size
        if low >= size:
            return
        heap: list[tuple[Key, int, int]] = []
        lo, hi = low + size, 2 * size - 1
        while lo <= hi:  # canonical cover of [low, size-1]
            if lo & 1:
                if self.best[lo] is not None:
                    heap.append((self.best[lo], lo, -1))  # type: ignore[arg-type]
                lo += 1
            if not hi & 1:
                if self.best[hi] is not None:
                    heap.append((self.best[hi], hi, -1))  # type: ignore[arg-type]
                hi -= 1
            lo >>= 1
            hi >>= 1
        heapq.heapify(heap)
        while heap:
            _key, seg, pos = heapq.heappop(heap)
            if seg >= size:  # a leaf: its keys in order
                leaf = self.leaves[seg - size]
                pos += 1
                yield leaf[pos]
                if pos + 1 < len(leaf):
                    heapq.heappush(heap, (leaf[pos + 1], seg, pos))
                continue
            for child in (2 * seg, 2 * seg + 1):
                if self.best[child] is not None:
                    heapq.heappush(heap, (self.best[child], child, -1))  # type: ignore[misc]


#: The largest tree kept as a flat list (leaves): past it, `SparseCapacityIndex`.
DENSE_LEAVES = 1 << 18


class SparseCapacityIndex(CapacityIndex):
    """A `CapacityIndex` whose segments are a dict of those that hold a node: for GPUs of more units than
    DENSE_LEAVES. Its three methods repeat the flat tree's over the dict: one body for both would reach the flat
    list through a call in the engine's hottest loop (a third of its time, as the dict alone cost)."""

    def __init__(self, limit: int, m: int = 1, kind: str = "") -> None:
        super().__init__(0, m, kind)
        self.size = 1 << max(1, (limit + 1).bit_length())
        self.sparse: dict[int, Key] = {}

    def _refresh(self, cap: int) -> None:
        leaf = self.leaves.get(cap)
        i = cap + self.size
        best = self.sparse
        if leaf:
            best[i] = leaf[0]
        else:
            best.pop(i, None)
        i >>= 1
        while i:
            a, b = best.get(2 * i), best.get(2 * i + 1)
            better = a if b is None or (a is not None and a < b) else b
            if better == best.get(i):  # the segments above are made of this one's best: they stand
                break
            if better is None:
                del best[i]
            else:
                best[i] = better
            i >>= 1

    def first(self, low: int) -> Key | None:
        """The best (smallest) key among nodes with capacity >= low: the least of the segments covering [low, size)."""
        size, best = self.size, self.sparse
        if low <= 0:
            return best.get(1)
        if low >= size:
            return None
        found = None
        lo, hi = low + size, 2 * size - 1
        while lo <= hi:
            if lo & 1:
                value = best.get(lo)
                if value is not None and (found is None or value < found):
                    found = value
                lo += 1
            if not hi & 1:
                value = best.get(hi)
                if value is not None and (found is None or value < found):
                    found = value
                hi -= 1
            lo >>= 1
            hi >>= 1
        return found

    def ordered(self, low: int) -> Iterator[Key]:
        """Keys of nodes with capacity >= low, best (smallest) first."""
        size = self.size
        if low >= size:
            return
        best = self.sparse
        heap: list[tuple[Key, int, int]] = []
        lo, hi = low + size, 2 * size - 1
        while lo <= hi:  # canonical cover of [low, size-1]
            if lo & 1:
                if lo in best:
                    heap.append((best[lo], lo, -1))
                lo += 1
            if not hi & 1:
                if hi in best:
                    heap.append((best[hi], hi, -1))
                hi -= 1
            lo >>= 1
            hi >>= 1
        heapq.heapify(heap)
        while heap:
            _key, seg, pos = heapq.heappop(heap)
            if seg >= size:  # a leaf: its keys in order
                leaf = self.leaves[seg - size]
                pos += 1
                yield leaf[pos]
                if pos + 1 < len(leaf):
                    heapq.heappush(heap, (leaf[pos + 1], seg, pos))
                continue
            for child in (2 * seg, 2 * seg + 1):
                if child in best:
                    heapq.heappush(heap, (best[child], child, -1))


def capacity_index(limit: int, m: int = 1, kind: str = "") -> CapacityIndex:
    """The index for GPUs of up to `limit` units: a flat tree, or a sparse one past DENSE_LEAVES."""
    if limit < DENSE_LEAVES:
        return CapacityIndex(limit, m, kind)
    return SparseCapacityIndex(limit, m, kind)
