"""How many nodes of which pool to add so that the pending pods schedule.

A pool is a Node manifest: the node a node pool would add (its labels, taints and the GPU capacity its device
plugin reports), with an optional `gpushare.io/pool-max` annotation (at most that many nodes) and
`gpushare.io/pool-cost` (the cost of one node, to choose between pools). Every count is checked by placing the
whole fleet again with that many copies added, so the answer is the replay's: for each pool, the fewest nodes after
which no pending pod that pool can serve stays pending (found by bisection over replays, and shown minimal: one node
fewer leaves a pod pending); pods no pool can serve are named with why. With several pools, each is sized alone
and the cheapest is chosen (mixes of pools are not searched).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from gpushare.errors import InputError
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.placement.inputs import build
from gpushare.placement.model import Semantics
from gpushare.placement.result import Pending, PlacementResult
from gpushare.placement.run import run

MAX_ANNOTATION = "gpushare.io/pool-max"
COST_ANNOTATION = "gpushare.io/pool-cost"
#: Nodes a pool adds at most when its manifest names no maximum: more than any answer a replay would confirm.
DEFAULT_MAX = 1000


@dataclass(frozen=True)
class Pool:
    name: str
    node: Source
    max: int
    cost: float


@dataclass(frozen=True)
class Sizing:
    """One pool's answer: `nodes` to add, the replay with them added, the replay with one fewer (what stays
    pending there: the proof of minimality; None when none are needed), and the pods the pool cannot serve."""

    pool: str
    nodes: int
    cost: float
    result: PlacementResult
    one_fewer: PlacementResult | None
    unservable: tuple[Pending, ...]


def read_pool(src: Source) -> Pool:
    """A pool from its Node manifest; a document that is no Node, or an unreadable max or cost, is refused."""
    if src.kind != "Node":
        raise InputError("--pool", src.where, "a Node manifest: the node the pool adds")
    meta = mapping(src.obj.get("metadata"))
    name = str(meta.get("name") or "")
    if not name:
        raise InputError("--pool", src.where, "a Node with metadata.name (the pool's name)")
    notes = mapping(meta.get("annotations"))
    raw_max, raw_cost = notes.get(MAX_ANNOTATION, DEFAULT_MAX), notes.get(COST_ANNOTATION, 1)
    try:
        most, cost = int(str(raw_max)), float(str(raw_cost))
    except ValueError:
        raise InputError(
            f"--pool {name} annotations", f"{raw_max}, {raw_cost}", f"whole {MAX_ANNOTATION} and numeric cost"
        ) from None
    if most < 1 or cost < 0:
        raise InputError(f"--pool {name} {MAX_ANNOTATION}", raw_max, "at least 1 (and a cost of 0 or more)")
    return Pool(name, src, most, cost)


def _copies(pool: Pool, count: int) -> list[Source]:
    nodes = []
    for i in range(count):
        obj = copy.deepcopy(pool.node.obj)
        name = f"{pool.name}-new-{i}"
        meta = obj.setdefault("metadata", {})
        meta["name"] = name
        meta.setdefault("labels", {})["kubernetes.io/hostname"] = name
        nodes.append(Source(obj, pool.node.file, pool.node.line))
    return nodes


@dataclass(frozen=True)
class Fleet:
    """What every replay places: the nodes, running and pending pods as read, and how."""

    nodes: list[Source]
    existing: list[Source]
    pending: list[Source]
    semantics: Semantics
    input_unit: str | None = None

    def with_pool(self, pool: Pool, count: int) -> PlacementResult:
        """The whole fleet placed again with `count` nodes of `pool` added."""
        model = build(self.nodes + _copies(pool, count), self.existing, self.pending, self.semantics, self.input_unit)
        return run(model, self.semantics)


def size_pool(fleet: Fleet, pool: Pool) -> Sizing:
    """The fewest nodes of `pool` after which every pending pod it can serve schedules, by bisection over replays."""
    zero = fleet.with_pool(pool, 0)
    if not zero.pending:
        return Sizing(pool.name, 0, 0.0, zero, None, ())
    full = fleet.with_pool(pool, pool.max)
    # pods still pending with `max` nodes added: this pool cannot serve them; the answer is the fewest nodes after
    # which only those stay pending
    unservable = {p.key for p in full.pending}
    if {p.key for p in zero.pending} <= unservable:
        return Sizing(pool.name, 0, 0.0, zero, None, tuple(full.pending))
    low, high, best = 1, pool.max, full  # invariant: `high` nodes leave only the unservable pending
    while low < high:
        middle = (low + high) // 2
        replay = fleet.with_pool(pool, middle)
        if {p.key for p in replay.pending} <= unservable:
            high, best = middle, replay
        else:
            low = middle + 1
    one_fewer = fleet.with_pool(pool, high - 1)
    if {p.key for p in one_fewer.pending} <= unservable:  # not monotone here: say the smaller count, replayed
        return Sizing(pool.name, high - 1, (high - 1) * pool.cost, one_fewer, None, tuple(full.pending))
    return Sizing(pool.name, high, high * pool.cost, best, one_fewer, tuple(full.pending))


def size(fleet: Fleet, pools: list[Pool]) -> list[Sizing]:
    """Each pool sized alone, cheapest first (a pool that leaves fewer pods unservable before a cheaper one)."""
    answers = [size_pool(fleet, pool) for pool in pools]
    return sorted(answers, key=lambda s: (len(s.unservable), s.cost))
