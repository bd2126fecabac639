"""GPUShare, the open-source gpushare scheduler extender (filter and bind verbs): is there one device with room for
the pod's GPU memory, and which device it gets (upstream-extender c0b6141, facts section 4).

kube-scheduler asks it after its own filters, about the nodes they left. It divides a node's memory evenly over
`gpu-count` devices, counts a device's use from its pods' annotations, and binds to the device with the least
memory left that holds the request (best fit), lowest index on ties. ACK's allocator (`ackgpu`) keeps this shape
and changes which devices may take a pod and how one is chosen.
"""

from __future__ import annotations

from typing import ClassVar

from gpushare.domain.kubescheduler import GPU_SHARE
from gpushare.kube.ledger import Grammar
from gpushare.placement.framework import GPU_SHORT, Cycle, Plugin
from gpushare.placement.model import Gpu, Node, Pod

#: The extender's words for a node whose GPUs lack the room: in one device, or in N for a multi-GPU pod.
ONE_DEVICE = f"{GPU_SHORT} one device"


class GpuShare(Plugin):
    name = GPU_SHARE
    #: Its reason for a node where no one device has room for the pod (what the fast path counts).
    one_device = ONE_DEVICE

    # --- what may take a pod: the extender's answers, which ACK's allocator narrows --------------------------

    #: Whose reading of a bound pod's annotations counts: the extender's own (`kube.ledger.held`: one index as
    #: Atoi reads it, the POD share; anything else names no device, and the pod counts at node level only).
    grammar: Grammar = "upstream"
    #: The extender binds every pod that names its resource (kube-scheduler's IsInterested reads the init
    #: containers and a 0 too), and its bind finds no device for a pod whose containers ask no memory: the bind
    #: fails on every retry (`Pod.bind_error`). ACK's scheduler binds such a pod as any other.
    fails_deviceless_bind: ClassVar[bool] = True

    def devices(self, gpu_mem: int, gpu_count: int) -> int:
        """How many devices a node's capacity makes: `gpu-count` of them. A node advertising gpu-mem without
        gpu-count has none (the extender's NodeInfo makes a device per count), so no GPU pod ever fits it, though
        kube-scheduler still sees its memory at node level."""
        return gpu_count if gpu_mem else 0

    def mixes(self, node: Node, kind: str) -> bool:
        """Whether the node's GPU pods keep pods of this kind away (the extender: never)."""
        return False

    def eligible(self, gpu: Gpu, node: Node, kind: str) -> bool:
        """Could this GPU take a pod of this kind at all (the extender: any)?"""
        return True

    def usable(self, gpu: Gpu, pod: Pod, node: Node) -> bool:
        return gpu.free >= pod.per_gpu and self.eligible(gpu, node, pod.gpu_kind)

    def indexed(self, pod: Pod) -> bool:
        """The indexes hold each node's `room`: they stand in for the extender where room decides."""
        return not pod.wants_gpu or self.room_decides(pod)

    def room_decides(self, pod: Pod) -> bool:
        """A one-device pod fits wherever the node's `room` (the most free on a healthy device, at most what the
        node has left) holds it: every device may take any pod here. ACK's rules ask more of a device."""
        return pod.gpu_count == 1 and not pod.core

    def limit_reason(self) -> str:
        """Why no device took a pod that had memory enough on each: ACK's per-GPU pod cap."""
        return ""

    def holds(self, node: Node, pod: Pod, gpus: list[Gpu], unit: str) -> str:
        """Why a running pod's devices no longer take it, checked as it is put back on the node in its order (after a
        change of unit, label mode or GPU memory); "" where they do. Its place is not scheduled again: only what the
        devices hold is checked."""
        if self.mixes(node, pod.gpu_kind):
            return "memory-only and compute GPU pods never share a node"
        for gpu in gpus:
            if gpu.free < pod.per_gpu:
                return (
                    f"GPU {gpu.index} has {gpu.free} of {gpu.total} ({unit}) free after the pods before it, < "
                    f"{pod.per_gpu}"
                )
            if not self.eligible(gpu, node, pod.gpu_kind):
                return f"GPU {gpu.index}: {self.limit_reason()}"
            if pod.core and gpu.core_free < pod.core:
                return f"GPU {gpu.index} has {gpu.core_free}% compute free after the pods before it, < {pod.core}%"
        return ""

    # --- filter ----------------------------------------------------------------------------------------------

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        """Is there room on the GPUs themselves? Pods without GPU memory are not the extender's."""
        if not pod.wants_gpu or (node.room >= pod.per_gpu and self.room_decides(pod)):
            return []
        if self.mixes(node, pod.gpu_kind):
            return [
                "node(s) run memory-only GPU pods (compute pods cannot share them)"
                if pod.core
                else "node(s) run GPU compute pods (memory-only pods cannot share them)"
            ]
        if sum(1 for g in node.gpus if self.usable(g, pod, node)) >= pod.gpu_count:
            return []
        roomy = sum(1 for g in node.gpus if g.free >= pod.per_gpu)
        if roomy < pod.gpu_count:
            return [ONE_DEVICE if pod.gpu_count == 1 else f"{GPU_SHORT} {pod.gpu_count} devices"]
        if pod.core and sum(1 for g in node.gpus if g.free >= pod.per_gpu and g.core_free >= pod.core) < pod.gpu_count:
            return ["Insufficient GPU compute in one device"]
        return [self.limit_reason()]

    def capacity(self, node: Node, m: int, kind: str) -> int:
        """What each of m GPUs can give a pod of this kind: the m-th largest free amount among the GPUs that could
        take it at all (`filter`'s own tests). An upper bound on fit, so the fast engine's index never skips a node
        that fits."""
        if self.mixes(node, kind):
            return 0
        frees = [g.free for g in node.gpus if self.eligible(g, node, kind)]
        if m > len(frees):
            return 0
        return max(frees) if m == 1 else sorted(frees, reverse=True)[m - 1]

    # --- bind --------------------------------------------------------------------------------------------------

    def choose_gpus(self, node: Node, pod: Pod) -> list[Gpu]:
        """The device a fitting pod gets: the least free healthy device that holds the request, lowest index on
        ties (the extender's best fit). A pod without GPU memory gets none: the extender is not asked."""
        if not pod.wants_gpu:
            return []
        best, least = None, 0
        for g in node.gpus:
            free = g.total - g.used
            if g.healthy and free >= pod.per_gpu and (best is None or free < least):
                best, least = g, free
        return [best] if best is not None else []
