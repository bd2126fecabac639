"""Why a pending pod does not fit while GPU memory looks free, and which moves of running pods would make it fit.

GPU sharing fragments memory: a pod asking 8 GiB on one GPU stays pending on a fleet with 40 GiB free if no single
GPU has 8 GiB left. For each pending pod this measures the free memory it could use (on nodes whose labels and
taints let it in) against the largest free piece on one GPU, and searches the fewest running pods to move so that
it fits. A move is what a user does by hand: create the pod again pinned to its new node (a required node affinity
on `kubernetes.io/hostname`; the device plugin's GPU choice there is the extender's), then delete the original. So
the copy must itself pass every filter of the modelled scheduler where it goes, and its old place is freed only
after. Deleting a pod wakes the pending pods, as kube-scheduler's queue does on a pod deletion: those that now fit
bind at once, in queue order.

The search asks the simulation the placement ran (`gpushare.placement.Simulation`) on the state it left: its
filters, its device choice, and binds and deletions undone with a mark (no whole placement is run again per probe);
the plan for the whole pending set is then checked by replaying it from the inputs: the placement run again, each
move applied in order. What is printed is the replay's.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare.kube.documents import Objects, Source, from_objects
from gpushare.kube.workloads import WORKLOAD_KINDS
from gpushare.placement import Gpu, Mark, Node, Pending, PlacementResult, Pod, Semantics, Simulation
from gpushare.planner import MAX_MOVES

#: Candidate nodes whose pods are weighed exactly for one pending pod (the closest to fitting first).
_CANDIDATES = 64


@dataclass(frozen=True)
class Where:
    node: str
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Move:
    """A running pod moved: created again on `target.node` (the GPUs it gets there), then deleted from `source`."""

    pod: str
    source: Where
    target: Where
    #: The pending pod this move makes room for.
    reason: str


@dataclass(frozen=True)
class Fragmentation:
    """One pending pod: the free GPU memory it could use, the largest piece of it, and what would make it fit.

    Amounts are in memory units. `free` and `largest_free` count healthy GPUs on the nodes the pod may use (its
    node selector, affinity and tolerations let it in); `largest_on_node` is, for a pod spanning several GPUs, the
    most each of them could get on one node. `moves` are the fewest found after which it fits, from the fleet as
    it is (each pending pod asked alone); `why` says why none suffice (then `pool` names a pool that would serve
    it, where pools were given)."""

    namespace: str
    name: str
    per_gpu: int
    gpu_count: int
    free: int
    largest_free: int
    largest_on_node: int
    moves: tuple[Move, ...] | None
    why: str
    pool: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Step:
    """One move of a plan, and the pending pods that bound once its original was deleted (node of each)."""

    move: Move
    bound: tuple[tuple[str, str], ...]
    #: Pending pods that would each fit the freed room alone but did not bind because pods ahead of them in the
    #: queue took it first. kube-scheduler retries the pods a deletion wakes in an order its backoff decides (a pod
    #: refused more often waits longer), so any of these may take the room instead: the rest of the plan then
    #: differs from what is printed.
    contested: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """Moves for the whole pending set, in order, as the replay found them: what each bound, what stays pending."""

    steps: tuple[Step, ...]
    still_pending: tuple[str, ...]
    #: The replay agreed with the search move for move (False: the steps printed are the replay's, which differ).
    confirmed: bool


def _anti(pod: Pod) -> bool:
    return pod.pod_affinity is not None and bool(pod.pod_affinity.required_anti)


def _alike(pod: Pod) -> tuple[Any, ...] | None:
    """What decides where a pod fits, for pods that no rule between pods concerns (None: one does)."""
    if pod.pod_affinity or pod.hard_spread or pod.host_ports:
        return None
    return (pod.static_signature, pod.shape, pod.priority)


def _fewest(pods: list[Pod], deficit: int, room: int) -> list[Pod] | None:
    """The fewest of `pods` (largest share first) whose shares sum to `deficit` or more, each no larger than `room`
    (what another GPU has free); then each swapped for the smallest that keeps the sum, as small pods are easier
    to place elsewhere. None: even all of them fall short."""
    fitting = [p for p in pods if p.per_gpu <= room]
    taken, freed = [], 0
    for p in fitting:
        if freed >= deficit:
            break
        taken.append(p)
        freed += p.per_gpu
    if freed < deficit:
        return None
    for i, p in enumerate(taken):
        spare = [q for q in fitting if all(q is not t for t in taken) and freed - p.per_gpu + q.per_gpu >= deficit]
        if spare:
            smallest = min(spare, key=lambda q: (q.per_gpu, q.key))
            if smallest.per_gpu < p.per_gpu:
                taken[i], freed = smallest, freed - p.per_gpu + smallest.per_gpu
    return taken


class _Room:
    """The two GPUs with most free memory in the fleet: the most a pod taken off one GPU could find on another.
    Found among the nodes with the most room (`Node.room`, their largest free GPU within what is left at node level)."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        roomy = heapq.nlargest(2, nodes, key=lambda n: n.room)
        least = roomy[-1].room if roomy else 0
        frees = [(g.free, id(g)) for n in nodes if n.room >= least for g in n.gpus]
        self.top = heapq.nlargest(2, frees) + [(0, -1)] * 2

    def beside(self, gpu: Gpu) -> int:
        return self.top[1][0] if self.top[0][1] == id(gpu) else self.top[0][0]


