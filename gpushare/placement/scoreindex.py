"""The fast engine's index for upstream semantics: kube-scheduler's scores computed per group of alike nodes.

A pod's total on a node is the sum of node-local parts (LeastAllocated, BalancedAllocation, ImageLocality,
NodePreferAvoidPods read the node's own numbers) and normalised parts (TaintToleration, NodeAffinity and
PodTopologySpread are scaled over the feasible nodes). For one kind of pod (a `View`: the same requests,
tolerations, preferences, images and spreading), nodes whose normalised parts read the same raw values form a
group, and a group keeps its nodes ordered by local score, then GPU room, then name: the best node of a group
that fits is found by bisection, the normalised parts are worked out once per group, and the nodes tied with the
winner are counted, not listed. Every score comes from `gpushare.placement.scoring`, so only the search differs
from the reference engine.

Views are brought up to date lazily: a bind records its node, and a view re-reads the nodes recorded since it
last looked. Pods that spread away from their own kind (a Deployment's replicas) get a view per selector, copied
from the view of their kind without the counts, so a new Deployment costs a copy, not a rebuild.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sortedcontainers import SortedList

from gpushare.domain import kubescheduler as ks
from gpushare.domain.labels import GPU_MEM
from gpushare.placement import interpod, plugins, scoring
from gpushare.placement.model import Node, Pod, Semantics

#: (taint raw, node affinity raw, topology values of the non-hostname spread keys, has the hostname label,
#: ignored by spreading, matching pods per hostname constraint)
GroupKey = tuple[Any, ...]
Key = tuple[Any, ...]  # (-local score, -GPU room, name, node id)


class Group:
    """Nodes alike for the normalised plugins, keyed by local score, then GPU room, then name; with `counting`, also
    their GPU rooms in order, to count the nodes that fit (spreading weighs by it)."""

    __slots__ = ("caps", "keys")

    def __init__(self, counting: bool) -> None:
        self.keys: SortedList = SortedList()
        self.caps: SortedList | None = SortedList() if counting else None

    def add(self, key: Key) -> None:
        self.keys.add(key)
        if self.caps is not None:
            self.caps.add(-key[1])

    def remove(self, key: Key) -> None:
        self.keys.remove(key)
        if self.caps is not None:
            self.caps.remove(-key[1])

    def top(self) -> Key:
        """The best key of any node in the group, fitting or not (a bound on what the group can score)."""
        return self.keys[0]  # type: ignore[no-any-return]

    def fitting(self, r: int) -> int:
        """How many of the group's nodes have room for r (a counting group's)."""
        assert self.caps is not None
        return len(self.caps) - int(self.caps.bisect_left(r))

    def best(self, r: int) -> tuple[Key, int] | None:
        """The first node with room for r, and how many share its local score and have room for r. Within a local
        score the roomiest node comes first: when it has no room, none of that score has, and the next score is
        tried."""
        keys = self.keys
        i, n = 0, len(keys)
        while i < n:
            key = keys[i]
            if -key[1] >= r:
                return key, int(keys.bisect_left((key[0], -r + 1))) - i
            i = keys.bisect_left((key[0] + 1,))
        return None


class View:
    """One kind of pod's groups over its node class, and for spreading pods the counts of the pods they spread
    away from."""

    def __init__(self, index: ScoreIndex, pod: Pod, members: Sequence[Node]) -> None:
        self.index = index
        self.pod = pod
        self.profile = index.semantics.scheduler
        self.spread = pod.spread
        self.keys = [c.topology_key for c in pod.spread]
        self.host = [i for i, c in enumerate(pod.spread) if c.topology_key == ks.HOSTNAME_LABEL]
        self.zone = [i for i, c in enumerate(pod.spread) if c.topology_key != ks.HOSTNAME_LABEL]
        self.static: dict[int, tuple[Any, ...]] = {}
        self.entries: dict[int, tuple[GroupKey, Key, int]] = {}  # (group, key, GPU memory left at node level)
        #: members that lack resources for good: why (NodeResourcesFit's words), for pending pods' messages
        self.lacking: Counter[str] = Counter()
        self.lack_of: dict[int, tuple[tuple[str, ...], int]] = {}  # (reasons, GPU memory left at node level)
        #: GPU memory left at node level of the members and of the dropped, ordered; kept once a pod of this kind
        #: was pending (None before), to count which nodes lack GPU memory at node level
        self.node_free: SortedList | None = None
        self.lack_free: SortedList | None = None
        self.groups: dict[GroupKey, Group] = {}
        self.seen = len(index.log)
        self.infeasible: dict[int, int] = {}  # request -> `seen` when no member had room for it
        self.cache: tuple[int, dict[GroupKey, tuple[int, Key, int]]] | None = None  # (request, `_feasible`)
        self.touched: set[GroupKey] = set()  # groups a node left or joined since `_feasible` last looked
        self.born = index.sequence
        #: spreading views only (`counting`): matching pods per constraint on each node, and per domain
        self.counting = False
        self.counts: dict[int, list[int]] = {}
        self.counted_upto: dict[int, int] = {}
        self.domains: Counter[tuple[str, str]] = Counter()
        weights = dict(self.profile.weights)
        self.w_taint = weights.get(ks.TAINT_TOLERATION, 0)
        self.w_affinity = weights.get(ks.NODE_AFFINITY, 0)
        self.w_spread = weights.get(ks.POD_TOPOLOGY_SPREAD, 0)
        self.w_fit = weights.get(ks.NODE_RESOURCES_FIT, 0) + weights.get(ks.LEAST_ALLOCATED, 0)
        self.w_balanced = weights.get(ks.BALANCED_ALLOCATION, 0)
        self.w_image = weights.get(ks.IMAGE_LOCALITY, 0)
        self.w_avoid = weights.get(ks.PREFER_AVOID_PODS, 0)
        for node in members:
            self._place(node)

    # --- a node's standing ---------------------------------------------------------------------------------------

    def _static(self, node: Node) -> tuple[Any, ...]:
        """What the pod's kind reads of the node that never changes: its group before any spreading count (raw taint
        and affinity scores, the spreading topology values...), and the local scores of images and avoidance."""
        found = self.static.get(node.id)
        if found is None:
            pod = self.pod
            keys = [c.topology_key for c in self.spread]
            group = (
                scoring.intolerable_prefer_no_schedule(node, pod),
                scoring.preferred_affinity(node, pod),
                tuple(node.labels.get(keys[i]) for i in self.zone),
                ks.HOSTNAME_LABEL in node.labels,
                pod.spread_own and not all(k in node.labels for k in keys),
                (0,) * len(self.host),
            )
            local = self.w_image * scoring.image_score(node, pod) + self.w_avoid * scoring.avoid_score(node, pod)
            found = self.static[node.id] = (group, *group[:5], local)
        return found

    def _standing(self, node: Node) -> tuple[GroupKey, Key, int] | None:
        pod = self.pod
        if plugins.resources_exhausted(node, pod):
            return None
        static = self.static.get(node.id) or self._static(node)
        local = static[6]
        if self.w_fit:
            local += self.w_fit * scoring.least_allocated_score(node, pod.nz_cpu, pod.nz_memory, self.profile)
        if self.w_balanced:
            local += self.w_balanced * scoring.balanced_score(node, pod, self.profile)
        counts = self.counts.get(node.id) if self.counting else None
        group = static[0] if counts is None else (*static[0][:5], tuple(counts[i] for i in self.host))
        return group, (-local, -node.room, node.name, node.id), node.gpu_mem - node.gpu_mem_used

    def _place(self, node: Node) -> None:
        """(Re)file a member node under its current group and key; a node that lacks resources for good leaves, and
        what it lacks is kept up to date."""
        if node.id in self.lack_of:
            self._lacks(node)
            return
        old = self.entries.get(node.id)
        new = self._standing(node)
        if old == new and new is not None:
            return
        if old is not None:
            self.groups[old[0]].remove(old[1])
            self.touched.add(old[0])
            if self.node_free is not None:
                self.node_free.remove(old[2])
        if new is None:
            self.entries.pop(node.id, None)
            self._lacks(node)
            return
        self.entries[node.id] = new
        group = self.groups.get(new[0])
        if group is None:
            group = self.groups[new[0]] = Group(bool(self.spread))
        group.add(new[1])
        self.touched.add(new[0])
        if self.node_free is not None:
            self.node_free.add(new[2])

    def _lacks(self, node: Node) -> None:
        old = self.lack_of.get(node.id)
        if old is not None:
            self.lacking.subtract(old[0])
            if self.lack_free is not None:
                self.lack_free.remove(old[1])
        reasons = tuple(plugins.lacking(node, self.pod))
        self.lack_of[node.id] = reasons, node.gpu_mem - node.gpu_mem_used
        self.lacking.update(reasons)
        if self.lack_free is not None:
            self.lack_free.add(node.gpu_mem - node.gpu_mem_used)

    def reasons(self, r: int) -> Counter[str]:
        """Why no member takes a request of r, per reason as FitError counts them: what the dropped members lack,
        then GPU memory at node level (NodeResourcesFit) or on one device (the extender)."""
        if self.node_free is None or self.lack_free is None:
            self.node_free = SortedList(entry[2] for entry in self.entries.values())
            self.lack_free = SortedList(free for _, free in self.lack_of.values())
        why = Counter({reason: n for reason, n in self.lacking.items() if n})
        short = int(self.node_free.bisect_left(r))
        lacking_too = int(self.lack_free.bisect_left(r)) if r else 0
        if short + lacking_too:
            why[f"Insufficient {GPU_MEM}"] += short + lacking_too
        if len(self.entries) - short:
            why[plugins.GPU_ONE_DEVICE] += len(self.entries) - short
        return why

    # --- spreading counts ----------------------------------------------------------------------------------------

    def count_from(self, nodes: Sequence[Node], candidates: Sequence[int] | None) -> None:
        """Count the pods each constraint matches on every node (only `candidates` can hold any)."""
        for node_id in sorted(set(candidates)) if candidates is not None else range(len(nodes)):
            self.counted_upto[node_id] = 0
            self._recount(nodes[node_id])

    def _recount(self, node: Node) -> None:
        pod, profile = self.pod, self.profile
        start = self.counted_upto.get(node.id)
        if start is None:  # not counted yet: the pods bound before the view was made had none to count (`copy_for`)
            start = self.index.bound_before(node, self.born)
        new = node.bound[start:]
        self.counted_upto[node.id] = len(node.bound)
        if not new:
            return
        counts = self.counts.setdefault(node.id, [0] * len(self.spread))
        keys = [c.topology_key for c in self.spread]
        required = not pod.spread_own or all(k in node.labels for k in keys)
        for i, c in enumerate(self.spread):
            if c.selector.empty:
                continue
            found = sum(1 for p in new if p.namespace == pod.namespace and c.selector.matches(p.label_map))
            if not found:
                continue
            counts[i] += found
            if i in self.zone and required and interpod.included(node, pod, c, profile):
                self.domains[(c.topology_key, node.labels.get(c.topology_key, ""))] += found

    # --- lazily up to date ----------------------------------------------------------------------------------------

    def catch_up(self, nodes: Sequence[Node]) -> None:
        log = self.index.log
        if self.seen == len(log):
            return
        changed = set(log[self.seen :])
        self.seen = len(log)
        for node_id in changed:
            node = nodes[node_id]
            if self.counting:
                self._recount(node)
            if node_id in self.entries or node_id in self.lack_of:
                self._place(node)

    def copy_for(self, pod: Pod, nodes: Sequence[Node], candidates: Sequence[int] | None) -> View:
        """A view for a spreading selector: this view's groups (nobody matched yet), then the counts."""
        clone = View.__new__(View)
        clone.__dict__.update(self.__dict__)
        clone.pod, clone.spread = pod, pod.spread  # the same shape (keys, skews), this pod's selectors
        clone.entries, clone.lack_of = dict(self.entries), dict(self.lack_of)
        clone.lacking, clone.node_free, clone.lack_free = Counter(self.lacking), None, None
        clone.groups = {key: _copy(group) for key, group in self.groups.items()}
        clone.counts, clone.counted_upto, clone.domains, clone.infeasible = {}, {}, Counter(), {}
        clone.cache, clone.touched = None, set()
        clone.born, clone.counting = self.index.sequence, True
        clone.count_from(nodes, candidates)
        for node_id in list(clone.counts):
            if node_id in clone.entries:
                clone._place(nodes[node_id])
        return clone

    # --- the choice ----------------------------------------------------------------------------------------------

    def choose(self, pod: Pod) -> tuple[int, int] | None:
        """(node id, tied nodes) for the pod, or None when no member fits."""
        r = pod.gpu_mem
        if self.infeasible.get(r) == self.seen:
            return None
        entries = self._feasible(r)
        if not entries:
            self.infeasible[r] = self.seen
            return None
        if len(entries) == 1:  # one group: its best node wins, the normalised parts alike
            ((_, best, ties),) = entries.values()
            return best[3], ties
        feasible = list(entries.items())
        norms = self._normalised([(key, n) for key, (n, _, _) in feasible])
        totals = [norm - best[0] for norm, (_, (_, best, _)) in zip(norms, feasible, strict=True)]
        top = max(totals)
        tied = [entry for entry, total in zip(feasible, totals, strict=True) if total == top]
        winner = min(best[1:] for _, (_, best, _) in tied)  # (-GPU room, name, id): `scoring.tie_break`
        return winner[2], sum(ties for _, (_, _, ties) in tied)

    def _feasible(self, r: int) -> dict[GroupKey, tuple[int, Key, int]]:
        """The groups with a node that has room for r: (nodes that have, the best of them, its ties). Kept for the
        last request asked: the next pod of the same kind re-asks only the groups a bind changed since."""
        cached = self.cache
        if cached is None or cached[0] != r:
            entries: dict[GroupKey, tuple[int, Key, int]] = {}
            for key, group in self.groups.items():
                entry = self._entry(group, r)
                if entry is not None:
                    entries[key] = entry
            self.cache = (r, entries)
        else:
            entries = cached[1]
            for key in self.touched:
                entry = self._entry(self.groups[key], r)
                if entry is None:
                    entries.pop(key, None)
                else:
                    entries[key] = entry
        self.touched.clear()
        return entries

    def _entry(self, group: Group, r: int) -> tuple[int, Key, int] | None:
        best = group.best(r)
        if best is None:
            return None
        return (group.fitting(r) if self.spread else 0), best[0], best[1]

    def _normalised(self, feasible: list[tuple[GroupKey, int]]) -> list[int]:
        """Each feasible group's normalised plugins, weighted and summed: over the feasible groups, as kube-scheduler
        normalises over the feasible nodes."""
        taints = scoring.default_normalize([key[0] for key, _ in feasible], reverse=True)
        affinities = scoring.default_normalize([key[1] for key, _ in feasible], reverse=False)
        spread = self._spread_scores(feasible) if self.spread else [0] * len(feasible)
        return [
            self.w_taint * t + self.w_affinity * a + self.w_spread * sp
            for t, a, sp in zip(taints, affinities, spread, strict=True)
        ]

    def _spread_scores(self, feasible: list[tuple[GroupKey, int]]) -> list[int]:
        constraints = self.spread
        keys = self.keys
        counted = [(key, n) for key, n in feasible if not key[4]]
        domains = [0] * len(constraints)
        for j, i in enumerate(self.zone):
            domains[i] = len({key[2][j] or "" for key, _ in counted})
        weights = scoring.spread_weights(keys, sum(n for _, n in counted), domains)
        raw = []
        for key, _ in feasible:
            if key[4]:
                raw.append(0)
                continue
            values: list[str | None] = [None] * len(constraints)
            counts = [0] * len(constraints)
            for j, i in enumerate(self.host):
                values[i], counts[i] = ("" if key[3] else None), key[5][j]
            for j, i in enumerate(self.zone):
                values[i] = key[2][j]
                counts[i] = self.domains.get((keys[i], key[2][j] or ""), 0)
            raw.append(scoring.spread_raw(constraints, values, counts, weights, self.profile))
        return scoring.normalize_spread(raw, [key[4] for key, _ in feasible])


