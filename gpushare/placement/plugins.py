"""The scheduling framework's steps for a GPU-sharing pod, as kube-scheduler runs them: filter, score, reserve, bind.

Each filter is a named plugin that answers with the reasons a node does not fit (none: it fits). They run
in kube-scheduler's order and a node reports its first failing plugin, so a pending pod's message reads
like the scheduler's; reason texts are the scheduler's and the extender's own where one exists (facts
section 4). Both engines call these plugins, so they cannot disagree on what fits, which node scores
best or which GPU a pod gets; the fast engine also builds its indexes from them (`STATIC_FILTERS` make
its node classes, `gpu_capacity` and `resources_exhausted` its capacity index).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpushare.domain import labels
from gpushare.placement import interpod
from gpushare.placement.interpod import Cycle
from gpushare.placement.matching import matches_required, tolerates
from gpushare.placement.model import Gpu, Node, Pod, Semantics, Taint

UNSCHEDULABLE = "node(s) were unschedulable"
GPU_ONE_DEVICE = "Insufficient GPU Memory in one device"
UNSCHEDULABLE_TAINT: Taint = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")

FilterFn = Callable[[Node, Pod, Semantics, Cycle | None], list[str]]


@dataclass(frozen=True)
class Rejection:
    """A node a pod does not fit: the filter plugin that said so, and its reasons."""

    plugin: str
    reasons: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.plugin}: {'; '.join(self.reasons)}"


# --- filter plugins that read only a node's labels, taints and spec -------------------------------------------


def node_unschedulable(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """NodeUnschedulable: a cordoned node takes only pods that tolerate its unschedulable taint."""
    return [UNSCHEDULABLE] if node.unschedulable and not tolerates(pod.tolerations, UNSCHEDULABLE_TAINT) else []


def taint_toleration(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """TaintToleration: the first NoSchedule or NoExecute taint the pod does not tolerate."""
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, taint):
            return [semantics.scheduler.taint_reason(taint.key, taint.value)]
    return []


def node_affinity(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """NodeAffinity: nodeSelector, and required node affinity (terms ORed, requirements ANDed)."""
    if not matches_required(node, pod):
        return [semantics.scheduler.affinity_reason]
    return []


def gpu_node_mode(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """ACK's node modes: shared pods only on share/cgpu/core_mem nodes, compute pods only on core_mem ones."""
    if semantics.name != "ack" or not pod.wants_gpu or node.gpu_mem <= 0:
        return []
    if node.mode not in labels.SHARED_MODES:
        return [f"node(s) didn't share GPUs ({labels.SCHEDULE_LABEL}={node.mode})"]
    if pod.core and node.mode != "core_mem":
        return [f"node(s) didn't allocate GPU compute ({labels.SCHEDULE_LABEL}={node.mode})"]
    return []


# --- filter plugins that read what is in use ------------------------------------------------------------------