class Layout:
    """The fleet's state after a placement (the simulation that ran it), with which of its bound pods may move and
    the pods still pending.

    Movable: the pods that were running before (not those the placement just bound), served by the modelled
    scheduler, holding GPU devices, not run by a DaemonSet (its controller would put it back on the same node)."""

    def __init__(self, fleet: Simulation, result: PlacementResult, running: Iterable[Pod] | None = None) -> None:
        self.fleet = fleet
        self.nodes: list[Node] = result.nodes
        self.by_name = {n.name: n for n in self.nodes}
        served = fleet.semantics.served_scheduler
        self.specs: dict[str, Pod] = {
            p.key: p
            for p in (fleet.running if running is None else running)
            if p.wants_gpu and p.scheduler_name == served and (p.owner is None or p.owner[0] != "DaemonSet")
        }
        self.moved: set[str] = set()
        self._eligible: dict[tuple[Any, ...], list[Node]] = {}
        #: Each node's largest healthy GPU (memory units): no move makes room beyond it.
        self.largest = {id(n): max((g.total for g in n.gpus if g.healthy), default=0) for n in self.nodes}
        models = {p.key: p for p in fleet.pending}
        self.pending: list[Pod] = [models[p.key] for p in result.pending if p.key in models]
        self.messages: dict[str, Pending] = {p.key: p for p in result.pending}
        self.result = result

    # --- what a pending pod sees -----------------------------------------------------------------------------------

    def eligible(self, pod: Pod) -> list[Node]:
        """The nodes whose labels, taints and spec let the pod in (what no move changes), kept per kind of pod."""
        found = self._eligible.get(pod.static_signature)
        if found is None:
            found = self._eligible[pod.static_signature] = self.fleet.eligible(pod)
        return found

    def fits(self, node: Node, pod: Pod) -> bool:
        return self.fleet.admits(pod, node)

    def movable(self, node: Node) -> dict[int, list[Pod]]:
        """The pods that may move off each GPU of `node` (by GPU index), largest share first."""
        found: dict[int, list[Pod]] = {}
        for p, gpus in zip(node.bound, node.held, strict=True):
            if p.key in self.specs and p.key not in self.moved:
                for gpu in gpus:
                    found.setdefault(gpu.index, []).append(p)
        for pods in found.values():
            pods.sort(key=lambda p: (-p.per_gpu, p.key))
        return found

    # --- the search --------------------------------------------------------------------------------------------

    def _freeing(self, node: Node, pod: Pod, limit: int, room: _Room) -> tuple[int, list[Gpu], list[Pod]] | None:
        """The fewest pods to take off `node`'s GPUs for `pod`'s share to fit on as many GPUs as it spans (each a pod
        some other GPU has room for), the GPUs needing fewest taken. None: no way within `limit`."""
        share, count = pod.per_gpu, max(pod.gpu_count, 1)
        costs: list[tuple[int, int, Gpu, list[Pod]]] = []
        movable = self.movable(node)
        for gpu in node.gpus:
            if not gpu.healthy or gpu.total < share:
                continue
            deficit = share - (gpu.total - gpu.used)
            taken = [] if deficit <= 0 else _fewest(movable.get(gpu.index, []), deficit, room.beside(gpu))
            if taken is not None and len(taken) <= limit:
                costs.append((len(taken), gpu.index, gpu, taken))
        if len(costs) < count:
            return None
        costs.sort(key=lambda c: (c[0], c[1]))
        chosen = costs[:count]
        pods: list[Pod] = []
        for _, _, _, taken in chosen:
            pods += [p for p in taken if all(p is not q for q in pods)]
        if not pods or len(pods) > limit:
            return None
        return len(pods), [c[2] for c in chosen], pods

    def _destination(self, pod: Pod, avoid: Node, keep: list[Gpu]) -> tuple[Node, tuple[int, ...]] | None:
        """Where a moved pod's copy goes: a node where every filter passes and the extender gives it none of the
        GPUs being freed; the node whose largest free piece is the smallest that holds it first, so that large
        free pieces stay whole."""
        copy = self.copy(pod)
        share = copy.per_gpu
        ranked = sorted((n for n in self.nodes if n.room >= share), key=lambda n: (n.room, n.name))
        freed = {g.index for g in keep}
        for node in ranked:
            if not self.fits(node, copy):
                continue
            gpus = self.fleet.devices(copy, node)
            if gpus and not (node is avoid and any(i in freed for i in gpus)):
                return node, gpus
        return None

    def copy(self, pod: Pod) -> Pod:
        """The moved pod as created again: its own spec, not yet bound."""
        return self.fleet.recreated(self.specs[pod.key])

    def search(self, pod: Pod, limit: int = MAX_MOVES) -> tuple[list[Move], Mark] | None:
        """The fewest moves found after which `pod` fits, applied on the nodes (rolling back to the mark undoes
        them)."""
        share, count = pod.per_gpu, max(pod.gpu_count, 1)
        ranked = []
        for node in self.eligible(pod):
            if self.largest[id(node)] < share:
                continue
            if count == 1:  # the least missing on one GPU: what its room lacks
                ranked.append((max(0, share - node.room), node.name, node))
                continue
            deficits = sorted(max(0, share - g.free) for g in node.gpus if g.healthy and g.total >= share)
            if len(deficits) >= count:
                ranked.append((sum(deficits[:count]), node.name, node))
        options = []
        room = _Room(self.nodes)
        for _, _, node in heapq.nsmallest(_CANDIDATES, ranked, key=lambda r: (r[0], r[1])):
            freeing = self._freeing(node, pod, limit, room)
            if freeing is None:
                continue
            if freeing[0] == 1:  # one move is the fewest there is: tried at once
                done = self._tried(pod, node, freeing[1], freeing[2])
                if done is not None:
                    return done
                continue
            options.append((freeing[0], node.name, node, freeing[1], freeing[2]))
        options.sort(key=lambda o: (o[0], o[1]))
        for _, _, node, keep, taking in options:
            done = self._tried(pod, node, keep, taking)
            if done is not None:
                return done
        return None

    def _tried(self, pod: Pod, node: Node, keep: list[Gpu], taking: list[Pod]) -> tuple[list[Move], Mark] | None:
        """The moves taking `taking` off `node` applied, if each finds a place and `pod` then fits there."""
        mark = self.fleet.mark()
        moves = self._moves(pod, node, keep, taking)
        if moves is not None and self.fits(node, pod):
            return moves, mark
        self.fleet.rollback(mark)
        return None

    def _moves(self, pod: Pod, node: Node, keep: list[Gpu], taking: list[Pod]) -> list[Move] | None:
        moves = []
        for victim in taking:
            found = self._destination(victim, node, keep)
            if found is None:
                return None
            target, gpus = found
            source = Where(node.name, tuple(g.index for g in node.devices_of(victim)))
            self.fleet.bind(self.copy(victim), target, gpus)
            self.fleet.unbind(victim, node)
            moves.append(Move(victim.key, source, Where(target.name, gpus), pod.key))
        return moves

    # --- applying moves, as the cluster would ----------------------------------------------------------------

    def apply(self, move: Move) -> tuple[list[tuple[str, str]], list[str]] | None:
        """The copy created on its node (None if it does not fit there now), the original deleted, and the pending
        pods that then fit the freed node bound there in queue order; with the pods that would each have fitted
        alone but found the room taken (the queue's order decides between them)."""
        source, target = self.by_name.get(move.source.node), self.by_name.get(move.target.node)
        original = None if source is None else next((p for p in source.bound if p.key == move.pod), None)
        if source is None or target is None or original is None:
            return None
        copy = self.copy(original)
        if not self.fits(target, copy):
            return None
        self.fleet.bind(copy, target)
        self.fleet.unbind(original, source)
        self.moved.add(move.pod)
        verdicts: dict[tuple[Any, ...], bool] = {}  # pods alike fit alone or not alike
        woken = []
        for waiting in self.pending:
            alike = _alike(waiting)
            fits = verdicts.get(alike) if alike is not None else None
            if fits is None:
                fits = self.fits(source, waiting)
                if alike is not None:
                    verdicts[alike] = fits
            if fits:
                woken.append(waiting)
        bound, taken, contested = [], set(), []
        for i, waiting in enumerate(woken):
            if i == 0 or self.fits(source, waiting):
                self.fleet.bind(waiting, source)
                self.pending.remove(waiting)
                bound.append((waiting.key, source.name))
                taken.add(_alike(waiting))
            elif _alike(waiting) is None or _alike(waiting) not in taken:  # one alike to it bound: either may
                contested.append(waiting.key)
        return bound, contested

    def measure(self, pod: Pod, nodes: Sequence[Node]) -> tuple[int, int, int]:
        """(free, largest free on one GPU, the most each of `gpu_count` GPUs of one node could get)."""
        count = max(pod.gpu_count, 1)
        free = sum(g.free for n in nodes for g in n.gpus)
        largest = max((g.free for n in nodes for g in n.gpus), default=0)
        on_node = 0
        for n in nodes:
            frees = sorted((g.free for g in n.gpus), reverse=True)
            if len(frees) >= count:
                on_node = max(on_node, frees[count - 1])
        return free, largest, on_node


