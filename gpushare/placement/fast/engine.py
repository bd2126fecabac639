"""The fast engine: the same filter, score and bind steps as the reference, found through indexes.

- Nodes that pass the profile's static filters (labels, taints, spec) for a kind of pod form a class, computed once
  per kind.
- Per class and GPU count M, a segment tree over "what a node can give on each of M GPUs" holds, at
  each capacity, the nodes ordered by score; the best fitting node is a walk over O(log capacity)
  segments instead of a scan of the fleet. Candidates are confirmed by the very plugins the reference engine
  calls, so only the search differs. Where kube-scheduler's scores choose the node, `scoreindex` finds them.
- Binpack makes a node that just took a pod even more preferred, so the next identical pod (replicas
  come in a row) goes straight to it while it still fits and nothing else changed; index updates are
  deferred until a search needs them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from gpushare.placement import queue
from gpushare.placement.fast.scoreindex import ScoreIndex
from gpushare.placement.fast.searchindex import SearchIndex
from gpushare.placement.fast.segmenttree import CapacityIndex, Key, capacity_index
from gpushare.placement.framework import Cycle, Rejection
from gpushare.placement.model import Gpu, Node, Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.priorities import DisruptionBudget
from gpushare.placement.result import Assignment, Pending, PlacementResult
from gpushare.placement.sampling import Sampler


class NodeClass:
    """The nodes a kind of pod passes the static filter plugins on, with the rejections of the others."""

    def __init__(
        self, kind: str, members: list[Node], static: Counter[str], static_by_node: dict[int, Rejection]
    ) -> None:
        self.kind = kind
        self.static_by_node = static_by_node
        self.members = members
        self.static = static
        self.indexes: dict[tuple[Any, ...], CapacityIndex] = {}


class FastEngine:
    def __init__(self, nodes: list[Node], profile: Profile, explain: bool = False, pods: Sequence[Pod] = ()) -> None:
        self.nodes = nodes
        self.pods = pods
        #: kube-scheduler's scores, found per group of alike nodes (where the profile scores, with plugins the index
        #: holds: `ScoreIndex.of`)
        self.scored = ScoreIndex.of(nodes, profile, pods)
        self.profile = profile
        self.explain = explain
        self.limit = max((g.total for n in nodes for g in n.gpus), default=0)
        self.classes: dict[tuple[Any, ...], NodeClass] = {}
        self.entries: dict[int, list[CapacityIndex]] = {n.id: [] for n in nodes}
        self.indexed: dict[tuple[int, int], tuple[int, Key]] = {}  # (node id, id(index)) -> (cap, key) stored
        self.dirty: set[int] = set()
        self.version = 0
        self.memo: dict[tuple[Any, ...], tuple[int, int]] = {}  # (signature, shape) -> (version, node id)
        #: Bound pods with required anti-affinity: while there are any, every pod needs its Cycle.
        self.anti_affinity_bound = sum(
            1 for n in nodes for p in n.bound if p.pod_affinity is not None and p.pod_affinity.required_anti
        )
        self.pending_memo: dict[tuple[Any, ...], tuple[int, Pending]] = {}
        #: The highest priority of a pod preemption nominated (None: none): pods of at most that priority see it
        #: on its node, so the score index, which does not, cannot answer for them.
        self.nominated_floor: int | None = None
        self.unresolvable_memo: dict[tuple[Any, ...], tuple[int, int]] = {}
        #: Where kube-scheduler's search starts and stops on a large fleet (`sampling`), and the search node by node.
        self.sampler = Sampler(nodes, profile.scheduler) if profile.scored else None
        #: The same search for the pods the score index serves, over arrays in search order.
        self.searched = SearchIndex.of(self.sampler, self.scored)
        self.capable: dict[tuple[Any, ...], int] = {}
        #: Filter reasons whose status is UnschedulableAndUnresolvable (one per node that gives them).
        self.unresolvable_reasons = profile.unresolvable_reasons

    def key(self, node: Node) -> Key:
        assert self.profile.node_order is not None  # the capacity indexes serve profiles without scores
        score, name = self.profile.node_order(node)
        return (score, name, node.id)

    def node_class(self, pod: Pod) -> NodeClass:
        signature = pod.static_signature
        found = self.classes.get(signature)
        if found is None:
            members, static, by_node = [], Counter[str](), {}
            for node in self.nodes:
                rejected = self.profile.static_rejection(node, pod)
                if rejected is None:
                    members.append(node)
                else:
                    static.update(rejected.reasons)
                    by_node[node.id] = rejected
            found = self.classes[signature] = NodeClass(pod.gpu_kind, members, static, by_node)
        return found

    def index(self, cls: NodeClass, pod: Pod) -> CapacityIndex:
        slot = (pod.gpu_count, pod.cpu, pod.memory, pod.other)  # what a dropped node lacks for good
        found = cls.indexes.get(slot)
        if found is None:
            self.flush()
            found = cls.indexes[slot] = capacity_index(self.limit, pod.gpu_count, cls.kind)
            for node in cls.members:
                cap, key = self.profile.gpus.capacity(node, found.m, cls.kind), self.key(node)
                found.add(cap, key)
                self.entries[node.id].append(found)
                self.indexed[(node.id, id(found))] = (cap, key)
        return found

    def drop(self, index: CapacityIndex, node: Node) -> None:
        """Take a node out of an index for good (see CapacityIndex)."""
        self.flush()
        cap, key = self.indexed.pop((node.id, id(index)))
        index.remove(cap, key)
        self.entries[node.id].remove(index)

    def flush(self) -> None:
        """Bring the indexes up to date with the nodes that changed since the last search."""
        for node_id in self.dirty:
            node = self.nodes[node_id]
            key = self.key(node)
            caps: dict[tuple[int, str], int] = {}  # the node's indexes differ mostly in cpu and memory, not in these
            for index in self.entries[node_id]:
                slot = (node_id, id(index))
                old_cap, old_key = self.indexed[slot]
                cap = caps.get((index.m, index.kind), -1)
                if cap < 0:
                    cap = caps[(index.m, index.kind)] = self.profile.gpus.capacity(node, index.m, index.kind)
                if cap != old_cap or key != old_key:
                    index.remove(old_cap, old_key)
                    index.add(cap, key)
                    self.indexed[slot] = (cap, key)
        self.dirty.clear()

    def fits(self, node: Node, pod: Pod, cycle: Cycle | None = None) -> bool:
        """A member of the pod's class fits when the dynamic filter plugins pass."""
        return self.profile.dynamic_rejection(node, pod, cycle) is None

    def cycle(self, pod: Pod) -> Cycle | None:
        """The pod's counts of other pods, when a rule between pods applies to it (else None: the indexes serve)."""
        if not self.profile.needs_cycle(pod, self.anti_affinity_bound > 0):
            return None
        return self.profile.prefilter(pod, self.nodes)

    def best(self, pod: Pod, cls: NodeClass) -> Node | None:
        memo_key = pod.fit_key
        memo = self.memo.get(memo_key)
        if memo is not None and memo[0] == self.version and self.profile.semantics.placement == "binpack":
            node = self.nodes[memo[1]]
            if self.fits(node, pod):
                return node
        index = self.index(cls, pod)
        self.flush()
        spent = []
        chosen = None
        for key in index.ordered(pod.per_gpu if pod.wants_gpu else 0):
            node = self.nodes[key[2]]
            if self.fits(node, pod):
                chosen = node
                break
            if self.profile.resources.exhausted(node, pod):
                spent.append(node)
        for node in spent:
            self.drop(index, node)
        return chosen

    def pending(self, pod: Pod, cls: NodeClass, cycle: Cycle | None = None) -> Pending:
        memo_key = pod.fit_key
        memo = self.pending_memo.get(memo_key) if cycle is None else None
        if memo is not None and memo[0] == self.version:
            reasons, by_node = memo[1].reasons, memo[1].by_node
        elif not self.explain and cycle is None and self.scored is not None and self.serves(pod):
            reasons, by_node = tuple(sorted((cls.static + self.scored.reasons(pod, cls.members)).items())), ()
        else:
            why = Counter(cls.static)
            dynamic: dict[int, Rejection] = {}
            for node in cls.members:
                rejected = self.profile.dynamic_rejection(node, pod, cycle)
                if rejected is not None:  # always: no member fits, or the search would have found it
                    why.update(rejected.reasons)
                    dynamic[node.id] = rejected
            reasons = tuple(sorted(why.items()))
            by_node = ()
            if self.explain:
                by_node = tuple((n.name, cls.static_by_node.get(n.id) or dynamic[n.id]) for n in self.nodes)
        result = Pending(pod.namespace, pod.name, len(self.nodes), reasons, pod.per_gpu, by_node)
        if cycle is None:
            self.pending_memo[memo_key] = (self.version, result)
        return result

    def bind(self, node: Node, pod: Pod, best: bool = True, tied: int = 1, gpus: list[Gpu] | None = None) -> Assignment:
        """Charge the pod to the node, on `gpus` or those the device choice gives it; `best` says the node was the
        best choice, so the next identical pod may go straight to it (ack)."""
        if gpus is None:
            gpus = self.profile.gpus.choose_gpus(node, pod)
        node.add_pod(pod, gpus)
        if pod.pod_affinity is not None and pod.pod_affinity.required_anti:
            self.anti_affinity_bound += 1
        self.version += 1
        if self.scored is not None:
            self.scored.bound(node, pod)
        else:
            self.dirty.add(node.id)
            if best:
                self.memo[pod.fit_key] = (self.version, node.id)
        return Assignment(
            pod.namespace, pod.name, node.name, tuple((g.index, pod.per_gpu) for g in gpus), pod.core, tied
        )

    def search_cut(self, pod: Pod, cls: NodeClass) -> bool:
        """kube-scheduler's search for the pod may stop before the last node: more nodes than it looks for could
        pass its filters. Where no more than that many members of the pod's class could hold it even empty, every
        node is filtered, the start does not move, and the indexes answer as on a small fleet."""
        sampler = self.sampler
        if sampler is None or not sampler.cuts:
            return False
        key = (pod.static_signature, pod.node_gpu_mem, pod.cpu, pod.memory, pod.other)
        capable = self.capable.get(key)
        if capable is None:
            capable = self.capable[key] = sum(1 for n in cls.members if self.profile.resources.could_ever_fit(n, pod))
        return capable > sampler.wanted

    def serves(self, pod: Pod) -> bool:
        """The score index answers for the pod: it holds what decides its fit, and no nomination counts for it."""
        floor = self.nominated_floor
        return (floor is None or floor < pod.priority) and self.scored is not None and self.scored.serves(pod)

    def nominations_changed(self, highest: int | None) -> None:
        self.nominated_floor = highest
        self.version += 1

    def unresolvable(self, pod: Pod, pending: Pending) -> int:
        """Nodes that rejected the pending pod with UnschedulableAndUnresolvable (preemption's quiet case): those its
        class leaves out (static filters), and among the others those whose reason says so, or (from 1.34) where Fit
        rejects a request beyond what the node can allocate at all."""
        cls = self.node_class(pod)
        count = len(cls.static_by_node)
        count += sum(n for reason, n in pending.reasons if reason in self.unresolvable_reasons)
        if self.profile.scheduler.fit_unresolvable_beyond_allocatable:
            key = pod.fit_key
            memo = self.unresolvable_memo.get(key)
            if memo is None or memo[0] != self.version:
                beyond = 0
                for node in cls.members:
                    rejected = self.profile.dynamic_rejection(node, pod)
                    fit = rejected is not None and rejected.plugin == self.profile.resources.name
                    beyond += fit and self.profile.unresolvable(rejected, node, pod)
                memo = self.unresolvable_memo[key] = (self.version, beyond)
            count += memo[1]
        return count

    def evict(self, node: Node, pod: Pod) -> None:
        """Preemption deletes a bound pod: the node gives back what it held, and the indexes are made again (rare
        enough that rebuilding costs less than undoing)."""
        node.remove_pod(pod)
        if pod.pod_affinity is not None and pod.pod_affinity.required_anti:
            self.anti_affinity_bound -= 1
        self.version += 1
        self.scored = ScoreIndex.of(self.nodes, self.profile, self.pods)
        self.searched = SearchIndex.of(self.sampler, self.scored)
        for cls in self.classes.values():
            cls.indexes.clear()
        self.entries = {n.id: [] for n in self.nodes}
        self.indexed.clear()
        self.dirty.clear()

    def nominated(self, pod: Pod, name: str) -> Assignment | None:
        """evaluateNominatedNode: the pod nominated by preemption takes its node, unscored, if every filter and the
        extender pass there now."""
        for node in self.nodes:
            if node.name == name:
                if self.profile.rejection(node, pod, self.profile.prefilter(pod, self.nodes)) is None:
                    return self.bind(node, pod, best=False)
                return None
        return None

    def preset(self, pod: Pod) -> Assignment | Pending:
        """A pod created with spec.nodeName: bound at creation, past every filter (kube-scheduler never queues it);
        pending where no such node is."""
        for node in self.nodes:
            if node.name == pod.node:
                charged, gpus, _ = self.profile.bound_gpus(node, pod)
                return self.bind(node, charged, best=False, gpus=gpus)
        return Pending(pod.namespace, pod.name, 0, (), pod.per_gpu)

    def fixed(self, pod: Pod, name: str) -> Assignment | Pending:
        """--node-order replay: the pod goes to the named node if it fits there, else stays pending."""
        cycle = self.profile.prefilter(pod, self.nodes)
        for node in self.nodes:
            if node.name == name:
                rejected = self.profile.rejection(node, pod, cycle)
                if rejected is None:
                    return self.bind(node, pod, best=False)
                reasons = tuple(sorted(Counter(rejected.reasons).items()))
                by_node = ((node.name, rejected),) if self.explain else ()
                return Pending(pod.namespace, pod.name, 1, reasons, pod.per_gpu, by_node)
        return Pending(pod.namespace, pod.name, 0, (), pod.per_gpu)


