"""How many nodes of which pool to add so that the pending pods schedule.

A pool is a Node manifest: the node a node pool would add (its labels, taints and the GPU capacity its device
plugin reports), with an optional `gpushare.io/pool-max` annotation (at most that many nodes) and
`gpushare.io/pool-cost` (the cost of one node, to choose between pools). Every count is checked by placing the
whole fleet again with that many copies added, so the answer is the replay's: for each pool, the fewest nodes after
which no pending pod that pool can serve stays pending (the search starts from a packing estimate and is settled
by replays; the count is shown minimal: one node fewer leaves a pod pending); pods a pool cannot serve (an empty
node of it refuses them, or they stay pending with `max` nodes added) are named with why. With several pools,
each is sized alone, then the cheapest mix of them is searched (`size_mix`, which says how).
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gpushare import process
from gpushare.errors import InputError
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.placement import Node, Pending, PlacementResult, Pod, Semantics, Simulation

MAX_ANNOTATION = "gpushare.io/pool-max"
COST_ANNOTATION = "gpushare.io/pool-cost"
#: Nodes a pool adds at most when its manifest names no maximum: more than any answer a replay would confirm.
DEFAULT_MAX = 1000
#: Pods a replay places (running and pending) from which pools are sized on several cores: below it, a copy of the
#: process costs more than the replays it would take over.
AT_ONCE_FROM = 2_000


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
    if most < 1 or not 0 <= cost < math.inf:  # NaN compares false both ways: refused too
        raise InputError(
            f"--pool {name} annotations",
            f"{raw_max}, {raw_cost}",
            f"{MAX_ANNOTATION} of 1 or more and a finite cost of 0 or more",
        )
    return Pool(name, src, most, cost)


def copies(pool: Pool, count: int) -> list[Source]:
    """The Node manifests of `count` nodes of the pool, named `<pool>-new-<i>`, as a replay adds them."""
    nodes = []
    for i in range(count):
        obj = copy.deepcopy(pool.node.obj)
        name = f"{pool.name}-new-{i}"
        meta = obj.setdefault("metadata", {})
        meta["name"] = name
        meta.setdefault("labels", {})["kubernetes.io/hostname"] = name
        nodes.append(Source(obj, pool.node.file, pool.node.line))
    return nodes


#: Nodes of each pool to add, in the pools' order.
Mix = list[tuple[Pool, int]]


class Fleet:
    """What every replay places: the nodes, running and pending pods as read, and how. The pods' models are read
    once (`base`); a replay is a simulation of them on the nodes made afresh, the pool's added, placing them all
    again (but for pending DaemonSets, whose pods depend on the nodes: those replays read everything again)."""

    def __init__(
        self,
        nodes: list[Source],
        existing: list[Source],
        pending: list[Source],
        semantics: Semantics,
        input_unit: str | None = None,
        said: Callable[[str], None] | None = None,
    ) -> None:
        self.nodes, self.existing, self.pending = nodes, existing, pending
        #: Told of each replay before it runs (a terminal's progress line: sizing can take minutes).
        self.said = said
        self.semantics, self.input_unit = semantics, input_unit
        #: The pods' models, read once (never run: each replay is a simulation of its own).
        self.base = Simulation.from_sources(nodes, existing, pending, semantics, input_unit)
        self.per_node = any(s.kind == "DaemonSet" for s in pending)
        self._zero: PlacementResult | None = None

    def model_with(self, counts: Mix) -> Simulation:
        """What a replay places: the pods' models with the nodes made afresh (all read again for DaemonSets)."""
        added = [doc for pool, count in counts for doc in copies(pool, count)]
        if self.per_node:
            return Simulation.from_sources(
                self.nodes + added, self.existing, self.pending, self.semantics, self.input_unit
            )
        return self.base.with_nodes(added)

    def packing(self) -> Simulation:
        """Empty nodes of the pools by themselves, the pods' models the same: where a packing opens nodes."""
        return self.base.alone([])

    def with_pools(self, counts: Mix) -> PlacementResult:
        """The whole fleet placed again with `count` nodes of each `pool` added."""
        counts = [(pool, count) for pool, count in counts if count]
        if not counts and self._zero is not None:
            return self._zero
        if self.said is not None:
            added = " + ".join(f"{count} of pool {pool.name}" for pool, count in counts) or "none"
            self.said(f"placing the fleet again with the pools' nodes added: {added}")
        result = self.model_with(counts).run(draws=False)
        if not counts:
            self._zero = result
        return result

    def settle(self, counts: Mix, result: PlacementResult) -> PlacementResult:
        """A replay made in another process, given its nodes' final state here from its answers: the nodes with the
        pools' added, the running pods charged as `run` charges them, those it preempted taken off, and the pods it
        placed bound, in its order, on the GPUs it gave them (a pod naming its node charged as `run` charges it).
        The state `run` leaves, without placing anything again (the pods a node holds listed in another order
        where preemption's search took pods off and put back those it spared)."""
        counts = [(pool, count) for pool, count in counts if count]
        if not counts and self._zero is not None:
            return self._zero
        return self.model_with(counts).apply(result)

    def with_pool(self, pool: Pool, count: int) -> PlacementResult:
        return self.with_pools([(pool, count)])

    def pending_models(self, result: PlacementResult) -> list[Pod]:
        """The models of the pods a replay left pending."""
        keys = {p.key for p in result.pending}
        return [p for p in self.base.pending if p.key in keys]