def _why(layout: Layout, pod: Pod, eligible: Sequence[Node], limit: int) -> str:
    if not limit:
        return "moves not searched (at most 0 moves asked)"
    if not pod.wants_gpu:
        return "it asks no GPU memory: moving GPU pods does not change why it is pending"
    if not eligible:
        return "no node lets it in (node selector, affinity, taints): moves cannot change that"
    if not any(g.healthy and g.total >= pod.per_gpu for n in eligible for g in n.gpus):
        return f"no GPU of {pod.per_gpu} units on a node it may use, even empty"
    return f"no {limit} moves of running pods or fewer make room: {layout.messages[pod.key].message}"


def fragmentation(
    layout: Layout, limit: int = MAX_MOVES, pools: Iterable[tuple[str, set[str]]] = ()
) -> list[Fragmentation]:
    """Each pending pod alone: what it could use, and the fewest moves after which it fits (the fleet unchanged).
    `pools`: (pool name, keys of the pods it cannot serve), cheapest first, to name one for pods no move helps."""
    served = list(pools)
    answers: list[Fragmentation] = []
    alike: dict[tuple[Any, ...], tuple[list[Move] | None, str, tuple[int, int, int]]] = {}
    for pod in layout.pending:
        memo = _alike(pod)
        if memo is not None and memo in alike:
            moves, why, (free, largest, on_node) = alike[memo]
        else:
            eligible = layout.eligible(pod)
            measured = free, largest, on_node = layout.measure(pod, eligible)
            found = layout.search(pod, limit) if pod.wants_gpu and limit else None
            if found is not None:
                layout.fleet.rollback(found[1])
            moves = None if found is None else found[0]
            why = "" if moves is not None else _why(layout, pod, eligible, limit)
            if memo is not None:
                alike[memo] = (moves, why, measured)
        pool = None if moves is not None else next((name for name, cannot in served if pod.key not in cannot), None)
        answers.append(
            Fragmentation(
                pod.namespace,
                pod.name,
                pod.per_gpu,
                max(pod.gpu_count, 1),
                free,
                largest,
                on_node,
                None if moves is None else tuple(_renamed(m, pod.key) for m in moves),
                why,
                pool,
            )
        )
    return answers


