"""The fast engine's index where kube-scheduler's scores choose the node: the scores computed per group of alike nodes.

A pod's total on a node is the sum of node-local parts (plugins whose `score_hook` is `LOCAL` or `USAGE`, such as
LeastAllocated, BalancedAllocation, ImageLocality: they read the node's own numbers) and normalised parts (`GROUPED`,
such as TaintToleration and NodeAffinity, and `SPREAD`, PodTopologySpread: scaled over the feasible nodes). For one
kind of pod (a `View`: the same requests, and the same `pod_key` for every score plugin), nodes whose normalised
parts read the same raw values form a group, and a group keeps its nodes ordered by local score, then GPU room, then
name: the best node of a group that fits is found by bisection, the normalised parts are worked out once per group,
and the nodes tied with the winner are counted, not listed. Every score comes from the plugins themselves, through
their hooks (`framework.Plugin`), so only the search differs from the reference engine; a profile with a score
plugin that declares no hook gets no score index (`ScoreIndex.of`), and is searched node by node.

Pods that spread away from their own kind (a Deployment's replicas) read, besides, how many pods their selector
matches on each node and in each domain: a `Spread` per selector keeps those counts and moves the nodes that hold
any such pod out of the view's groups into groups of their own, by count. A new Deployment costs a `Spread`
without any node in it, not a copy of the view.

Everything is brought up to date lazily: a bind records its node, and a view or spread re-reads the nodes
recorded since it last looked. Each group has a version; the answer for a request is kept per group and
recomputed only for the groups a bind changed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any

from gpushare.domain import kubescheduler as ks
from gpushare.domain.labels import GPU_MEM
from gpushare.placement.framework import GROUPED, LOCAL, SPREAD, USAGE, Plugin
from gpushare.placement.model import Node, Pod
from gpushare.placement.pluginsets import Profile

#: (the `GROUPED` plugins' raw scores, topology values of the non-hostname spread keys, has the hostname label,
#: ignored by spreading, matching pods per hostname constraint)
GroupKey = tuple[Any, ...]
#: A node's place in a group: (-local score, -GPU room, name, node id) as one int (see `Ranking`)
Key = int
#: Views kept at once: each holds every node of its class, so a run of pods each unlike the others (distinct
#: requests and images, as `kubectl get pods` lists them) would otherwise keep one per pod.
MAX_VIEWS = 256
#: One feasible group's answer for a request: (nodes with room for it, the best of them, how many tie with it)
Entry = tuple[int, Key, int]


class Ranking:
    """A node's order in a group, (-local score, -GPU room, name, node id), packed in one int: a group's keys are
    kept sorted, and bisecting ints costs a third of bisecting tuples (most of a bind's time was those compares).

    key = -local * rooms * n + (most room - room) * n + rank, where rank orders the nodes by (name, id): every
    part below the local score lies in [0, rooms * n), so ints order as the tuples did."""

    __slots__ = ("ids", "most", "n", "rank", "span")

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.n = max(1, len(nodes))
        #: no device holds more than the largest: a node's room never exceeds it (`Node.refresh_room`)
        self.most = max((g.total for node in nodes for g in node.gpus), default=0)
        self.span = (self.most + 1) * self.n
        self.ids = [node.id for node in sorted(nodes, key=lambda node: (node.name, node.id))]
        self.rank = [0] * len(nodes)  # node ids number the fleet's nodes from 0
        for rank, node_id in enumerate(self.ids):
            self.rank[node_id] = rank

    def key(self, local: int, node: Node) -> Key:
        return -local * self.span + (self.most - node.room) * self.n + self.rank[node.id]

    def room(self, key: Key) -> int:
        return self.most - key % self.span // self.n

    def node_id(self, key: Key) -> int:
        return self.ids[key % self.n]

    def local(self, key: Key) -> int:
        return -(key // self.span)

    def first(self, local: int, room: int | None = None) -> Key:
        """The least key of a local score, or (with `room`) the least of those of it whose GPU room is at most that."""
        below = 0 if room is None else max(0, self.most - room)
        return -local * self.span + below * self.n

    def tie_break(self, key: Key) -> int:
        """The key without its local score: (-GPU room, name, id), `framework.tie_break`."""
        return key % self.span


class Group:
    """Nodes alike for the normalised plugins, by local score, then GPU room, then name, and their rooms in order
    (to count the nodes that fit). `version` changes with every node that joins or leaves.

    Plain sorted lists: a group holds at most the fleet's nodes, and at that size `bisect.insort` and `del` (one
    memmove in C) cost less than a balanced structure's Python steps."""

    __slots__ = ("caps", "ids", "keys", "ranking", "version")

    def __init__(self, ranking: Ranking) -> None:
        self.ranking = ranking
        self.keys: list[Key] = []
        self.caps: list[int] = []
        self.ids: set[int] = set()
        self.version = 0

    def add(self, key: Key) -> None:
        insort(self.keys, key)
        insort(self.caps, self.ranking.room(key))
        self.ids.add(self.ranking.node_id(key))
        self.version += 1

    def remove(self, key: Key) -> None:
        keys, caps = self.keys, self.caps
        del keys[bisect_left(keys, key)]
        del caps[bisect_left(caps, self.ranking.room(key))]
        self.ids.discard(self.ranking.node_id(key))
        self.version += 1

    def fitting(self, r: int) -> int:
        """How many nodes have room for r."""
        caps = self.caps
        return len(caps) - bisect_left(caps, r)

    def ties(self, key: Key, r: int) -> int:
        """How many nodes share the key's local score and have room for r."""
        keys, ranking = self.keys, self.ranking
        local = ranking.local(key)
        return bisect_left(keys, ranking.first(local, r - 1)) - bisect_left(keys, ranking.first(local))

    def best(self, r: int, skip: set[int] | frozenset[int] = frozenset()) -> Key | None:
        """The first node with room for r whose id is not in `skip`. Within a local score the roomiest node comes
        first: when it has no room, none of that score has, and the next score is tried."""
        keys, ranking = self.keys, self.ranking
        i, n = 0, len(keys)
        while i < n:
            key = keys[i]
            if ranking.room(key) < r:  # none of this local score has room: the next (lower) score
                i = bisect_left(keys, ranking.first(ranking.local(key) - 1), i)
            elif ranking.node_id(key) in skip:
                i += 1
            else:
                return key
        return None

    def entry(self, r: int) -> Entry | None:
        best = self.best(r)
        return None if best is None else (self.fitting(r), best, self.ties(best, r))