def _pack(fleet: Fleet, pools: list[Pool], pods: list[Pod]) -> dict[str, int]:
    """Nodes of each pool the pods need, packed first-fit by decreasing GPU share on empty pool nodes through the
    profile's own filters and device choice, a pod no open node takes opening one of the cheapest pool that accepts
    it: where a replay starts its search. A node no longer holding the smallest share left is closed, so the packing
    stays short however many nodes it opens; and a node only fills, so the nodes before the one a pod took refuse
    every later pod alike (same filters, same requests): the next one's search starts there (10,000 pods on 1,000
    nodes would otherwise try each open node for each pod)."""
    packer = fleet.packing()
    # one empty node of each pool, cheapest first, modelled alone (its filters read only itself)
    templates = [(pool, copies(pool, 1)[0]) for pool in sorted(pools, key=lambda p: p.cost)]
    empty = fleet.base.alone([doc for _, doc in templates]).nodes
    ordered = sorted(pods, key=lambda p: (-p.per_gpu * max(p.gpu_count, 1), p.key))
    least = min((p.per_gpu for p in ordered), default=0)
    opened = dict.fromkeys((pool.name for pool in pools), 0)
    nodes: list[Node] = []  # every node opened, in order
    closed: set[int] = set()  # their positions once closed
    resume: dict[tuple[Any, ...], int] = {}  # pods alike -> where the last of them found its node
    for pod in ordered:
        alike = pod.fit_key
        at = resume.get(alike, 0)
        while at < len(nodes) and (
            at in closed or nodes[at].room < pod.per_gpu or not packer.admits(pod, nodes[at], prefilter=False)
        ):
            at += 1
        if at == len(nodes):
            fits = next((i for i, node in enumerate(empty) if packer.admits(pod, node, prefilter=False)), None)
            if fits is None:  # no pool takes it: the replays name it
                continue
            pool, doc = templates[fits]
            nodes.append(packer.add_node(doc))
            opened[pool.name] += 1
        resume[alike] = at
        home = nodes[at]
        packer.bind(pod, home, packer.devices(pod, home))  # the extender's choice, whatever node the pod names
        if home.room < least:
            closed.add(at)
    return opened


def _estimate(fleet: Fleet, pool: Pool, pods: list[Pod]) -> int:
    return _pack(fleet, [pool], pods)[pool.name]


def _asked(pods: list[Pod]) -> int:
    """The GPU memory the pods ask, on all their GPUs."""
    return sum(p.per_gpu * max(p.gpu_count, 1) for p in pods)


def _secant(short: list[tuple[int, int]]) -> int:
    """More nodes the last two short counts point to: the GPU memory left pending falls as nodes are added, ever
    more slowly (the pods left are those kube-scheduler's spreading fits worst), so the line through the last two
    counts reaches 0 at or before the count that suffices, never after it: from below, each probe is one replay
    and tells how far is left, where a probe above the answer tells nothing but "enough". The packing estimate
    alone falls short on a pool whose GPUs spreading leaves in pieces (the pods left pending ask the most of one
    GPU, which pods spread over the added nodes take a share of first); 0 where the line says nothing."""
    if len(short) < 2:
        return 0
    (a, left_a), (b, left_b) = short[-2:]
    if left_b <= 0 or left_a <= left_b:
        return 0
    return left_b * (b - a) // (left_a - left_b)