def pending_now(fleet: Simulation, running: Iterable[Pod], limit: int = MAX_MOVES) -> list[Fragmentation]:
    """`fragmentation` on a simulation kept current (`gpushare watch`), whose running pods are `running` (as read,
    not as charged): its pending pods placed, each left pending measured and searched, then all of it rolled back."""
    mark = fleet.mark()
    try:
        return fragmentation(Layout(fleet, fleet.schedule(list(fleet.pending), draws=False), running), limit)
    finally:
        fleet.rollback(mark)


def _renamed(move: Move, reason: str) -> Move:
    return Move(move.pod, move.source, move.target, reason)


def plan(layout: Layout, limit: int = MAX_MOVES) -> list[Move]:
    """Moves for the whole pending set: each pending pod in queue order, the fewest moves found on the state the
    earlier moves left, applied as the cluster would (pods they free room for bind as they do)."""
    moves: list[Move] = []
    hopeless: set[tuple[Any, ...]] = set()  # pods alike to one no moves were found for
    for pod in list(layout.pending):
        if pod not in layout.pending or not pod.wants_gpu:
            continue
        memo = _alike(pod)
        if memo is not None and memo in hopeless:
            continue
        found = layout.search(pod, limit)
        if found is None:
            if memo is not None:
                hopeless.add(memo)
            continue
        layout.fleet.rollback(found[1])
        for move in found[0]:
            if layout.apply(move) is None:  # the search and the cluster's order disagree: stop this pod's moves
                break
            moves.append(move)
    return moves