class View:
    """One kind of pod's groups over its node class, and what its members lack when they cannot take it."""

    def __init__(self, index: ScoreIndex, pod: Pod, members: Sequence[Node]) -> None:
        self.index = index
        self.pod = pod
        #: the shape spread over (where the profile spreads); each selector's counts are a `Spread`'s
        self.spread = pod.spread if index.spreading is not None else ()
        self.keys = [c.topology_key for c in self.spread]
        self.host = [i for i, c in enumerate(self.spread) if c.topology_key == ks.HOSTNAME_LABEL]
        self.zone = [i for i, c in enumerate(self.spread) if c.topology_key != ks.HOSTNAME_LABEL]
        self.static: dict[int, tuple[Any, ...]] = {}
        self.entries: dict[int, tuple[GroupKey, Key, int]] = {}  # (group, key, GPU memory left at node level)
        self.groups: dict[GroupKey, Group] = {}
        #: members that lack resources for good: why (NodeResourcesFit's words), for pending pods' messages
        self.lacking: Counter[str] = Counter()
        self.lack_of: dict[int, tuple[tuple[str, ...], int]] = {}  # (reasons, GPU memory left at node level)
        #: GPU memory left at node level of the members and of the dropped, ordered; kept once a pod of this kind
        #: was pending (None before), to count which nodes lack GPU memory at node level
        self.node_free: list[int] | None = None
        self.lack_free: list[int] | None = None
        self.seen = len(index.log)
        self.spreads: dict[tuple[Any, ...], Spread] = {}
        self.answers = Answers()
        self.resources = index.profile.resources
        for node in members:
            self._place(node)

    # --- a node's standing ---------------------------------------------------------------------------------------

    def _static(self, node: Node) -> tuple[Any, ...]:
        """What the pod's kind reads of the node that never changes: its group before any spreading count (the
        `GROUPED` plugins' raw scores, the spreading topology values...), and the `LOCAL` plugins' scores."""
        pod = self.pod
        group = (
            tuple([plugin.raw_score(node, pod) for plugin, _ in self.index.grouped]),
            tuple(node.labels.get(self.keys[i]) for i in self.zone),
            ks.HOSTNAME_LABEL in node.labels,
            pod.spread_own and not all(k in node.labels for k in self.keys),
            (0,) * len(self.host),
        )
        local = 0
        for plugin, weight in self.index.local:
            local += weight * plugin.node_score(node, pod)
        found = self.static[node.id] = (group, local)
        return found

    def _standing(self, node: Node) -> tuple[GroupKey, Key, int] | None:
        pod = self.pod
        if self.resources.exhausted(node, pod):
            return None
        group, local = self.static.get(node.id) or self._static(node)
        for plugin, weight in self.index.usage:
            local += weight * plugin.node_score(node, pod)
        return group, self.index.ranking.key(local, node), node.gpu_mem - node.gpu_mem_used

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
            if self.node_free is not None:
                del self.node_free[bisect_left(self.node_free, old[2])]
        if new is None:
            self.entries.pop(node.id, None)
            self._lacks(node)
            return
        self.entries[node.id] = new
        group = self.groups.get(new[0])
        if group is None:
            group = self.groups[new[0]] = Group(self.index.ranking)
        group.add(new[1])
        if self.node_free is not None:
            insort(self.node_free, new[2])

    def _lacks(self, node: Node) -> None:
        old = self.lack_of.get(node.id)
        if old is not None:
            self.lacking.subtract(old[0])
            if self.lack_free is not None:
                del self.lack_free[bisect_left(self.lack_free, old[1])]
        reasons = tuple(self.resources.lacking(node, self.pod))
        self.lack_of[node.id] = reasons, node.gpu_mem - node.gpu_mem_used
        self.lacking.update(reasons)
        if self.lack_free is not None:
            insort(self.lack_free, node.gpu_mem - node.gpu_mem_used)

    def catch_up(self, nodes: Sequence[Node]) -> None:
        self.seen, changed = self.index.changed_since(self.seen)
        for node_id in changed:
            if node_id in self.entries or node_id in self.lack_of:
                self._place(nodes[node_id])

    # --- the choice ----------------------------------------------------------------------------------------------

    def choose(self, pod: Pod) -> tuple[int, int] | None:
        """(node id, tied nodes) for a pod without spreading, or None when no member fits."""
        found = self.feasible(pod.gpu_mem)
        return None if found is None else self.select(found, None)

    def feasible(self, r: int) -> list[tuple[GroupKey, Entry]] | None:
        """The groups with room for r, each with its answer (None: no member has room)."""
        return self.answers.of(r, self.seen, [(key, group, None) for key, group in self.groups.items()])

    def select(self, found: list[tuple[GroupKey, Entry]], spread: Spread | None) -> tuple[int, int]:
        """The winner among the feasible groups: the best node of a group with the highest total (`totals`), the
        first of those by (-GPU room, name, id), `framework.tie_break`, and how many nodes tie with it."""
        if len(found) == 1:  # one group: its best node wins, the normalised parts alike
            _, (_, best, ties) = found[0]
            return self.index.ranking.node_id(best), ties
        ranking = self.index.ranking
        totals = self.totals(found, spread)
        top = max(totals)
        winner: Key | None = None
        tied = 0
        for i in range(len(found)):
            if totals[i] == top:
                _, best, ties = found[i][1]
                tied += ties
                if winner is None or ranking.tie_break(best) < ranking.tie_break(winner):
                    winner = best
        assert winner is not None
        return ranking.node_id(winner), tied

    def totals(self, found: list[tuple[GroupKey, Entry]], spread: Spread | None) -> list[int]:
        """Each feasible group's best node's total: its normalised parts (over the feasible groups, as
        kube-scheduler normalises over the feasible nodes) and its local score. A node of a group totals its own
        local score and the same normalised parts."""
        index = self.index
        totals = [index.ranking.local(entry[1]) for _, entry in found]
        # a part alike on every group shifts every total alike: it changes neither the winner nor the ties
        for part, (plugin, weight) in enumerate(index.grouped):
            raws = [key[0][part] for key, _ in found]
            if min(raws) != max(raws):
                for i, score in enumerate(plugin.normalize(raws)):
                    totals[i] += weight * score
        if spread is not None and index.spreading is not None:
            weight = index.spreading[1]
            for i, score in enumerate(spread.scores(found)):
                totals[i] += weight * score
        return totals

    def reasons(self, r: int) -> Counter[str]:
        """Why no member takes a request of r, per reason as FitError counts them: what the dropped members lack,
        then GPU memory at node level (NodeResourcesFit) or on one device (the extender)."""
        if self.node_free is None or self.lack_free is None:
            self.node_free = sorted(entry[2] for entry in self.entries.values())
            self.lack_free = sorted(free for _, free in self.lack_of.values())
        why = Counter({reason: n for reason, n in self.lacking.items() if n})
        short = bisect_left(self.node_free, r)
        lacking_too = bisect_left(self.lack_free, r) if r else 0
        if short + lacking_too:
            why[f"Insufficient {GPU_MEM}"] += short + lacking_too
        if len(self.entries) - short:
            why[self.index.profile.gpus.one_device] += len(self.entries) - short
        return why