def _least(low: int, high: int, enough: Callable[[int], bool], guess: int | None = None) -> int:
    """The fewest in (low, high] that are enough, `high` being enough and `low` not: down in growing steps to a
    count that is not, then bisected; replays need not be monotone, so the count returned is one whose one fewer
    is not enough. A `guess` in between is tried first: enough, the walk starts from it (an estimate close to the
    answer spares the walk from far above it); not enough, it is not taken as a bound (a count below it may be
    enough, replays not being monotone) and the walk starts from `high`."""
    if guess is not None and low < guess < high and enough(guess):
        high = guess
    step = 1
    while high - step > low and enough(high - step):
        high, step = high - step, step * 2
    low = max(low, high - step)
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    while high > 0 and enough(high - 1):
        high -= 1
    return high


def _never(fleet: Fleet, pool: Pool, pods: list[Pod]) -> set[str]:
    """The pods an empty node of the pool refuses (its labels, taints, capacity): no count of them serves those."""
    alone = fleet.base.alone(copies(pool, 1))
    empty = alone.nodes[0]
    return {p.key for p in pods if not alone.admits(p, empty, prefilter=False)}


def size_pool(fleet: Fleet, pool: Pool) -> Sizing:
    """The fewest nodes of `pool` after which every pending pod it can serve schedules. The search starts from a
    packing estimate and is settled by replays: short, it adds what the pods still pending need; generous, it walks
    down in growing steps and bisects; one fewer is replayed too (the proof of minimality). Only the last few
    replays are kept whole (each holds the fleet's state); the others keep what stayed pending."""
    zero = fleet.with_pool(pool, 0)
    if not zero.pending:
        return Sizing(pool.name, 0, 0.0, zero, None, ())
    waiting = fleet.pending_models(zero)
    refused = _never(fleet, pool, waiting)
    servable = [p for p in waiting if p.key not in refused]
    if not servable:
        return Sizing(pool.name, 0, 0.0, zero, None, _unservable(zero, refused))
    probes = _Probes(fleet, [pool])

    def replay(count: int) -> PlacementResult:
        return probes.replay((count,))

    def enough(count: int) -> bool:
        return probes.enough((count,), refused)

    low, high = 0, min(max(1, _estimate(fleet, pool, servable)), pool.max)  # `low` leaves pods pending
    guess = None
    short = [(0, _asked(servable))]  # the counts found short, with the GPU memory they left pending
    while not enough(high):  # short of the estimate: add what the pods still pending need (at most `max`)
        if high == pool.max:  # what stays pending with `max` added is named, as the pool does not serve it
            refused |= {p.key for p in replay(high).pending}
            if high > 1 and len(replay(high - 1).pending) > len(probes.left[(high,)]):
                # each node still helps: `max` is the answer, short of room (one fewer leaves more pending)
                return Sizing(
                    pool.name,
                    high,
                    high * pool.cost,
                    replay(high),
                    replay(high - 1),
                    _unservable(replay(high), refused),
                )
            # what `max` serves may need fewer: estimated again without the pods it does not serve
            guess = _estimate(fleet, pool, [p for p in servable if p.key not in refused])
            break
        still = [p for p in fleet.pending_models(replay(high)) if p.key not in refused]
        short.append((high, _asked(still)))
        low, more = high, max(1, _estimate(fleet, pool, still), _secant(short))
        high = min(high + more, pool.max)
    high = _least(low, high, enough, guess)  # generous: down to the fewest whose one fewer leaves a pod pending
    one_fewer = replay(high - 1) if high else None
    return Sizing(pool.name, high, high * pool.cost, replay(high), one_fewer, _unservable(replay(high), refused))


def _shipped(answer: Sizing | _Mixed) -> Sizing | _Mixed:
    """What a copy sends: of a pool's answer, its replays' answers, not their nodes (rebuilt here, `Fleet.settle`);
    of the mix's search, what it found, not its replays."""
    if isinstance(answer, _Mixed):
        return replace(answer, probes=None)
    fewer = answer.one_fewer
    return replace(
        answer,
        result=replace(answer.result, nodes=[]),
        one_fewer=None if fewer is None else replace(fewer, nodes=[]),
    )


def _unservable(result: PlacementResult, refused: set[str] | frozenset[str]) -> tuple[Pending, ...]:
    return tuple(p for p in result.pending if p.key in refused)


