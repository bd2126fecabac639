"""ACK's GPU sharing, as its documents describe it (seeds 000-002): node modes (`ack.node.gpu.schedule`), GPU
memory and compute per device, several GPUs for one pod, the cGPU pod cap, and binpack or spread over nodes and
GPUs. ACK's scheduler is not public; these plugins model what its documents promise, in the extender's shape
(`gpushare.GpuShare`)."""

from __future__ import annotations

from gpushare.domain import labels
from gpushare.domain.kubescheduler import GPU_NODE_MODE
from gpushare.domain.labels import Placement
from gpushare.placement.framework import Cycle, Plugin
from gpushare.placement.model import Gpu, Node, Pod
from gpushare.placement.plugins.extender import GpuShare


class GpuNodeMode(Plugin):
    """Shared pods only on share/cgpu/core_mem nodes, compute pods only on core_mem ones: a node serves one label
    mode, read from its labels alone."""

    name = GPU_NODE_MODE
    static = True

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        if not pod.wants_gpu or node.gpu_mem <= 0:
            return []
        if node.mode not in labels.SHARED_MODES:
            return [f"node(s) didn't share GPUs ({labels.SCHEDULE_LABEL}={node.mode})"]
        if pod.core and node.mode != "core_mem":
            return [f"node(s) didn't allocate GPU compute ({labels.SCHEDULE_LABEL}={node.mode})"]
        return []


class AckGpuShare(GpuShare):
    """Device rules: memory-only and compute pods never share a node; a cgpu GPU holds at most
    `cgpu_max_pods_per_gpu` pods; a compute pod needs its percentage free on the device. GPUs are chosen by the
    node's placement label (binpack fills the fullest fitting GPUs first, spread the emptiest), and nodes by GPU
    memory allocated (`node_key`)."""

    fails_deviceless_bind = False

    def __init__(self, placement: Placement, cgpu_max_pods_per_gpu: int) -> None:
        self.placement = placement
        self.cgpu_max_pods_per_gpu = cgpu_max_pods_per_gpu
        #: ACK's scheduler's reading of a bound pod's annotations: its allocation (multi-GPU pods name each device
        #: there), else the old extender's, as it reads them back (`kube.ledger.held`).
        self.grammar = "ack"

    def devices(self, gpu_mem: int, gpu_count: int) -> int:
        """ACK's device plugin always reports gpu-count; a node without it is taken as one GPU holding the memory."""
        return (gpu_count or 1) if gpu_mem else 0

    def room_decides(self, pod: Pod) -> bool:
        """Node modes, per-GPU pod caps and compute ask more of a device than room."""
        return False

    def mixes(self, node: Node, kind: str) -> bool:
        return (kind == "compute" and node.mem_only_pods > 0) or (kind == "mem" and node.compute_pods > 0)

    def eligible(self, gpu: Gpu, node: Node, kind: str) -> bool:
        if node.mode == "cgpu" and gpu.pods >= self.cgpu_max_pods_per_gpu:
            return False
        return kind != "compute" or gpu.core_free > 0

    def usable(self, gpu: Gpu, pod: Pod, node: Node) -> bool:
        if gpu.free < pod.per_gpu or not self.eligible(gpu, node, pod.gpu_kind):
            return False
        return not pod.core or gpu.core_free >= pod.core

    def limit_reason(self) -> str:
        return f"GPU pod limit reached ({self.cgpu_max_pods_per_gpu} pods per GPU on cgpu nodes)"

    def holds(self, node: Node, pod: Pod, gpus: list[Gpu], unit: str) -> str:
        """The node's label mode first (a relabelled node may no longer share), then the devices."""
        reasons = _MODE.filter(node, pod, None)
        return reasons[0] if reasons else super().holds(node, pod, gpus, unit)

    def choose_gpus(self, node: Node, pod: Pod) -> list[Gpu]:
        if not pod.wants_gpu:
            return []
        candidates = [g for g in node.gpus if self.usable(g, pod, node)]
        if node.gpu_placement == "spread":
            candidates.sort(key=lambda g: (-g.free, -g.core_free, g.index))
        else:
            candidates.sort(key=lambda g: (g.free, g.core_free, g.index))
        return candidates[: pod.gpu_count]

    def node_key(self, node: Node) -> tuple[float, str]:
        """Node order (lower is better): binpack takes the node with the largest share of GPU memory allocated,
        spread the smallest; ties by node name. ACK's own node scoring is not public."""
        allocated = node.allocated
        return (-allocated if self.placement == "binpack" else allocated, node.name)


_MODE = GpuNodeMode()