class Answers:
    """The feasible groups' answers for the last request asked, each valid while its groups' versions hold."""

    def __init__(self) -> None:
        self.request: int | None = None
        self.kept: dict[GroupKey, tuple[tuple[int, int], Entry | None]] = {}
        self.infeasible: dict[int, int] = {}  # request -> position in the log when no member had room for it

    def of(
        self, r: int, seen: int, groups: list[tuple[GroupKey, Group, Group | None]]
    ) -> list[tuple[GroupKey, Entry]] | None:
        """For each group (with the nodes to leave out of it, if any): its entry for r; None when none fits."""
        if self.infeasible.get(r) == seen:
            return None
        if self.request != r:
            self.request, self.kept = r, {}
        kept = self.kept
        found = []
        for key, group, out in groups:
            version = (group.version, out.version if out is not None else 0)
            known = kept.get(key)
            if known is not None and known[0] == version:
                entry = known[1]
            else:
                entry = _entry(group, out, r)
                kept[key] = (version, entry)
            if entry is not None:
                found.append((key, entry))
        if not found:
            self.infeasible[r] = seen
            return None
        return found


def _entry(group: Group, out: Group | None, r: int) -> Entry | None:
    """A group's answer for r, leaving out the nodes `out` holds (their keys, as in the group)."""
    if out is None or not out.keys:
        return group.entry(r)
    best = group.best(r, skip=out.ids)
    if best is None:
        return None
    return group.fitting(r) - out.fitting(r), best, group.ties(best, r) - out.ties(best, r)