def size(fleet: Fleet, pools: list[Pool], cores: int | None = None) -> list[Sizing]:
    """Each pool sized alone, cheapest first (a pool that leaves fewer pods unservable before a cheaper one).

    The pools need nothing from each other: on several cores (all this process may use, or `cores`), forked copies
    of this process size some of them while this one sizes the others (`process.each`), once the fleet is large
    enough that a replay costs more than a copy. A pool sized in a copy comes back as its answers, and its
    replays' nodes are given their final state here (`Fleet.settle`): the same answers as on one core."""
    return _sized(fleet, pools, cores, mixed=False)[0]


def size_all(fleet: Fleet, pools: list[Pool], cores: int | None = None) -> tuple[list[Sizing], Blend | None]:
    """`size`, then `size_mix`, as `gpushare capacity` answers: the mix's search needs nothing from the pools sized
    alone, so it is shared out over the cores with them; only weighing it against them waits for both."""
    alone, found = _sized(fleet, pools, cores, mixed=len(pools) >= 2)
    return alone, size_mix(fleet, pools, alone, found)


def _sized(fleet: Fleet, pools: list[Pool], cores: int | None, mixed: bool) -> tuple[list[Sizing], _Mixed | None]:
    zero = fleet.with_pools([])  # the fleet as it is, placed once: every copy starts from it
    placed = len(fleet.base.pending) + len(fleet.base.running)
    workers = (process.cores() if cores is None else cores) if zero.pending and placed >= AT_ONCE_FROM else 1
    # None: the mix's search, first (the longest, as a rule: each copy then takes a pool as it is free)
    items: list[Pool | None] = [None, *pools] if mixed else list(pools)

    def work(item: Pool | None) -> Sizing | _Mixed:
        return _search_mix(fleet, pools) if item is None else size_pool(fleet, item)

    def quiet() -> None:  # the terminal's status line is this process's
        fleet.said = None

    def arrived(item: Pool | None, answer: Sizing | _Mixed) -> Sizing | _Mixed:  # from a copy: its nodes here
        if item is None or not isinstance(answer, Sizing):
            return answer
        result = fleet.settle([(item, answer.nodes)], answer.result)
        fewer = None if answer.one_fewer is None else fleet.settle([(item, answer.nodes - 1)], answer.one_fewer)
        return replace(answer, result=result, one_fewer=fewer)

    alone, found = [], None
    for answer, _ in process.each(items, work, workers, _shipped, quiet, arrived):
        if isinstance(answer, _Mixed):
            found = answer
        else:
            alone.append(answer)
    return sorted(alone, key=lambda s: (len(s.unservable), s.cost)), found


@dataclass(frozen=True)
class Blend:
    """Several pools at once: the nodes of each to add (pools adding none left out), their cost, the replay with
    them added, and for each pool used the replay with one of its nodes fewer (each leaves a pod pending: no node
    can go alone). `searched` says how the mix was found; `replays` how many placements it took."""

    counts: tuple[tuple[str, int], ...]
    cost: float
    result: PlacementResult
    one_fewer: tuple[tuple[str, PlacementResult], ...]
    unservable: tuple[Pending, ...]
    searched: str
    replays: int


def _with(counts: tuple[int, ...], i: int, n: int) -> tuple[int, ...]:
    return (*counts[:i], n, *counts[i + 1 :])


class _Probes:
    """Replays by the nodes of each pool added: the last three used kept whole (each holds the fleet's state), what
    every one left pending kept, and how many were made."""

    def __init__(self, fleet: Fleet, pools: list[Pool], made: int = 0) -> None:
        self.fleet, self.pools, self.made = fleet, pools, made
        self.seen: OrderedDict[tuple[int, ...], PlacementResult] = OrderedDict()
        self.left: dict[tuple[int, ...], set[str]] = {}

    def replay(self, counts: tuple[int, ...]) -> PlacementResult:
        if counts not in self.seen:
            self.made += 1
            self.seen[counts] = self.fleet.with_pools(list(zip(self.pools, counts, strict=True)))
            self.left[counts] = {p.key for p in self.seen[counts].pending}
            if len(self.seen) > 3:
                self.seen.popitem(last=False)
        self.seen.move_to_end(counts)
        return self.seen[counts]

    def enough(self, counts: tuple[int, ...], refused: set[str] | frozenset[str]) -> bool:
        """Whether every pod the replay left pending is one no node of the pools serves."""
        if counts not in self.left:
            self.replay(counts)
        return self.left[counts] <= refused


