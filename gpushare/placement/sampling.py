"""How kube-scheduler searches a large fleet for a pod: the nodes it filters, in which order, and where it stops.

From 100 nodes on, kube-scheduler stops filtering once it has found `numFeasibleNodesToFind` nodes that pass its own
filters (percentageOfNodesToScore of the nodes, adaptive by default: 50% minus 1% per 125 nodes, at least 5% and
100 nodes), hands only those to the extender and scores only those that pass it (schedule_one.go
findNodesThatPassFilters, 1.20's generic_scheduler.go). The search starts where the previous pod's ended
(nextStartNodeIndex moves on by the nodes it filtered, those that passed and those that did not) and walks the
nodes in the scheduler cache's order: zones taken in turn, one node of each, in the order nodes joined (nodeTree).

So on a large fleet a pod may land on a node that is not the best of the fleet, or stay pending where the K nodes it
looked at have no GPU with room although other nodes have. The dry run follows the same search in order. The real
scheduler filters in parallel (16 workers, each taking a chunk of consecutive nodes), so which K nodes pass first
depends on timing: a chunk inside the window may finish late and one beyond it early. Where the search was cut, the
dry run reports how many nodes the real choice may be drawn from (`drawn_from`): every node that is the best of
some K of the nodes that pass the filters. The fast engine runs the same search over arrays for the pods its score
index serves (`searchindex`); this one is the reference for both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from gpushare.domain import kubescheduler as ks
from gpushare.placement import framework
from gpushare.placement.framework import Cycle, Rejection
from gpushare.placement.model import Node, Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.result import Pending

#: Node labels that name a node's zone in the scheduler's cache (utilnode.GetZoneKey): the beta label wins.
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", ks.ZONE_LABEL)
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def zone_key(labels: dict[str, str]) -> str:
    """GetZoneKey: region and zone, "" where the node has neither."""
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def search_order(nodes: Sequence[Node]) -> list[Node]:
    """nodeTree.list(): zones in the order their first node joined, one node of each in turn, each zone's nodes in
    the order they joined (the input's order: the API server lists nodes by name, as kube-scheduler first reads
    them)."""
    zones: dict[str, list[Node]] = {}
    for node in nodes:
        zones.setdefault(zone_key(node.labels), []).append(node)
    lists = list(zones.values())
    return [members[i] for i in range(max(map(len, lists), default=0)) for members in lists if i < len(members)]


class Sample(NamedTuple):
    """One pod's filtering: the nodes that passed the filters and the extender, those the framework's filters or
    the extender rejected (in search order), and whether every node was filtered."""

    passed: list[Node]
    rejected: list[tuple[Node, Rejection]]
    #: Nodes that passed the framework's filters (the extender's input), and how many the search went through.
    feasible: int
    processed: int
    complete: bool


class Sampler:
    """nextStartNodeIndex and numFeasibleNodesToFind for one run."""

    def __init__(self, nodes: Sequence[Node], scheduler: ks.ScoringProfile) -> None:
        self.nodes = nodes
        self.order = search_order(nodes)
        self.wanted = ks.num_feasible_nodes_to_find(len(self.order), scheduler.percentage_of_nodes_to_score)
        self.start = 0
        #: The last cycle of each pod left pending by a cut search, for preemption to read which nodes it filtered:
        #: the cycle itself, or (from the search over arrays) where it started and how many nodes it found
        #: UnschedulableAndUnresolvable, the cycle made again only if preemption looks at nodes one by one.
        self.cut_pending: dict[str, Sample | Cut] = {}
        #: Work out how many nodes the real choice may be drawn from where the search is cut (`drawn_from`, which
        #: scores every node passing the filters): the planner counts pods and shows no choice, and turns it off.
        self.draws = True

    @property
    def cuts(self) -> bool:
        """The search may stop before the last node (from 100 nodes, unless percentageOfNodesToScore is 100)."""
        return self.wanted < len(self.order)

    def filter(self, profile: Profile, pod: Pod, cycle: Cycle | None, extender: bool = True) -> Sample:
        """Filter from where the last search ended (`search`) and move the start on by the nodes processed."""
        sample = self.search(profile, pod, cycle, self.start, extender)
        self.moved(sample.processed)
        return sample

    def moved(self, processed: int) -> None:
        """nextStartNodeIndex moves on by the nodes a search processed (a search of every node leaves it)."""
        self.start = (self.start + processed) % len(self.order) if self.order else 0

    def search(self, profile: Profile, pod: Pod, cycle: Cycle | None, start: int, extender: bool = True) -> Sample:
        """Filter from `start` until `wanted` nodes pass the framework's filters (the next one that passes ends the
        search and is not counted), then ask the extender about those."""
        order, total = self.order, len(self.order)
        feasible: list[Node] = []
        rejected: list[tuple[Node, Rejection]] = []
        processed = 0
        complete = True
        for i in range(total):
            node = order[(start + i) % total]
            why = profile.framework_rejection(node, pod, cycle)
            if why is not None:
                rejected.append((node, why))
            elif len(feasible) == self.wanted:
                complete = False
                break
            else:
                feasible.append(node)
            processed += 1
        passed = []
        for node in feasible if extender else ():
            reasons = profile.gpus.filter(node, pod, cycle)
            if reasons:
                rejected.append((node, Rejection(profile.gpus.name, tuple(reasons))))
            else:
                passed.append(node)
        return Sample(passed, rejected, len(feasible), processed, complete)

    def restart(self) -> None:
        """1.22-1.24 (`nominated_search_resets_start`): trying a nominated node first searched a one-node list, whose
        end modulo one sends the next search back to the first node."""
        self.start = 0

    def advance(self, profile: Profile, pod: Pod, cycle: Cycle | None) -> None:
        """A scheduling cycle whose outcome the run already knows (a replayed pod): only where the search ends
        matters, for the next pod's start."""
        if self.cuts:
            self.filter(profile, pod, cycle, extender=False)

    def schedule(self, profile: Profile, pod: Pod, cycle: Cycle | None, explain: bool) -> tuple[Node, int] | Pending:
        """One scheduling cycle on a fleet the search may cut: the node chosen among those filtered and how many
        nodes the real choice may be drawn from, or the pod pending on what was filtered."""
        sample = self.filter(profile, pod, cycle)
        if not sample.passed:
            if sample.complete:
                self.cut_pending.pop(pod.key, None)
            else:
                self.cut_pending[pod.key] = sample
            return pending(pod, sample, len(self.order), explain)
        self.cut_pending.pop(pod.key, None)
        chosen, tied = profile.choose(pod, sample.passed, self.nodes)
        if sample.complete or not self.draws:
            return chosen, tied
        seen = {n.id for n in sample.passed} | {n.id for n, _ in sample.rejected}
        passing = list(sample.passed)
        feasible = sample.feasible
        for node in self.order:
            if node.id in seen or profile.framework_rejection(node, pod, cycle) is not None:
                continue
            feasible += 1
            if not profile.gpus.filter(node, pod, cycle):
                passing.append(node)
        return chosen, max(tied, self.drawn_from(profile.scores, pod, passing, feasible))

    def drawn_from(
        self, scores: Sequence[tuple[framework.Plugin, int]], pod: Pod, passing: Sequence[Node], feasible: int
    ) -> int:
        """How many nodes the real choice may be drawn from, where the search was cut: those that are the best of
        some `wanted` of the `feasible` nodes that pass the framework's filters (the parallel filters may finish in
        any order), i.e. with at most `feasible - wanted` nodes scoring strictly higher. `passing` are every node
        that passes the filters and the extender; scores are normalised over all of them."""
        if len(passing) <= 1:
            return len(passing)
        by_total = Counter(framework.prioritize(scores, pod, passing, self.nodes))
        allowed = feasible - self.wanted
        higher = count = 0
        for total in sorted(by_total, reverse=True):
            if higher > allowed:
                break
            count += by_total[total]
            higher += by_total[total]
        return count

    def unresolvable(self, profile: Profile, pod: Pod) -> list[bool] | None:
        """For preemption, in node order: whether each node's status is UnschedulableAndUnresolvable, where the
        pod's last cycle was cut (None: it was not, every node has its own status). A node never filtered has
        none: from 1.28 that counts as unresolvable, before as a node worth trying."""
        sample = self.cut_pending.get(pod.key)
        if sample is None:
            return None
        if isinstance(sample, Cut):  # the nodes are as they were: nothing was bound since the pod's cycle
            sample = self.cut_pending[pod.key] = self.search(profile, pod, None, sample.start)
        absent = profile.scheduler.unfiltered_nodes_unresolvable
        statuses = {n.id: profile.unresolvable(r, n, pod) for n, r in sample.rejected}
        return [statuses.get(n.id, absent) for n in self.nodes]

    def hopeless(self, profile: Profile, pod: Pod) -> int | None:
        """How many nodes' statuses `unresolvable` calls UnschedulableAndUnresolvable (None: the cycle was not cut)."""
        sample = self.cut_pending.get(pod.key)
        if isinstance(sample, Cut):
            return sample.hopeless
        statuses = self.unresolvable(profile, pod)
        return None if statuses is None else sum(statuses)


class Cut(NamedTuple):
    """A pending pod's cut search, found over arrays (`searchindex`): where it started, and how many nodes' statuses
    were UnschedulableAndUnresolvable (never filtered ones included, from 1.28)."""

    start: int
    hopeless: int


def pending(pod: Pod, sample: Sample, total: int, explain: bool) -> Pending:
    """The pod fits none of the nodes filtered: kube-scheduler's message counts those only, out of every node."""
    why = Counter(reason for _, rejected in sample.rejected for reason in rejected.reasons)
    by_node = tuple((n.name, r) for n, r in sorted(sample.rejected, key=lambda item: item[0].id)) if explain else ()
    return Pending(
        pod.namespace,
        pod.name,
        total,
        tuple(sorted(why.items())),
        pod.per_gpu,
        by_node,
        unfiltered=0 if sample.complete else total - sample.processed,
    )