class Spread:
    """One spreading selector's counts over a view: matching pods on each node and per domain; the nodes holding any
    for a hostname constraint are moved out of the view's groups into groups by count."""

    def __init__(self, view: View, pod: Pod, nodes: Sequence[Node], candidates: Sequence[int] | None) -> None:
        self.view = view
        self.pod = pod  # whose selectors these are (the view's shape)
        self.index = view.index
        assert view.index.spreading is not None  # a view spreads only where the profile does
        self.plugin = view.index.spreading[0]
        self.counts: dict[int, list[int]] = {}
        self.counted_upto: dict[int, int] = {}
        self.domains: Counter[tuple[str, str]] = Counter()
        #: (namespace, labels) of a bound pod -> whether each constraint's selector matches it (() for none)
        self.matches: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, ...]] = {}
        self.groups: dict[GroupKey, Group] = {}  # the counted nodes, by their group with counts
        self.out: dict[GroupKey, Group] = {}  # the same nodes, by the view's group they leave
        self.placed: dict[int, tuple[GroupKey, GroupKey, Key]] = {}  # node -> (group, view's group, key)
        self.answers = Answers()
        #: the view's groups (with the nodes to leave out of each) and the counted groups, while their numbers hold
        self.listed: tuple[tuple[int, int, int], list[tuple[GroupKey, Group, Group | None]]] = ((-1, -1, -1), [])
        self.born = self.index.sequence
        self.seen = len(self.index.log)
        for node_id in sorted(set(candidates)) if candidates is not None else range(len(nodes)):
            self.counted_upto[node_id] = 0
            self._recount(nodes[node_id])
            self._file(node_id)

    def _recount(self, node: Node) -> None:
        """Add the node's pods bound since it was last counted to the counts."""
        view, pod = self.view, self.pod
        start = self.counted_upto.get(node.id)
        if start is None:  # never counted: the pods it held when the spread was made matched none (see __init__)
            start = self.index.bound_before(node, self.born)
        new = node.bound[start:]
        self.counted_upto[node.id] = len(node.bound)
        if not new:
            return
        memo = self.matches
        matched: list[int] | None = None
        for p in new:
            hits = memo.get((p.namespace, p.labels))
            if hits is None:
                hits = tuple(
                    int(p.namespace == pod.namespace and not c.selector.empty and c.selector.matches(p.label_map))
                    for c in pod.spread
                )
                hits = memo[(p.namespace, p.labels)] = hits if any(hits) else ()
            if hits:
                matched = list(hits) if matched is None else [m + h for m, h in zip(matched, hits, strict=True)]
        if matched is None:
            return
        counts = self.counts.get(node.id)
        required = not pod.spread_own or all(k in node.labels for k in view.keys)
        for i, c in enumerate(pod.spread):
            found = matched[i]
            if not found:
                continue
            if counts is None:
                counts = self.counts[node.id] = [0] * len(pod.spread)
            counts[i] += found
            if i in view.zone and required and self.plugin.spread_included(node, pod, c):
                self.domains[(c.topology_key, node.labels.get(c.topology_key, ""))] += found

    def _file(self, node_id: int) -> None:
        """Keep the node among the counted groups while it holds matching pods for a hostname constraint."""
        old = self.placed.pop(node_id, None)
        if old is not None:
            self.groups[old[0]].remove(old[2])
            self.out[old[1]].remove(old[2])
        counts = self.counts.get(node_id)
        entry = self.view.entries.get(node_id)
        if counts is None or entry is None:
            return
        hosts = tuple(counts[i] for i in self.view.host)
        if not any(hosts):
            return
        base, key = entry[0], entry[1]
        counted = (*base[:4], hosts)
        self.placed[node_id] = counted, base, key
        for table, group_key in ((self.groups, counted), (self.out, base)):
            group = table.get(group_key)
            if group is None:
                group = table[group_key] = Group(self.index.ranking)
            group.add(key)

    def catch_up(self, nodes: Sequence[Node]) -> None:
        """After the view: recount the nodes bound to since, and refile those counted."""
        self.seen, changed = self.index.changed_since(self.seen)
        for node_id in changed:
            self._recount(nodes[node_id])
            if node_id in self.placed or node_id in self.counts:
                self._file(node_id)

    def choose(self, pod: Pod) -> tuple[int, int] | None:
        found = self.feasible(pod.gpu_mem)
        return None if found is None else self.view.select(found, self)

    def feasible(self, r: int) -> list[tuple[GroupKey, Entry]] | None:
        """`View.feasible` with the counted nodes in groups of their own."""
        view = self.view
        shape = (len(view.groups), len(self.groups), len(self.out))  # groups are made, never dropped
        if self.listed[0] != shape:
            groups = [(key, group, self.out.get(key)) for key, group in view.groups.items()]
            groups += [(key, group, None) for key, group in self.groups.items()]
            self.listed = shape, groups
        return self.answers.of(r, self.seen, self.listed[1])

    def scores(self, found: list[tuple[GroupKey, Entry]]) -> list[int]:
        """PodTopologySpread's normalised scores of the feasible groups."""
        view = self.view
        constraints, keys, host, zone = self.pod.spread, view.keys, view.host, view.zone
        hosts = 0
        values = [set[str]() for _ in zone]
        for key, entry in found:
            if not key[3]:
                hosts += entry[0]
                on_zone = key[1]
                for j in range(len(zone)):
                    values[j].add(on_zone[j] or "")
        domains = [0] * len(constraints)
        for j in range(len(zone)):
            domains[zone[j]] = len(values[j])
        weights = self.plugin.spread_weights(keys, hosts, domains)
        raw = [0] * len(found)
        ignored = [False] * len(found)
        on: list[str | None] = [None] * len(constraints)
        counts = [0] * len(constraints)
        for g in range(len(found)):
            key = found[g][0]
            if key[3]:
                ignored[g] = True
                continue
            has_host = "" if key[2] else None
            on_host = key[4]
            for j in range(len(host)):
                i = host[j]
                on[i], counts[i] = has_host, on_host[j]
            on_zone = key[1]
            for j in range(len(zone)):
                i = zone[j]
                on[i] = value = on_zone[j]
                counts[i] = self.domains.get((keys[i], value or ""), 0)
            raw[g] = self.plugin.spread_raw(constraints, on, counts, weights)
        return self.plugin.spread_normalize(raw, ignored)


