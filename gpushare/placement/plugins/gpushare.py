"""GPUShare, the open-source gpushare scheduler extender (filter and bind verbs): is there one device with room for
the pod's GPU memory, and which device it gets (upstream-extender c0b6141, facts section 4).

kube-scheduler asks it after its own filters, about the nodes they left. It divides a node's memory evenly over
`gpu-count` devices, counts a device's use from its pods' annotations, and binds to the device with the least
memory left that holds the request (best fit), lowest index on ties. ACK's allocator (`ackgpu`) keeps this shape
and changes which devices may take a pod and how one is chosen.
"""

from __future__ import annotations

import re

from gpushare.domain.kubescheduler import GPU_SHARE
from gpushare.placement.framework import Cycle, Plugin
from gpushare.placement.model import Gpu, Node, Pod

ONE_DEVICE = "Insufficient GPU Memory in one device"


def go_atoi(text: object) -> int | None:
    """Go's strconv.Atoi, which the extender reads its annotations with: an optional sign and decimal digits, nothing
    else (no spaces, no list), within a 64-bit int; None where Atoi returns an error."""
    value = str(text)
    # plain digits, a fleet's every bound pod, skip the pattern
    if not (value.isascii() and value.isdigit()) and not re.fullmatch(r"[+-]?[0-9]+", value):
        return None
    if len(value.lstrip("+-0")) > 19:  # beyond any int64 (and long enough for Python to refuse to convert)
        return None
    number = int(value)
    return number if -(2**63) <= number < 2**63 else None  # beyond Go's int: Atoi's range error


def kind(pod: Pod) -> str:
    """What a pod asks of GPUs: none, memory only, or memory and compute (the fast engine's classes read it)."""
    return "none" if not pod.wants_gpu else ("compute" if pod.core else "mem")


class GpuShare(Plugin):
    name = GPU_SHARE

    # --- what may take a pod: the extender's answers, which ACK's allocator narrows --------------------------

    # --- what a bound pod holds: read back from the annotations bind wrote ---------------------------------------

    def indices(self, annotation: object) -> tuple[int, ...] | None:
        """The devices a bound pod's ALIYUN_COM_GPU_MEM_IDX names: one index, as Atoi reads it; anything else (a list,
        a space, a negative number) names none, and the pod is then counted at node level only."""
        index = None if annotation is None else go_atoi(annotation)
        return None if index is None or index < 0 else (index,)

    def charged(self, pod: Pod) -> int:
        """What a bound pod holds on its device: its ALIYUN_COM_GPU_MEM_POD annotation (0 when missing, not a number
        or negative), not its limits."""
        return pod.gpu_mem_annotated or 0

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
        return gpu.free >= pod.per_gpu and self.eligible(gpu, node, kind(pod))

    def room_decides(self, pod: Pod) -> bool:
        """A one-device pod fits wherever the node's `room` (the most free on a healthy device, at most what the
        node has left) holds it: every device may take any pod here. ACK's rules ask more of a device."""
        return pod.gpu_count == 1 and not pod.core

    def limit_reason(self) -> str:
        """Why no device took a pod that had memory enough on each: ACK's per-GPU pod cap."""
        return ""

    # --- filter ----------------------------------------------------------------------------------------------

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        """Is there room on the GPUs themselves? Pods without GPU memory are not the extender's."""
        if not pod.wants_gpu or (node.room >= pod.per_gpu and self.room_decides(pod)):
            return []
        if self.mixes(node, kind(pod)):
            return [
                "node(s) run memory-only GPU pods (compute pods cannot share them)"
                if pod.core
                else "node(s) run GPU compute pods (memory-only pods cannot share them)"
            ]
        if sum(1 for g in node.gpus if self.usable(g, pod, node)) >= pod.gpu_count:
            return []
        roomy = sum(1 for g in node.gpus if g.free >= pod.per_gpu)
        if roomy < pod.gpu_count:
            return [ONE_DEVICE if pod.gpu_count == 1 else f"Insufficient GPU Memory in {pod.gpu_count} devices"]
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
