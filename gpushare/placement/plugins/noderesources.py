"""NodeResources (framework/plugins/noderesources): Fit's filter (every resource the node lacks, GPU memory at node
level included), and the scores LeastAllocated (Fit's scoring strategy from v1beta2, a plugin of its own before)
and BalancedAllocation, with the arithmetic of each minor."""

from __future__ import annotations

from collections.abc import Sequence

from gpushare.domain import labels
from gpushare.domain.kubescheduler import (
    BALANCED_ALLOCATION,
    LEAST_ALLOCATED,
    MAX_NODE_SCORE,
    NODE_RESOURCES_FIT,
    ScoringProfile,
)
from gpushare.placement.framework import TOO_MANY_PODS, USAGE, Cycle, Plugin
from gpushare.placement.model import Node, Pod


def lacking(node: Node, pod: Pod) -> list[str]:
    """Pod slots, cpu, memory and other resources the node cannot give: nothing is freed during a run, so this is
    for good."""
    reasons = []
    if node.pods_used + 1 > node.pods:
        reasons.append(TOO_MANY_PODS)
    if pod.cpu and node.cpu_used + pod.cpu > node.cpu:
        reasons.append("Insufficient cpu")
    if pod.memory and node.memory_used + pod.memory > node.memory:
        reasons.append("Insufficient memory")
    for name, amount in pod.other:
        if amount and node.other_used.get(name, 0) + amount > node.other.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def exhausted(node: Node, pod: Pod) -> bool:
    """Fit fails on pods, cpu, memory or other resources (`lacking` has some to say): permanent within a run, so
    the fast engine drops the node. Asked for every node a bind changes, hence written out."""
    if node.pods_used >= node.pods:
        return True
    if pod.cpu and node.cpu_used + pod.cpu > node.cpu:
        return True
    if pod.memory and node.memory_used + pod.memory > node.memory:
        return True
    return any(amount and node.other_used.get(name, 0) + amount > node.other.get(name, 0) for name, amount in pod.other)


def could_ever_fit(node: Node, pod: Pod) -> bool:
    """Fit could pass on the node empty: what it can allocate holds the pod's requests (an upper bound on the nodes
    Fit passes, whatever runs there)."""
    if node.pods < 1 or pod.cpu > node.cpu or pod.memory > node.memory or pod.node_gpu_mem > node.gpu_mem:
        return False
    return all(amount <= node.other.get(name, 0) for name, amount in pod.other)


def least_allocated(node: Node, cpu: int, memory: int, scheduler: ScoringProfile) -> int:
    """LeastAllocated on cpu and memory (weights 1), the non-zero requests of the node plus `cpu`/`memory`. Written
    out per resource: the fast engine asks it for every node a bind changes, in every kind of pod's view."""
    total = weights = 0
    allocatable = node.cpu
    if allocatable or not scheduler.skips_unallocatable:
        weights += 1
        requested = node.cpu_nz_used + cpu
        if allocatable and requested <= allocatable:
            total += (allocatable - requested) * MAX_NODE_SCORE // allocatable
    allocatable = node.memory
    if allocatable or not scheduler.skips_unallocatable:
        weights += 1
        requested = node.memory_nz_used + memory
        if allocatable and requested <= allocatable:
            total += (allocatable - requested) * MAX_NODE_SCORE // allocatable
    return total // weights if weights else 0


def balanced(node: Node, pod: Pod, scheduler: ScoringProfile) -> int:
    """BalancedAllocation: how evenly cpu and memory would be requested."""
    if not scheduler.balanced_by_deviation:  # 1.20-1.21: the non-zero requests, 1 - |cpu - memory|
        cpu = (node.cpu_nz_used + pod.nz_cpu) / node.cpu if node.cpu else 1.0
        memory = (node.memory_nz_used + pod.nz_memory) / node.memory if node.memory else 1.0
        if cpu >= 1 or memory >= 1:
            return 0
        return int((1 - abs(cpu - memory)) * MAX_NODE_SCORE)
    if scheduler.balanced_skips_best_effort and not pod.cpu and not pod.memory:
        return 0
    with_pod = _balance(node, pod.cpu, pod.memory)
    if scheduler.balanced_by_improvement:
        return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - _balance(node, 0, 0)) // 2
    return with_pod