@dataclass(frozen=True)
class _Mixed:
    """What the mix's search found: the nodes of each pool, the pods no pool serves, and the replays (None once
    sent from a copy: only their count crosses)."""

    counts: tuple[int, ...]
    refused: frozenset[str]
    made: int
    probes: _Probes | None


def _search_mix(fleet: Fleet, pools: list[Pool]) -> _Mixed:
    """`size_mix`'s search, up to the mix it finds (before weighing it against each pool alone)."""
    zero = fleet.with_pools([])
    waiting = fleet.pending_models(zero)
    refused = set.intersection(*(_never(fleet, pool, waiting) for pool in pools))  # no pool's empty node takes them
    probes = _Probes(fleet, pools)
    servable = [p for p in waiting if p.key not in refused]
    packed = _pack(fleet, pools, servable)
    counts = tuple(min(packed[p.name], p.max) for p in pools)
    short = [(0, _asked(servable))]  # nodes added in all, and the GPU memory left pending
    while not probes.enough(counts, refused):  # short: pack what stays pending again, each pool at most its max
        still = [p for p in fleet.pending_models(probes.replay(counts)) if p.key not in refused]
        short.append((sum(counts), _asked(still)))
        more = _pack(fleet, pools, still)
        # the packing spread over the pools as it packed, as far as the line through the last two counts goes
        scale = max(1.0, _secant(short) / max(1, sum(more.values())))
        topped = tuple(min(c + math.floor(more[p.name] * scale), p.max) for p, c in zip(pools, counts, strict=True))
        if topped == counts:  # every pool at its max, or none takes what is left: the rest is unservable
            refused |= probes.left[counts]
            break
        counts = topped
    dearest = sorted(range(len(pools)), key=lambda i: -pools[i].cost)
    changed = True
    while changed:
        changed = False
        for i in dearest:
            base = counts

            def enough_at(n: int, base: tuple[int, ...] = base, i: int = i) -> bool:
                return n >= 0 and probes.enough(_with(base, i, n), refused)

            fewest = _least(-1, counts[i], enough_at)
            if fewest < counts[i]:
                counts, changed = _with(counts, i, fewest), True
    return _Mixed(counts, frozenset(refused), probes.made, probes)


def size_mix(fleet: Fleet, pools: list[Pool], alone: list[Sizing], found: _Mixed | None = None) -> Blend | None:
    """The cheapest mix of pools found after which every pending pod some pool serves schedules (None with fewer
    than two pools). Searched so: a first-fit packing over all pools (a pod no open node takes opens a node of the
    cheapest pool accepting it), topped up while pods stay pending; then each pool's nodes, the dearest pool first,
    taken off while every servable pod still schedules (down in growing steps, then bisected), passes repeated until
    none goes; the mix is then weighed against each pool sized alone, and the cheaper kept (its replays are the
    pool's own). `found`: the search made already (`size_all`, in a copy)."""
    if len(pools) < 2:
        return None
    found = found or _search_mix(fleet, pools)
    counts, refused = found.counts, found.refused
    probes = found.probes or _Probes(fleet, pools, found.made)
    cost = sum(p.cost * c for p, c in zip(pools, counts, strict=True))
    how = (
        "packed first-fit over all pools (cheapest pool first for a pod no open node takes), then each pool's "
        "nodes taken off, the dearest pool first, while every pod a pool serves still schedules"
    )
    best = next((s for s in sorted(alone, key=lambda s: s.cost) if {p.key for p in s.unservable} <= refused), None)
    if best is not None and best.cost <= cost:
        kept = next(i for i, p in enumerate(pools) if p.name == best.pool)
        counts = tuple(best.nodes if i == kept else 0 for i in range(len(pools)))
        cost = best.cost
        how += f"; pool {best.pool} alone costs no more and is kept"
        # its replays are the pool's own answer's: the same nodes added
        probes.seen[counts] = best.result
        if best.one_fewer is not None:
            probes.seen[_with(counts, kept, best.nodes - 1)] = best.one_fewer
    result = probes.replay(counts)
    fewer = tuple(
        (p.name, probes.replay(_with(counts, i, c - 1)))
        for i, (p, c) in enumerate(zip(pools, counts, strict=True))
        if c
    )
    used = tuple((p.name, c) for p, c in zip(pools, counts, strict=True) if c)
    return Blend(used, cost, result, fewer, _unservable(result, refused), how, probes.made)
