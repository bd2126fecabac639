"""The capacity index answers alike flat and sparse: the best node with room for a request, and every node with room
in order, after any adds and removes; the flat tree serves GPUs of up to DENSE_LEAVES units, the sparse one more."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpushare.placement.fast.segmenttree import (
    DENSE_LEAVES,
    CapacityIndex,
    SparseCapacityIndex,
    capacity_index,
)

LIMIT = 300
operations = st.lists(
    st.tuples(st.booleans(), st.integers(0, LIMIT), st.integers(0, 40), st.integers(0, LIMIT + 5)), max_size=120
)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_flat_and_sparse_agree_with_a_plain_scan(ops: list[tuple[bool, int, int, int]]) -> None:
    flat, sparse = CapacityIndex(LIMIT), SparseCapacityIndex(LIMIT)
    held: dict[tuple[int], int] = {}  # key -> capacity
    for add, cap, name, low in ops:
        key = (name,)
        if add and key not in held:
            held[key] = cap
            flat.add(cap, key)
            sparse.add(cap, key)
        elif not add and key in held:
            was = held.pop(key)
            flat.remove(was, key)
            sparse.remove(was, key)
        room = sorted(k for k, c in held.items() if c >= low)
        assert flat.first(low) == sparse.first(low) == (room[0] if room else None)
        assert list(flat.ordered(low)) == list(sparse.ordered(low)) == room


def test_the_flat_tree_stops_where_the_units_grow() -> None:
    assert type(capacity_index(DENSE_LEAVES - 1)) is CapacityIndex
    huge = capacity_index(10**20)  # more units than any integer type: no list of that size is made
    assert type(huge) is SparseCapacityIndex
    huge.add(10**20, ("n",))
    assert huge.first(10**19) == ("n",) and huge.first(10**20 + 1) is None