def _balance(node: Node, cpu: int, memory: int) -> int:
    """1 - the standard deviation of the node's requested fractions of cpu and memory (each capped at 1), as a
    score: with two resources the deviation is half their difference; a resource the node has none of is left out
    (and with one left, the deviation is 0)."""
    if not (node.cpu and node.memory):
        return MAX_NODE_SCORE
    fraction_cpu = min((node.cpu_used + cpu) / node.cpu, 1.0)
    fraction_memory = min((node.memory_used + memory) / node.memory, 1.0)
    return int((1 - abs((fraction_cpu - fraction_memory) / 2)) * MAX_NODE_SCORE)


def beyond_allocatable(node: Node, pod: Pod) -> bool:
    """A request other than GPU memory beyond what the node can allocate at all: Fit's unresolvable case but for GPU
    memory, which the search over arrays (`searchindex`) compares itself, request by request."""
    return (
        pod.cpu > node.cpu
        or pod.memory > node.memory
        or pod.node_core > sum(g.core_total for g in node.gpus)
        or any(amount > node.other.get(name, 0) for name, amount in pod.other)
    )


class Fit(Plugin):
    """NodeResourcesFit: every resource the node lacks, as kube-scheduler lists them. Requests are node-level (the
    largest init container counts when larger than the containers' sum), GPU memory included: kube-scheduler checks
    it before the extender looks at single GPUs (`ignoredByScheduler: false`). Its score is LeastAllocated."""

    name = NODE_RESOURCES_FIT

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        reasons = lacking(node, pod)
        if pod.node_gpu_mem and node.gpu_mem_used + pod.node_gpu_mem > node.gpu_mem:
            reasons.append(f"Insufficient {labels.GPU_MEM}")
        if pod.node_core and sum(g.core_used for g in node.gpus) + pod.node_core > sum(g.core_total for g in node.gpus):
            reasons.append(f"Insufficient {labels.GPU_CORE}")
        return reasons

    def unresolvable(self, reasons: Sequence[str], node: Node, pod: Pod) -> bool:
        """From 1.34 a request beyond what the node can allocate at all is UnschedulableAndUnresolvable (fitsRequest's
        InsufficientResource.Unresolvable); "Too many pods" never is."""
        if not self.scheduler.fit_unresolvable_beyond_allocatable:
            return False
        return pod.node_gpu_mem > node.gpu_mem or beyond_allocatable(node, pod)

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return [least_allocated(n, pod.nz_cpu, pod.nz_memory, self.scheduler) for n in feasible]

    # --- what the fast path reads: the resources a node keeps for good within a run -------------------------------

    def indexed(self, pod: Pod) -> bool:
        """The score index files nodes by what they have left of every resource; it holds GPU memory at node level
        as the extender asks it on one device, so a pod whose node-level request differs (an init container's) or
        that asks compute at node level is checked node by node."""
        return pod.node_gpu_mem == pod.gpu_mem and not pod.node_core

    def score_hook(self) -> str | None:
        return USAGE

    def pod_key(self, pod: Pod, prepared: object) -> object:
        return (pod.nz_cpu, pod.nz_memory)

    def node_score(self, node: Node, pod: Pod) -> int:
        return least_allocated(node, pod.nz_cpu, pod.nz_memory, self.scheduler)

    def lacking(self, node: Node, pod: Pod) -> list[str]:
        return lacking(node, pod)

    def exhausted(self, node: Node, pod: Pod) -> bool:
        return exhausted(node, pod)

    def could_ever_fit(self, node: Node, pod: Pod) -> bool:
        return could_ever_fit(node, pod)

    def beyond_allocatable(self, node: Node, pod: Pod) -> bool:
        return beyond_allocatable(node, pod)


class LeastAllocated(Fit):
    """NodeResourcesLeastAllocated (v1beta1 and the Policy API): Fit's score as a plugin of its own, no filter."""

    name = LEAST_ALLOCATED

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        return []


class BalancedAllocation(Plugin):
    name = BALANCED_ALLOCATION

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return [balanced(n, pod, self.scheduler) for n in feasible]

    def score_hook(self) -> str | None:
        return USAGE

    def pod_key(self, pod: Pod, prepared: object) -> object:
        return (pod.cpu, pod.memory, pod.nz_cpu, pod.nz_memory)

    def node_score(self, node: Node, pod: Pod) -> int:
        return balanced(node, pod, self.scheduler)