class ScoreIndex:
    """Views of the nodes per kind of pod, for a profile that scores; the engine records every bind here."""

    @classmethod
    def of(cls, nodes: list[Node], profile: Profile, pods: Sequence[Pod]) -> ScoreIndex | None:
        """The index for a profile that scores, where it holds every score plugin (`Profile.unindexed`)."""
        if not profile.scored or profile.unindexed(pods, nodes):
            return None
        return cls(nodes, profile, pods)

    def __init__(self, nodes: list[Node], profile: Profile, pods: Sequence[Pod]) -> None:
        self.nodes = nodes
        self.profile = profile
        self.ranking = Ranking(nodes)
        self.views: OrderedDict[tuple[Any, ...], View] = OrderedDict()
        #: The score plugins by how the index holds them (`Plugin.score_hook`), with their weights; those that score
        #: every node alike in this run left out
        scores = [(p, w) for p, w in profile.scores if w and not p.scores_alike(pods, nodes)]
        self.scores: list[tuple[Plugin, int]] = scores
        self.local = [(p, w) for p, w in scores if p.score_hook() == LOCAL]
        self.usage = [(p, w) for p, w in scores if p.score_hook() == USAGE]
        self.grouped = [(p, w) for p, w in scores if p.score_hook() == GROUPED]
        spreading = [(p, w) for p, w in scores if p.score_hook() == SPREAD]
        self.spreading: tuple[Plugin, int] | None = spreading[0] if spreading else None
        #: Each plugin with what it reads of the fleet once, for its `pod_key`.
        self.keyed: list[tuple[Plugin, object]] = [(p, p.prepare(nodes)) for p, _ in scores]
        self.filters = profile.dynamic_filters
        self.by_template: dict[int, tuple[View, Spread | None]] = {}
        self.log: list[int] = []
        self.sequence = 0
        #: per node: how many pods were bound before the index, and the sequence number of each bound since
        self.sequences: list[list[int]] = [[] for _ in nodes]
        self.initial = [len(n.bound) for n in nodes]
        #: label (key, value) -> nodes whose bound pods carry it, for a new spread to count from; made when the
        #: first spread with a selector asks (a run without spreading never files a label)
        self.by_label: dict[tuple[str, str], list[int]] | None = None

    def serves(self, pod: Pod) -> bool:
        """Pods whose fit is GPU room plus resources the node keeps for good: every filter that reads what is in use
        lets the index stand in for it (`Plugin.indexed`: no host port, no node-level GPU request larger than the
        containers' from an init container, no compute request...)."""
        return all(plugin.indexed(pod) for plugin in self.filters)

    def bound(self, node: Node, pod: Pod) -> None:
        """A pod was bound to the node: views re-read it when next asked."""
        self.log.append(node.id)
        self.sequence += 1
        self.sequences[node.id].append(self.sequence)
        if self.by_label is not None:
            _file(self.by_label, node, pod)

    def changed_since(self, seen: int) -> tuple[int, set[int] | tuple[()]]:
        """(position in the log now, the nodes bound to since position `seen`)."""
        log = self.log
        return len(log), (set(log[seen:]) if seen != len(log) else ())

    def bound_before(self, node: Node, sequence: int) -> int:
        """How many pods the node held when the index's sequence stood at `sequence`."""
        return self.initial[node.id] + bisect_right(self.sequences[node.id], sequence)

    def lookup(self, pod: Pod, members: Sequence[Node]) -> tuple[View, Spread | None]:
        found = self.by_template.get(pod.template) if pod.template else None
        if found is None:
            parts: list[object] = [pod.static_signature, pod.cpu, pod.memory, pod.other]
            for plugin, prepared in self.keyed:
                parts.append(plugin.pod_key(pod, prepared))
            shape = tuple(parts)
            view = self.views.get(shape)
            if view is None:
                view = self.views[shape] = View(self, pod, members)
                if len(self.views) > MAX_VIEWS:  # the least recently made goes, with its templates' entries
                    _, dropped = self.views.popitem(last=False)
                    self.by_template = {t: f for t, f in self.by_template.items() if f[0] is not dropped}
            spread = None
            if pod.spread and self.spreading is not None:
                selector = (pod.namespace, tuple(c.selector for c in pod.spread))
                spread = view.spreads.get(selector)
                if spread is None:
                    view.catch_up(self.nodes)
                    spread = view.spreads[selector] = Spread(view, pod, self.nodes, self._candidates(pod))
            found = (view, spread)
            if pod.template:
                self.by_template[pod.template] = found
        view, spread = found
        view.catch_up(self.nodes)
        if spread is not None:
            spread.catch_up(self.nodes)
        return found

    def _labelled(self) -> dict[tuple[str, str], list[int]]:
        if self.by_label is None:
            self.by_label = {}
            for node in self.nodes:
                for bound in node.bound:
                    _file(self.by_label, node, bound)
        return self.by_label

    def _candidates(self, pod: Pod) -> list[int] | None:
        """Nodes that can hold pods the pod's spreading selectors match (None: any node)."""
        result: list[int] = []
        for c in pod.spread:
            anchor = c.selector.anchor
            if anchor is None:
                return None
            result += self._labelled().get(anchor, ())
        return result

    def choose(self, pod: Pod, members: Sequence[Node]) -> tuple[Node, int] | None:
        view, spread = self.lookup(pod, members)
        chosen = spread.choose(pod) if spread is not None else view.choose(pod)
        return None if chosen is None else (self.nodes[chosen[0]], chosen[1])

    def reasons(self, pod: Pod, members: Sequence[Node]) -> Counter[str]:
        """Why the pod fits none of its class's members (the class adds its own static reasons)."""
        return self.lookup(pod, members)[0].reasons(pod.gpu_mem)


def _file(by_label: dict[tuple[str, str], list[int]], node: Node, pod: Pod) -> None:
    for pair in pod.labels:
        by_label.setdefault(pair, []).append(node.id)