def place(
    nodes: list[Node],
    pods: list[Pod],
    profile: Profile,
    node_order: dict[str, str] | None = None,
    explain: bool = False,
    tick: Callable[[], None] = lambda: None,
    budgets: Sequence[DisruptionBudget] = (),
    draws: bool = True,
    queue_mode: queue.QueueMode = "auto",
) -> PlacementResult:
    engine = FastEngine(nodes, profile, explain, pods)
    if engine.sampler is not None:
        engine.sampler.draws = draws
    result = PlacementResult(profile.semantics, nodes=nodes)
    order = node_order or {}

    def attempt(pod: Pod) -> Assignment | Pending:
        if pod.node is not None:
            return engine.preset(pod)
        cls = engine.node_class(pod)
        sampler = engine.sampler if engine.search_cut(pod, cls) else None
        if pod.key in order:
            if sampler is not None:  # the pod's real cycle searched as any other did
                sampler.advance(profile, pod, engine.cycle(pod))
            return engine.fixed(pod, order[pod.key])
        cycle = engine.cycle(pod)
        served = engine.scored is not None and cycle is None and engine.serves(pod)
        searched = engine.searched if sampler is not None and served and not explain else None
        if sampler is not None and (searched is None or not searched.serves(pod)):  # node by node
            sampled = sampler.schedule(profile, pod, cycle, explain)
            if isinstance(sampled, Pending):
                return sampled
            return engine.bind(sampled[0], pod, best=False, tied=sampled[1])
        if served and engine.scored is not None:
            found = engine.scored.choose(pod, cls.members) if searched is None else searched.schedule(pod, cls)
            if isinstance(found, Pending):
                return found
            if found is None:
                return engine.pending(pod, cls)
            return engine.bind(found[0], pod, best=False, tied=found[1])
        if profile.scored or cycle is not None:  # node by node
            fitting = [n for n in cls.members if engine.fits(n, pod, cycle)]
            if not fitting:
                return engine.pending(pod, cls, cycle)
            chosen, tied = profile.choose(pod, fitting, nodes)
            return engine.bind(chosen, pod, best=False, tied=tied)
        node = engine.best(pod, cls)
        return engine.pending(pod, cls) if node is None else engine.bind(node, pod)

    queue.drive(pods, attempt, profile, result, tick, order, engine, budgets, explain, queue_mode)
    return result
