"""Profiles: which plugins run for a semantics, in which order and with which weights, for the modelled minor.

`upstream` is kube-scheduler's default profile of that minor and configuration API (filters in the scheduler's
order, the score plugins and weights of `ScoringProfile.weights`) with the open-source extender's filter and bind
last, as kube-scheduler calls an extender after its own filters. `ack` is ACK's scheduler as its documents describe
it: the same filters plus ACK's node modes and device rules, and nodes ordered by GPU memory allocated (binpack or
spread) instead of kube-scheduler's scores, which ACK does not publish. Everything that differs between the two is a
field here; no plugin asks which profile it is in.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare.domain import kubescheduler as ks
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.kube import workloads
from gpushare.placement import framework
from gpushare.placement.framework import Cycle, Plugin, Rejection
from gpushare.placement.model import Gpu, Node, Pod, Semantics, with_changes
from gpushare.placement.plugins.ackgpu import AckGpuShare, GpuNodeMode
from gpushare.placement.plugins.defaultpreemption import DefaultPreemption
from gpushare.placement.plugins.extender import GpuShare
from gpushare.placement.plugins.imagelocality import ImageLocality
from gpushare.placement.plugins.interpodaffinity import InterPodAffinity
from gpushare.placement.plugins.nodeaffinity import NodeAffinity
from gpushare.placement.plugins.nodeports import NodePorts
from gpushare.placement.plugins.nodepreferavoidpods import NodePreferAvoidPods
from gpushare.placement.plugins.noderesources import BalancedAllocation, Fit, LeastAllocated
from gpushare.placement.plugins.nodeunschedulable import NodeUnschedulable
from gpushare.placement.plugins.podtopologyspread import PodTopologySpread
from gpushare.placement.plugins.tainttoleration import TaintToleration

#: Problems found reading a pod that make it invalid: the open-source stack knows no compute nor gpu-count label, and
#: its extender never binds a pod that names gpu-mem but asks 0.
#: A pod naming gpu-mem with none over its containers (GW217) is not refused: the API server takes it and
#: kube-scheduler tries it, and its bind fails (`GpuShare.fails_deviceless_bind`).
_UPSTREAM_REFUSES = frozenset({workloads.MALFORMED})
_ACK_REFUSES = frozenset(
    {
        workloads.MALFORMED,
        workloads.CORE_STEP,
        workloads.CORE_NEEDS_MEM,
        workloads.GPU_COUNT,
        workloads.MULTI_WITH_CORE,
    }
)


@dataclass(frozen=True)
class Profile:
    """The plugins of one semantics for one minor, and what else the semantics decides."""

    semantics: Semantics
    #: Filters in the order they run: those that read only a node's labels, taints and spec first (the fast engine
    #: classes nodes by them once per kind of pod), then those that read what is in use.
    static_filters: tuple[Plugin, ...]
    dynamic_filters: tuple[Plugin, ...]
    #: Plugins with a PreFilter (the rules between pods).
    prefilters: tuple[Plugin, ...]
    #: Score plugins and weights (kube-scheduler's); empty where nodes are taken in `node_order` instead.
    scores: tuple[tuple[Plugin, int], ...]
    #: Lower is better: the node order where there is no scoring (ACK's binpack or spread).
    node_order: Callable[[Node], tuple[float, str]] | None
    #: The device plugin: which GPUs may take a pod, and which it gets.
    gpus: GpuShare
    #: NodeResourcesFit's filter: what each node has left of every resource (the fast path drops a node that lacks
    #: one for good).
    resources: Fit
    #: Problems that make a pod invalid (rule IDs of the workload reader).
    refuses: frozenset[str]
    #: Reads the multi-GPU label (`aliyun.com/gpu-count` on a pod) and GPU compute (node capacity, pod limits).
    multi_gpu: bool
    compute: bool
    #: A running pod without the extender's GPU-index annotation is given GPUs as a bind would (ACK's scheduler
    #: knows where its pods run); else it is charged to its node only, as the extender counts it on no device.
    places_unannotated: bool
    #: The scheduling queue retries a pending pod a bind may have made schedulable at once (kube-scheduler 1.33+).
    retries_at_once: bool
    #: PostFilter: kube-scheduler's DefaultPreemption (upstream); None where preemption is not modelled (ack).
    post_filter: DefaultPreemption | None = None
    #: A sampled run's random choice among nodes tied on score (`Semantics.tie_seed`); None: `framework.tie_break`.
    pick: framework.Pick | None = None

    @property
    def scheduler(self) -> ScoringProfile:
        return self.semantics.scheduler

    @property
    def scored(self) -> bool:
        """Nodes are chosen by kube-scheduler's scores (the fast engine then keeps its score index)."""
        return bool(self.scores)

    @property
    def filters(self) -> tuple[Plugin, ...]:
        return (*self.static_filters, *self.dynamic_filters)

    @property
    def liftable(self) -> frozenset[str]:
        """Filter reasons a bind elsewhere may lift: the queue keeps such a pod waiting for binds."""
        return frozenset(reason for p in self.filters for reason in p.liftable)

    @property
    def unresolvable_reasons(self) -> frozenset[str]:
        """Filter reasons whose status is UnschedulableAndUnresolvable on any node."""
        return frozenset(reason for p in self.filters for reason in p.unresolvable_reasons)

    def hint(self, waiting: Pod, reasons: set[str], bound: Pod) -> bool:
        """The queueing hints of the profile's filters: `bound` being bound may let `waiting` fit."""
        return any(p.hint(waiting, reasons, bound) for p in self.filters)

    def unindexed(self, pods: Sequence[Pod], nodes: Sequence[Node]) -> list[str]:
        """The score plugins the fast path's score index does not hold for this run (none declares how, and it does
        not score every node alike): with any, the fast engine scores every pod node by node, as the reference does."""
        return [p.name for p, _ in self.scores if p.score_hook() is None and not p.scores_alike(pods, nodes)]

    def static_rejection(self, node: Node, pod: Pod) -> Rejection | None:
        """The filters that depend on the node's labels, taints and spec only."""
        return framework.first_rejection(self.static_filters, node, pod)

    def dynamic_rejection(self, node: Node, pod: Pod, cycle: Cycle | None = None) -> Rejection | None:
        """The filters that depend on what is already in use; `cycle` holds the pod's counts of other pods (None: no
        rule between pods applies to it)."""
        if node.nominated:
            rejected = self._with_nominated(node, pod, cycle)
            if rejected is not None:
                return rejected
        return framework.first_rejection(self.dynamic_filters, node, pod, cycle)

    @property
    def framework_filters(self) -> tuple[Plugin, ...]:
        """The scheduler's own filters that read what is in use: the dynamic ones but the extender's."""
        return tuple(p for p in self.dynamic_filters if p is not self.gpus)

    def _with_nominated(self, node: Node, pod: Pod, cycle: Cycle | None) -> Rejection | None:
        """RunFilterPluginsWithNominatedPods' first pass: the pods nominated to the node with at least this pod's
        priority are added, and the framework's filters run (the extender does not know nominations). The pod's
        counts of other pods do not take them in (a simplification: they matter for rules between pods only)."""
        extra = [p for p in node.nominated if p.priority >= pod.priority and p.key != pod.key]
        if not extra:
            return None
        for added in extra:
            node.add_pod(added, [])
        try:
            return framework.first_rejection(self.framework_filters, node, pod, cycle)
        finally:
            for added in extra:
                node.remove_pod(added)

    def rejection(self, node: Node, pod: Pod, cycle: Cycle | None = None) -> Rejection | None:
        """Why `pod` does not fit `node` now (None: it fits): the first failing filter plugin."""
        return self.static_rejection(node, pod) or self.dynamic_rejection(node, pod, cycle)

    def unresolvable(self, rejected: Rejection | None, node: Node, pod: Pod) -> bool:
        """The rejection's status is UnschedulableAndUnresolvable (asked of the plugin that rejected, only when
        preemption needs it: the filters' hot path never pays for it)."""
        if rejected is None:
            return False
        plugin = next(p for p in self.filters if p.name == rejected.plugin)
        return plugin.unresolvable(rejected.reasons, node, pod)

    def framework_rejection(self, node: Node, pod: Pod, cycle: Cycle | None = None) -> Rejection | None:
        """The scheduler's own filter plugins, without the extender's: what preemption checks a node against once
        the victims are gone (the rendered configuration gives the extender no preemptVerb)."""
        rejected = self.static_rejection(node, pod)
        if rejected is None and node.nominated:
            rejected = self._with_nominated(node, pod, cycle)
        return rejected or framework.first_rejection(self.framework_filters, node, pod, cycle)

    def needs_cycle(self, pod: Pod, anti_affinity_bound: bool) -> bool:
        """Whether a rule between pods can reject a node for this pod (else no PreFilter need count)."""
        return any(p.needs_cycle(pod, anti_affinity_bound) for p in self.prefilters)

    def prefilter(self, pod: Pod, nodes: Sequence[Node]) -> Cycle:
        return framework.prefilter(self.prefilters, pod, nodes)

    def bound_gpus(self, node: Node, pod: Pod) -> tuple[Pod, list[Gpu], str]:
        """A pod bound without the scheduler's choice (running already, or created with spec.nodeName): the GPUs it
        holds, the pod as charged there, and a warning ("" if none). The scheduler's annotations name its devices
        and the units on each (`kube.ledger.held`, in the grammar of `GpuShare.grammar`); without them the
        open-source extender counts it on no device (node level only), while ACK's scheduler knows where it runs,
        and the dry run assigns it as a bind would (`places_unannotated`)."""
        if not pod.wants_gpu:
            return pod, [], ""
        if pod.gpu_held is not None:
            by_index = {g.index: g for g in node.gpus}
            named = [(by_index[i], units) for i, units in pod.gpu_held if i in by_index]  # no such device: nowhere
            gpus = [g for g, _ in named]
            shares = tuple(units for _, units in named)
            per_device = shares if len(set(shares)) > 1 else None
            gpu_mem = sum(shares) if per_device else (shares[0] if shares else 0) * len(gpus)
            gpu_count = max(1, len(gpus))
            if (gpu_mem, gpu_count, per_device) == (pod.gpu_mem, pod.gpu_count, None):  # as asked: the pod itself
                return pod, gpus, ""
            return with_changes(pod, gpu_mem=gpu_mem, gpu_count=gpu_count, per_device=per_device), gpus, ""
        if not self.places_unannotated:
            return pod, [], ""
        gpus = self.gpus.choose_gpus(node, pod)
        if len(gpus) >= pod.gpu_count:
            return pod, gpus, ""
        gpus = sorted(node.gpus, key=lambda g: (-g.free, g.index))[: pod.gpu_count]
        return pod, gpus, f"pod {pod.key} over-commits the GPUs of {node.name}"

    def choose(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> tuple[Node, int]:
        """The node a fitting pod goes to, and how many nodes tied for it: kube-scheduler's scores, or the first in
        `node_order` (no tie is reported there: the order is ACK's promise, not a score)."""
        if self.node_order is None:
            return framework.choose(self.scores, pod, feasible, all_nodes, self.pick)
        return min(feasible, key=self.node_order), 1


def _scores(scheduler: ScoringProfile) -> tuple[tuple[Plugin, int], ...]:
    """The minor's score plugins with their weights, in the order its configuration lists them."""
    registry: dict[str, Callable[[], Plugin]] = {
        ks.NODE_RESOURCES_FIT: lambda: Fit(scheduler),
        ks.LEAST_ALLOCATED: lambda: LeastAllocated(scheduler),
        ks.BALANCED_ALLOCATION: lambda: BalancedAllocation(scheduler),
        ks.IMAGE_LOCALITY: ImageLocality,
        ks.INTER_POD_AFFINITY: lambda: InterPodAffinity(scheduler),
        ks.NODE_AFFINITY: lambda: NodeAffinity(scheduler),
        ks.PREFER_AVOID_PODS: NodePreferAvoidPods,
        ks.POD_TOPOLOGY_SPREAD: lambda: PodTopologySpread(scheduler),
        ks.TAINT_TOLERATION: lambda: TaintToleration(scheduler),
    }
    return tuple((registry[name](), weight) for name, weight in scheduler.weights if name in registry)


def _profile(semantics: Semantics, gpus: GpuShare, node_filters: tuple[Plugin, ...], **fields: Any) -> Profile:
    """What every profile runs, in kube-scheduler's filter order (the filters that read only a node's labels, taints
    and spec first, then what is in use, the device plugin's last), with what its semantics decides (`fields`)."""
    scheduler = semantics.scheduler
    spread, affinity, fit = PodTopologySpread(scheduler), InterPodAffinity(scheduler), Fit(scheduler)
    return Profile(
        semantics=semantics,
        static_filters=(NodeUnschedulable(), TaintToleration(scheduler), NodeAffinity(scheduler), *node_filters),
        dynamic_filters=(NodePorts(), fit, spread, affinity, gpus),
        prefilters=(spread, affinity),
        gpus=gpus,
        resources=fit,
        pick=None if semantics.tie_seed is None else _random_pick(semantics.tie_seed),
        **fields,
    )


def _upstream(semantics: Semantics) -> Profile:
    """kube-scheduler's default profile of the minor, the open-source extender's filter and bind last."""
    scheduler = semantics.scheduler
    return _profile(
        semantics,
        GpuShare(),
        (),
        scores=_scores(scheduler),
        node_order=None,
        refuses=_UPSTREAM_REFUSES,
        multi_gpu=False,
        compute=False,
        places_unannotated=False,
        retries_at_once=scheduler.retries_at_once,
        post_filter=DefaultPreemption(scheduler),
    )


def _ack(semantics: Semantics) -> Profile:
    """ACK's scheduler as its documents describe it: the same filters, ACK's node modes (labels only, after the
    scheduler's own static filters) and device rules last, nodes in ACK's binpack or spread order."""
    gpus = AckGpuShare(semantics.placement, semantics.cgpu_max_pods_per_gpu)
    return _profile(
        semantics,
        gpus,
        (GpuNodeMode(),),
        scores=(),
        node_order=gpus.node_key,
        refuses=_ACK_REFUSES,
        multi_gpu=True,
        compute=True,
        places_unannotated=True,
        retries_at_once=False,
        post_filter=None,
    )


#: Each semantics (`Semantics.name`) and how its profile is made: the one place the two part.
PROFILES: dict[str, Callable[[Semantics], Profile]] = {"upstream": _upstream, "ack": _ack}


def profile(semantics: Semantics) -> Profile:
    """The profile a semantics runs."""
    return PROFILES[semantics.name](semantics)


def _random_pick(seed: int) -> framework.Pick:
    """selectHost's uniform choice among tied nodes, from `seed` (the nodes taken in name order, so the same seed
    picks the same whatever order they were found in)."""
    rng = random.Random(seed)

    def pick(tied: list[Node]) -> Node:
        return rng.choice(sorted(tied, key=lambda n: n.name))

    return pick