def _copy(group: Group) -> Group:
    clone = Group(False)
    clone.keys = SortedList(group.keys)
    clone.caps = SortedList(group.caps) if group.caps is not None else None
    return clone


class ScoreIndex:
    """Views of the nodes per kind of pod, for upstream semantics; the engine records every bind here."""

    def __init__(self, nodes: list[Node], semantics: Semantics, pods: Sequence[Pod]) -> None:
        self.nodes = nodes
        self.semantics = semantics
        self.limit = max((g.total for n in nodes for g in n.gpus), default=0)  # the most room a node can have
        self.views: dict[tuple[Any, ...], View] = {}
        self.by_template: dict[int, View] = {}
        self.log: list[int] = []
        self.sequence = 0
        #: per node: how many pods were bound before the index, and the sequence number of each bound since
        self.sequences: list[list[int]] = [[] for _ in nodes]
        self.initial = [len(n.bound) for n in nodes]
        #: label (key, value) -> nodes whose bound pods carry it, for a new spreading view to count from
        self.by_label: dict[tuple[str, str], list[int]] = {}
        for node in nodes:
            for bound in node.bound:
                self._file(node, bound)
        #: Pod affinity anywhere makes InterPodAffinity's score depend on other pods' domains: then every pod is
        #: scored node by node (the reference's way), as are pods the groups cannot hold (see `serves`).
        self.pod_affinity = any(p.pod_affinity is not None for p in pods) or any(
            b.pod_affinity is not None for n in nodes for b in n.bound
        )

    def serves(self, pod: Pod) -> bool:
        """Pods whose fit is GPU room plus resources the node keeps for good: no larger node-level GPU request from an
        init container, no compute request, no pod affinity in the run."""
        return not self.pod_affinity and pod.node_gpu_mem == pod.gpu_mem and not pod.node_core

    def _file(self, node: Node, pod: Pod) -> None:
        for pair in pod.labels:
            self.by_label.setdefault(pair, []).append(node.id)

    def bound(self, node: Node, pod: Pod) -> None:
        """A pod was bound to the node: views re-read it when next asked."""
        self.log.append(node.id)
        self.sequence += 1
        self.sequences[node.id].append(self.sequence)
        self._file(node, pod)

    def bound_before(self, node: Node, sequence: int) -> int:
        """How many pods the node held when the index's sequence stood at `sequence`."""
        return self.initial[node.id] + bisect_right(self.sequences[node.id], sequence)

    def view(self, pod: Pod, members: Sequence[Node]) -> View:
        found = self.by_template.get(pod.template) if pod.template else None
        if found is None:
            found = self._view(pod, members)
            if pod.template:
                self.by_template[pod.template] = found
        found.catch_up(self.nodes)
        return found

    def _view(self, pod: Pod, members: Sequence[Node]) -> View:
        shape = (
            pod.static_signature,
            pod.cpu,
            pod.memory,
            pod.nz_cpu,
            pod.nz_memory,
            pod.other,
            pod.preferred,
            pod.images,
            pod.owner,
            tuple((c.topology_key, c.max_skew, c.honor_affinity, c.honor_taints) for c in pod.spread),
            pod.spread_own,
        )
        selector = (pod.namespace, tuple(c.selector for c in pod.spread)) if pod.spread else None
        found = self.views.get((shape, selector))
        if found is None:
            base = self.views.get((shape, None))
            if base is None:
                base = self.views[(shape, None)] = View(self, pod, members)
            base.catch_up(self.nodes)
            if selector is None:
                found = base
            else:
                found = self.views[(shape, selector)] = base.copy_for(pod, self.nodes, self._candidates(pod))
        return found

    def _candidates(self, pod: Pod) -> list[int] | None:
        """Nodes that can hold pods the pod's spreading selectors match (None: any node)."""
        result: list[int] = []
        for c in pod.spread:
            anchor = c.selector.anchor
            if anchor is None:
                return None
            result += self.by_label.get(anchor, ())
        return result

    def choose(self, pod: Pod, members: Sequence[Node]) -> tuple[Node, int] | None:
        chosen = self.view(pod, members).choose(pod)
        return None if chosen is None else (self.nodes[chosen[0]], chosen[1])

    def reasons(self, pod: Pod, members: Sequence[Node]) -> Counter[str]:
        """Why the pod fits none of its class's members (the class adds its own static reasons)."""
        return self.view(pod, members).reasons(pod.gpu_mem)