def replay(layout: Layout, moves: Sequence[Move]) -> Plan:
    """The moves applied in order on a fleet placed afresh from the inputs: what each binds, what stays pending."""
    steps: list[Step] = []
    for move in moves:
        applied = layout.apply(move)
        if applied is None:
            return Plan(tuple(steps), tuple(p.key for p in layout.pending), False)
        steps.append(Step(move, tuple(applied[0]), tuple(applied[1])))
    return Plan(tuple(steps), tuple(p.key for p in layout.pending), True)


@dataclass(frozen=True)
class Defrag:
    """The fragmentation answers: each pending pod alone, then the plan for them all (the replay's)."""

    pending: tuple[Fragmentation, ...]
    plan: Plan
    #: The replay's placement: the fleet after the plan's moves and the pods they let bind.
    result: PlacementResult


def defragment(
    nodes: list[Source],
    existing: list[Source],
    pending: list[Source],
    semantics: Semantics,
    input_unit: str | None = None,
    limit: int = MAX_MOVES,
    pools: Iterable[tuple[str, set[str]]] = (),
) -> Defrag:
    """Place the fleet, answer for each pod left pending, plan moves for them all, and replay the plan: the
    placement run again on nodes made afresh from their manifests (the pods' models, which nothing changes, are
    read once), then each move applied in order."""
    fleet = Simulation.from_sources(nodes, existing, pending, semantics, input_unit)
    layout = Layout(fleet, fleet.run(draws=False))
    answers = fragmentation(layout, limit, pools)
    moves = plan(layout, limit) if answers and limit else []
    again = fleet.with_nodes()
    replayed = Layout(again, again.run(draws=False))
    return Defrag(tuple(answers), replay(replayed, moves), replayed.result)


def make_room(
    nodes: Objects,
    *,
    pods: Objects = (),
    existing: Objects = (),
    semantics: Semantics | None = None,
    input_unit: str | None = None,
    max_moves: int = MAX_MOVES,
) -> Defrag:
    """What would make room for the pending `pods` on `nodes` given the `existing` running pods: each pod left
    pending measured and its fewest moves, and the plan for them all (`defragment`, on plain objects)."""
    pending = [s for s in from_objects(pods, "pods") if s.kind in WORKLOAD_KINDS]
    return defragment(
        from_objects(nodes, "nodes"),
        from_objects(existing, "existing"),
        pending,
        semantics or Semantics(),
        input_unit,
        max_moves,
    )