def lacking(node: Node, pod: Pod) -> list[str]:
    """Pod slots, cpu, memory and other resources the node cannot give: nothing is freed during a run, so this is
    for good."""
    reasons = []
    if node.pods_used + 1 > node.pods:
        reasons.append("Too many pods")
    if pod.cpu and node.cpu_used + pod.cpu > node.cpu:
        reasons.append("Insufficient cpu")
    if pod.memory and node.memory_used + pod.memory > node.memory:
        reasons.append("Insufficient memory")
    for name, amount in pod.other:
        if amount and node.other_used.get(name, 0) + amount > node.other.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def node_resources_fit(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """NodeResourcesFit: every resource the node lacks, as kube-scheduler lists them. Requests are node-level
    (the largest init container counts when larger than the containers' sum), GPU memory included: kube-scheduler
    checks it before the extender looks at single GPUs (`ignoredByScheduler: false`)."""
    reasons = lacking(node, pod)
    if pod.node_gpu_mem and node.gpu_mem_used + pod.node_gpu_mem > node.gpu_mem:
        reasons.append(f"Insufficient {labels.GPU_MEM}")
    if pod.node_core and sum(g.core_used for g in node.gpus) + pod.node_core > sum(g.core_total for g in node.gpus):
        reasons.append(f"Insufficient {labels.GPU_CORE}")
    return reasons


def resources_exhausted(node: Node, pod: Pod) -> bool:
    """NodeResourcesFit fails on pods, cpu, memory or other resources (`lacking` has none to say): permanent within a
    run, so the fast engine drops the node. Asked for every node a bind changes, hence written out."""
    if node.pods_used >= node.pods:
        return True
    if pod.cpu and node.cpu_used + pod.cpu > node.cpu:
        return True
    if pod.memory and node.memory_used + pod.memory > node.memory:
        return True
    return any(amount and node.other_used.get(name, 0) + amount > node.other.get(name, 0) for name, amount in pod.other)


def _kind(pod: Pod) -> str:
    return "none" if not pod.wants_gpu else ("compute" if pod.core else "mem")


def _mixes(node: Node, kind: str, semantics: Semantics) -> bool:
    """ACK: memory-only and compute GPU pods never share a node."""
    if semantics.name != "ack":
        return False
    return (kind == "compute" and node.mem_only_pods > 0) or (kind == "mem" and node.compute_pods > 0)


def _eligible(gpu: Gpu, node: Node, kind: str, semantics: Semantics) -> bool:
    """Could this GPU take a pod of this kind at all (ACK: the cgpu pod cap, compute left for a compute pod)?"""
    if semantics.name == "upstream":
        return True
    if node.mode == "cgpu" and gpu.pods >= semantics.cgpu_max_pods_per_gpu:
        return False
    return kind != "compute" or gpu.core_free > 0


def _usable(gpu: Gpu, pod: Pod, node: Node, semantics: Semantics) -> bool:
    if gpu.free < pod.per_gpu or not _eligible(gpu, node, _kind(pod), semantics):
        return False
    return semantics.name == "upstream" or not pod.core or gpu.core_free >= pod.core


def gpu_share(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """The extender's filter (upstream), or ACK's device-level rules: is there room on the GPUs themselves?"""
    if not pod.wants_gpu:
        return []
    if _mixes(node, _kind(pod), semantics):
        return [
            "node(s) run memory-only GPU pods (compute pods cannot share them)"
            if pod.core
            else "node(s) run GPU compute pods (memory-only pods cannot share them)"
        ]
    if sum(1 for g in node.gpus if _usable(g, pod, node, semantics)) >= pod.gpu_count:
        return []
    roomy = sum(1 for g in node.gpus if g.free >= pod.per_gpu)
    if roomy < pod.gpu_count:
        return [GPU_ONE_DEVICE if pod.gpu_count == 1 else f"Insufficient GPU Memory in {pod.gpu_count} devices"]
    if pod.core and sum(1 for g in node.gpus if g.free >= pod.per_gpu and g.core_free >= pod.core) < pod.gpu_count:
        return ["Insufficient GPU compute in one device"]
    return [f"GPU pod limit reached ({semantics.cgpu_max_pods_per_gpu} pods per GPU on cgpu nodes)"]


def gpu_room(node: Node) -> int:
    """The largest GPU memory request one device of the node takes now, as the open-source extender and kube-scheduler
    see it: the most free on a healthy device, at most what the node has left at node level (never below 0).
    Kept on the node (`Node.room`), refreshed by every charge."""
    return node.room


def refresh_room(node: Node) -> None:
    most = 0
    for g in node.gpus:
        if g.healthy and g.total - g.used > most:
            most = g.total - g.used
    node.room = max(0, min(most, node.gpu_mem - node.gpu_mem_used))


def gpu_capacity(node: Node, m: int, kind: str, semantics: Semantics) -> int:
    """What each of m GPUs can give a pod of this kind: the m-th largest free amount among the GPUs that could
    take it at all (`gpu_share`'s own tests). An upper bound on fit, so a node below a request never fits it."""
    if _mixes(node, kind, semantics):
        return 0
    frees = [g.free for g in node.gpus if _eligible(g, node, kind, semantics)]
    if m > len(frees):
        return 0
    return max(frees) if m == 1 else sorted(frees, reverse=True)[m - 1]


def pod_topology_spread(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """PodTopologySpread: the pod's hard (DoNotSchedule) constraints keep their skew on this node."""
    return interpod.spread_rejection(node, pod, cycle) if cycle is not None else []


def inter_pod_affinity(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> list[str]:
    """InterPodAffinity: the pod's required pod affinity and anti-affinity, and bound pods' anti-affinity."""
    return interpod.affinity_rejection(node, pod, cycle, semantics.scheduler) if cycle is not None else []


#: kube-scheduler's filter order (NodeUnschedulable, TaintToleration, NodeAffinity come before NodeResourcesFit,
#: PodTopologySpread and InterPodAffinity after it; ACK's node-mode check is label-only, the extender's filter runs
#: after every plugin).
STATIC_FILTERS: tuple[tuple[str, FilterFn], ...] = (
    ("NodeUnschedulable", node_unschedulable),
    ("TaintToleration", taint_toleration),
    ("NodeAffinity", node_affinity),
    ("GPUNodeMode", gpu_node_mode),
)
DYNAMIC_FILTERS: tuple[tuple[str, FilterFn], ...] = (
    ("NodeResourcesFit", node_resources_fit),
    ("PodTopologySpread", pod_topology_spread),
    ("InterPodAffinity", inter_pod_affinity),
    ("GPUShare", gpu_share),
)


def _first(
    filters: tuple[tuple[str, FilterFn], ...], node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None
) -> Rejection | None:
    for name, plugin in filters:
        reasons = plugin(node, pod, semantics, cycle)
        if reasons:
            return Rejection(name, tuple(reasons))
    return None


def static_rejection(node: Node, pod: Pod, semantics: Semantics) -> Rejection | None:
    """The filters that depend on the node's labels, taints and spec only."""
    return _first(STATIC_FILTERS, node, pod, semantics)


def dynamic_rejection(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> Rejection | None:
    """The filters that depend on what is already in use; `cycle` holds the pod's counts of other pods (None: no
    rule between pods applies to it)."""
    return _first(DYNAMIC_FILTERS, node, pod, semantics, cycle)


def rejection(node: Node, pod: Pod, semantics: Semantics, cycle: Cycle | None = None) -> Rejection | None:
    """Why `pod` does not fit `node` now (None: it fits): the first failing filter plugin."""
    return static_rejection(node, pod, semantics) or dynamic_rejection(node, pod, semantics, cycle)


# --- score, reserve, bind ---------------------------------------------------------------------------------------


def score_key(node: Node, semantics: Semantics) -> tuple[float, str]:
    """Score (GPU allocation): binpack takes the node with the largest share of GPU memory allocated, spread the
    smallest; ties by node name. Lower keys are better."""
    allocated = node.allocated
    return (-allocated if semantics.placement == "binpack" else allocated, node.name)


def choose_gpus(node: Node, pod: Pod, semantics: Semantics) -> list[Gpu]:
    """Reserve: the GPUs a fitting pod gets.

    upstream: the smallest available device that fits, lowest index on ties (the extender's best fit).
    ack: the node's placement label (or the default): binpack fills the fullest fitting GPUs first,
    spread the emptiest.
    """
    if not pod.wants_gpu:  # the extender is not asked about pods without GPU memory: they get no device
        return []
    if semantics.name == "upstream":  # best fit: the least free healthy device that holds the request, lowest index
        best, least = None, 0
        for g in node.gpus:
            free = g.total - g.used
            if g.healthy and free >= pod.per_gpu and (best is None or free < least):
                best, least = g, free
        return [best] if best is not None else []
    candidates = [g for g in node.gpus if _usable(g, pod, node, semantics)]
    if node.gpu_placement == "spread":
        candidates.sort(key=lambda g: (-g.free, -g.core_free, g.index))
    else:
        candidates.sort(key=lambda g: (g.free, g.core_free, g.index))
    return candidates[: pod.gpu_count]


def charge(node: Node, pod: Pod, gpus: list[Gpu]) -> None:
    """Bind: record a bound pod's usage on its node and GPUs."""
    node.cpu_used += pod.cpu
    node.memory_used += pod.memory
    node.cpu_nz_used += pod.nz_cpu
    node.memory_nz_used += pod.nz_memory
    node.bound.append(pod)
    node.pods_used += 1
    node.gpu_mem_used += pod.node_gpu_mem
    for name, amount in pod.other:
        node.other_used[name] = node.other_used.get(name, 0) + amount
    if pod.wants_gpu:
        if pod.core:
            node.compute_pods += 1
        else:
            node.mem_only_pods += 1
    for gpu in gpus:
        gpu.used += pod.per_gpu
        gpu.core_used += pod.core
        gpu.pods += 1
    refresh_room(node)
