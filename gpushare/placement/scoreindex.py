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
from gpushare.placement import interpod, plugins, scoring
from gpushare.placement.model import Node, Pod, Semantics

#: (taint raw, node affinity raw, topology values of the non-hostname spread keys, has the hostname label,
#: ignored by spreading, matching pods per hostname constraint)
GroupKey = tuple[Any, ...]
Key = tuple[int, int, str, int]  # (-local score, -GPU room, name, node id)


class Group:
    """Nodes alike for the normalised plugins, by local score then GPU room then name."""

    __slots__ = ("caps", "keys")

    def __init__(self) -> None:
        self.keys: SortedList = SortedList()
        self.caps: SortedList = SortedList()

    def add(self, key: Key) -> None:
        self.keys.add(key)
        self.caps.add(-key[1])

    def remove(self, key: Key) -> None:
        self.keys.remove(key)
        self.caps.remove(-key[1])

    def fitting(self, r: int) -> int:
        """How many of the group's nodes have room for r."""
        return len(self.caps) - int(self.caps.bisect_left(r))

    def best(self, r: int) -> tuple[Key, int] | None:
        """The first node with room for r, and how many share its local score and have room for r."""
        keys = self.keys
        i, n = 0, len(keys)
        while i < n:
            key = keys[i]
            if -key[1] >= r:  # the roomiest node of this local score fits: the score's nodes that fit follow it
                return key, keys.bisect_left((key[0], -r + 1)) - i
            i = keys.bisect_left((key[0] + 1,))  # none of this local score fits: the next score
        return None


class View:
    """One kind of pod's groups over its node class, and for spreading pods the counts of the pods they spread
    away from."""

    def __init__(self, index: ScoreIndex, pod: Pod, members: Sequence[Node]) -> None:
        self.index = index
        self.pod = pod
        self.profile = index.semantics.scheduler
        self.spread = pod.spread
        self.host = [i for i, c in enumerate(pod.spread) if c.topology_key == ks.HOSTNAME_LABEL]
        self.zone = [i for i, c in enumerate(pod.spread) if c.topology_key != ks.HOSTNAME_LABEL]
        self.static: dict[int, tuple[Any, ...]] = {}
        self.entries: dict[int, tuple[GroupKey, Key]] = {}
        self.groups: dict[GroupKey, Group] = {}
        self.seen = len(index.log)
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
        """What the pod's kind reads of the node that never changes: raw taint and affinity scores, the local scores
        of images and avoidance, the spreading topology values."""
        found = self.static.get(node.id)
        if found is None:
            pod = self.pod
            keys = [c.topology_key for c in self.spread]
            found = self.static[node.id] = (
                scoring.intolerable_prefer_no_schedule(node, pod),
                scoring.preferred_affinity(node, pod),
                tuple(node.labels.get(keys[i]) for i in self.zone),
                ks.HOSTNAME_LABEL in node.labels,
                pod.spread_own and not all(k in node.labels for k in keys),
                self.w_image * scoring.image_score(node, pod) + self.w_avoid * scoring.avoid_score(node, pod),
            )
        return found

    def _standing(self, node: Node) -> tuple[GroupKey, Key] | None:
        pod = self.pod
        if plugins.resources_exhausted(node, pod):
            return None
        static = self._static(node)
        local = (
            static[5]
            + self.w_fit * scoring.least_allocated_score(node, pod.nz_cpu, pod.nz_memory, self.profile)
            + self.w_balanced * scoring.balanced_score(node, pod, self.profile)
        )
        counts = self.counts.get(node.id)
        hosts = tuple(counts[i] for i in self.host) if counts is not None else (0,) * len(self.host)
        return (*static[:5], hosts), (-local, -plugins.gpu_room(node), node.name, node.id)

    def _place(self, node: Node) -> None:
        """(Re)file a member node under its current group and key; a node that lacks resources for good leaves."""
        old = self.entries.get(node.id)
        new = self._standing(node)
        if old == new:
            return
        if old is not None:
            self.groups[old[0]].remove(old[1])
        if new is None:
            self.entries.pop(node.id, None)
            return
        self.entries[node.id] = new
        group = self.groups.get(new[0])
        if group is None:
            group = self.groups[new[0]] = Group()
        group.add(new[1])

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
            if node_id in self.entries:
                self._place(node)

    def copy_for(self, pod: Pod, nodes: Sequence[Node], candidates: Sequence[int] | None) -> View:
        """A view for a spreading selector: this view's groups (nobody matched yet), then the counts."""
        clone = View.__new__(View)
        clone.__dict__.update(self.__dict__)
        clone.pod, clone.spread = pod, pod.spread  # the same shape (keys, skews), this pod's selectors
        clone.entries = dict(self.entries)
        clone.groups = {key: _copy(group) for key, group in self.groups.items()}
        clone.counts, clone.counted_upto, clone.domains = {}, {}, Counter()
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
        found = []
        for key, group in self.groups.items():
            n = group.fitting(r)
            if n:
                best = group.best(r)
                assert best is not None
                found.append((key, n, best[0], best[1]))
        if not found:
            return None
        totals = self._normalised(found)
        top = max(totals)
        tied = [entry for entry, total in zip(found, totals, strict=True) if total == top]
        winner = min(entry[2][1:] for entry in tied)  # (-GPU room, name, id): `scoring.tie_break`
        return winner[2], sum(entry[3] for entry in tied)

    def _normalised(self, found: list[tuple[GroupKey, int, Key, int]]) -> list[int]:
        """Each group's total for its best node: the normalised plugins over the feasible groups, plus its local
        score."""
        taints = scoring.default_normalize([key[0] for key, *_ in found], reverse=True)
        affinities = scoring.default_normalize([key[1] for key, *_ in found], reverse=False)
        spread = self._spread_scores(found) if self.spread else [0] * len(found)
        return [
            self.w_taint * t + self.w_affinity * a + self.w_spread * s - best[0]
            for (_, _, best, _), t, a, s in zip(found, taints, affinities, spread, strict=True)
        ]

    def _spread_scores(self, found: list[tuple[GroupKey, int, Key, int]]) -> list[int]:
        constraints = self.spread
        keys = [c.topology_key for c in constraints]
        counted = [entry for entry in found if not entry[0][4]]
        hosts = sum(entry[1] for entry in counted)
        domains = [0] * len(constraints)
        for j, i in enumerate(self.zone):
            domains[i] = len({entry[0][2][j] or "" for entry in counted})
        weights = scoring.spread_weights(keys, hosts, domains)
        raw = []
        for key, *_ in found:
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
        return scoring.normalize_spread(raw, [key[4] for key, *_ in found])


def _copy(group: Group) -> Group:
    clone = Group()
    clone.keys = SortedList(group.keys)
    clone.caps = SortedList(group.caps)
    return clone


class ScoreIndex:
    """Views of the nodes per kind of pod, for upstream semantics; the engine records every bind here."""

    def __init__(self, nodes: list[Node], semantics: Semantics, pods: Sequence[Pod]) -> None:
        self.nodes = nodes
        self.semantics = semantics
        self.views: dict[tuple[Any, ...], View] = {}
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
        found.catch_up(self.nodes)
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
