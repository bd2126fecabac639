"""The scheduling steps, as the scheduler runs them: filter (with a reason), score, bind.

Both engines call these functions, so they cannot disagree on what fits or which GPU a pod gets;
they differ only in how they find the best fitting node. Filters run in kube-scheduler's order and a
node reports its first failing step; reason texts are the scheduler's and the extender's own where
one exists (facts section 4).
"""

from __future__ import annotations

from gpushare.domain import labels
from gpushare.placement.model import Gpu, Node, Pod, Requirement, Semantics, Taint, Toleration

UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
GPU_ONE_DEVICE = "Insufficient GPU Memory in one device"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key is None or t.key == "":
            if t.operator == "Exists":
                return True
            continue
        if t.key != taint.key:
            continue
        if t.operator == "Exists" or (t.value or "") == taint.value:
            return True
    return False


def _matches(requirement: Requirement, node: Node) -> bool:
    if requirement.field:
        present, value = requirement.key == "metadata.name", node.name
    else:
        present, value = requirement.key in node.labels, node.labels.get(requirement.key, "")
    op = requirement.operator
    if op == "In":
        return present and value in requirement.values
    if op == "NotIn":
        return not present or value not in requirement.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present:
        try:
            number, bound = int(value), int(requirement.values[0])
        except (ValueError, IndexError):
            return False
        return number > bound if op == "Gt" else number < bound
    return False


def static_reason(node: Node, pod: Pod, semantics: Semantics) -> str | None:
    """Filters that depend on the node's labels and taints only: NodeUnschedulable, TaintToleration,
    NodeAffinity, and (ACK) the node's GPU mode."""
    if node.unschedulable and not tolerates(pod.tolerations, UNSCHEDULABLE_TAINT):
        return UNSCHEDULABLE
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if any(node.labels.get(k) != v for k, v in pod.node_selector):
        return AFFINITY
    if pod.affinity and not any(all(_matches(r, node) for r in term) for term in pod.affinity):
        return AFFINITY
    if semantics.name == "ack" and pod.wants_gpu and node.gpu_mem > 0:
        if node.mode not in labels.SHARED_MODES:
            return f"node(s) didn't share GPUs ({labels.SCHEDULE_LABEL}={node.mode})"
        if pod.core and node.mode != "core_mem":
            return f"node(s) didn't allocate GPU compute ({labels.SCHEDULE_LABEL}={node.mode})"
    return None


def resource_reasons(node: Node, pod: Pod) -> list[str]:
    """NodeResourcesFit: every resource the node lacks, as kube-scheduler lists them."""
    reasons = []
    if node.pods_used + 1 > node.pods:
        reasons.append("Too many pods")
    if pod.cpu and node.cpu_used + pod.cpu > node.cpu:
        reasons.append("Insufficient cpu")
    if pod.memory and node.memory_used + pod.memory > node.memory:
        reasons.append("Insufficient memory")
    if pod.gpu_mem and node.gpu_mem_used + pod.gpu_mem > node.gpu_mem:
        reasons.append(f"Insufficient {labels.GPU_MEM}")
    if pod.core and sum(g.core_used for g in node.gpus) + pod.core > sum(g.core_total for g in node.gpus):
        reasons.append(f"Insufficient {labels.GPU_CORE}")
    return reasons


def _usable(gpu: Gpu, pod: Pod, node: Node, semantics: Semantics) -> bool:
    if gpu.free < pod.per_gpu:
        return False
    if semantics.name == "upstream":
        return True
    if pod.core and gpu.core_free < pod.core:
        return False
    return not (node.mode == "cgpu" and gpu.pods >= semantics.cgpu_max_pods_per_gpu)


def gpu_reason(node: Node, pod: Pod, semantics: Semantics) -> str | None:
    """The extender's filter (upstream), or ACK's device-level rules: is there room on the GPUs themselves?"""
    if not pod.wants_gpu:
        return None
    if semantics.name == "ack":
        if pod.core and node.mem_only_pods:
            return "node(s) run memory-only GPU pods (compute pods cannot share them)"
        if not pod.core and node.compute_pods:
            return "node(s) run GPU compute pods (memory-only pods cannot share them)"
    usable = sum(1 for g in node.gpus if _usable(g, pod, node, semantics))
    if usable >= pod.gpu_count:
        return None
    roomy = sum(1 for g in node.gpus if g.free >= pod.per_gpu)
    if roomy < pod.gpu_count:
        return GPU_ONE_DEVICE if pod.gpu_count == 1 else f"Insufficient GPU Memory in {pod.gpu_count} devices"
    if pod.core and sum(1 for g in node.gpus if g.free >= pod.per_gpu and g.core_free >= pod.core) < pod.gpu_count:
        return "Insufficient GPU compute in one device"
    return f"GPU pod limit reached ({semantics.cgpu_max_pods_per_gpu} pods per GPU on cgpu nodes)"


def reasons(node: Node, pod: Pod, semantics: Semantics) -> list[str]:
    """Why `pod` does not fit `node` now (empty: it fits), the first failing step only."""
    static = static_reason(node, pod, semantics)
    if static is not None:
        return [static]
    resources = resource_reasons(node, pod)
    if resources:
        return resources
    gpu = gpu_reason(node, pod, semantics)
    return [gpu] if gpu is not None else []


def score_key(node: Node, semantics: Semantics) -> tuple[float, str]:
    """Node choice among fitting nodes: binpack takes the most allocated, spread the least; ties by name."""
    allocated = node.allocated
    return (-allocated if semantics.placement == "binpack" else allocated, node.name)


def choose_gpus(node: Node, pod: Pod, semantics: Semantics) -> list[Gpu]:
    """Bind: the GPUs a fitting pod gets.

    upstream: the smallest available device that fits, lowest index on ties (the extender's best fit).
    ack: the node's placement label (or the default): binpack fills the fullest fitting GPUs first,
    spread the emptiest.
    """
    candidates = [g for g in node.gpus if _usable(g, pod, node, semantics)]
    if semantics.name == "ack" and node.gpu_placement == "spread":
        candidates.sort(key=lambda g: (-g.free, -g.core_free, g.index))
    else:
        candidates.sort(key=lambda g: (g.free, g.core_free, g.index))
    return candidates[: pod.gpu_count]


def charge(node: Node, pod: Pod, gpus: list[Gpu]) -> None:
    """Record a bound pod's usage on its node and GPUs."""
    node.cpu_used += pod.cpu
    node.memory_used += pod.memory
    node.pods_used += 1
    node.gpu_mem_used += pod.gpu_mem
    if pod.wants_gpu:
        if pod.core:
            node.compute_pods += 1
        else:
            node.mem_only_pods += 1
    for gpu in gpus:
        gpu.used += pod.per_gpu
        gpu.core_used += pod.core
        gpu.pods += 1
