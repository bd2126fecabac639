"""ACK's GPU sharing (GPUNodeMode, and ACK's device allocator as the GPUShare filter and device choice), as tables
written from ACK's documents, since its scheduler is not public: "Labels used by ACK to control GPUs"
(ack.node.gpu.schedule modes; ack.node.gpu.placement binpack or spread), "Allocate computing power by using shared GPU
scheduling" (seed 002: compute on core_mem nodes only, 100 per GPU, memory-only and compute pods never on one node),
"Multi-GPU sharing" (pod label aliyun.com/gpu-count: M GPUs of one node, N/M each), and "Change the minimum GPU memory
unit ... (128 MiB)" (seed 000: a cgpu GPU holds at most 16 pods)."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import cluster, container, node, pod

from gpushare.placement.plugins.ackgpu import AckGpuShare, GpuNodeMode

GPU_MEM, GPU_CORE = "aliyun.com/gpu-mem", "aliyun.com/gpu-core.percentage"
MODE, PLACEMENT = "ack.node.gpu.schedule", "ack.node.gpu.placement"


def gpu_node(
    name: str = "n", mode: str | None = None, gpus: int = 2, per_gpu: int = 8, **labels: str
) -> dict[str, Any]:
    found = node(name, gpus=gpus, per_gpu=per_gpu, labels=({MODE: mode} if mode else {}) | labels)
    if mode == "core_mem":
        for table in ("capacity", "allocatable"):
            found["status"][table][GPU_CORE] = str(100 * gpus)
    return found


def asking(memory: int = 0, core: int = 0, count: int | None = None, name: str = "p") -> dict[str, Any]:
    limits = {GPU_MEM: str(memory)} if memory else {}
    if core:
        limits[GPU_CORE] = str(core)
    return pod(
        name,
        containers=[container(limits=limits)],
        labels={"aliyun.com/gpu-count": str(count)} if count else None,
    )


def bound(i: int, memory: int, index: int, core: int = 0, on: str = "n") -> dict[str, Any]:
    found = asking(memory, core, name=f"b{i}")
    found["spec"]["nodeName"] = on
    found["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": str(index), "ALIYUN_COM_GPU_MEM_POD": str(memory)}
    return found


def no_share(mode: str) -> str:
    return f"node(s) didn't share GPUs ({MODE}={mode})"


def no_compute(mode: str) -> str:
    return f"node(s) didn't allocate GPU compute ({MODE}={mode})"


# (name, node, pod, expected reasons)
NODE_MODE: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("a GPU node without the label shares (share)", gpu_node(), asking(4), []),
    ("share", gpu_node(mode="share"), asking(4), []),
    ("cgpu", gpu_node(mode="cgpu"), asking(4), []),
    ("core_mem takes memory-only pods", gpu_node(mode="core_mem"), asking(4), []),
    ("default: whole GPUs (nvidia.com/gpu)", gpu_node(mode="default"), asking(4), [no_share("default")]),
    ("mps", gpu_node(mode="mps"), asking(4), [no_share("mps")]),
    ("topology", gpu_node(mode="topology"), asking(4), [no_share("topology")]),
    ("mig", gpu_node(mode="mig"), asking(4), [no_share("mig")]),
    ("compute on core_mem", gpu_node(mode="core_mem"), asking(4, core=30), []),
    ("compute on share", gpu_node(mode="share"), asking(4, core=30), [no_compute("share")]),
    ("compute on cgpu", gpu_node(mode="cgpu"), asking(4, core=30), [no_compute("cgpu")]),
    ("compute on a node without the label", gpu_node(), asking(4, core=30), [no_compute("share")]),
    ("a pod without GPU memory goes anywhere", gpu_node(mode="default"), asking(), []),
    ("a node without GPU memory is not this filter's", node("n", labels={MODE: "default"}), asking(4), []),
]


@pytest.mark.parametrize(("name", "gpus", "new", "expected"), NODE_MODE, ids=[c[0] for c in NODE_MODE])
def test_node_mode(name: str, gpus: dict[str, Any], new: dict[str, Any], expected: list[str]) -> None:
    case = cluster([gpus], new, semantics="ack")
    assert case.filter(GpuNodeMode(), "n") == expected


MIXED_MEM = "node(s) run memory-only GPU pods (compute pods cannot share them)"
MIXED_CORE = "node(s) run GPU compute pods (memory-only pods cannot share them)"

# (name, node, bound pods, pod, options, expected reasons, the devices it gets (asked only when it fits))
DEVICES: list[
    tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, Any], dict[str, Any], list[str], list[int]]
] = [
    ("binpack (default): the fullest device that holds it", gpu_node(), [bound(1, 3, 1)], asking(4), {}, [], [1]),
    (
        "binpack: a device without room is skipped",
        gpu_node(),
        [bound(1, 6, 0)],
        asking(4),
        {},
        [],
        [1],
    ),
    ("binpack: equal devices, the lowest index", gpu_node(), [], asking(4), {}, [], [0]),
    (
        "spread by the node's label: the emptiest device",
        gpu_node(**{PLACEMENT: "spread"}),
        [bound(1, 3, 0)],
        asking(4),
        {},
        [],
        [1],
    ),
    (
        "spread by the run's default",
        gpu_node(),
        [bound(1, 3, 0)],
        asking(4),
        {"placement": "spread"},
        [],
        [1],
    ),
    (
        "the node's binpack label over the run's spread",
        gpu_node(**{PLACEMENT: "binpack"}),
        [bound(1, 3, 1)],
        asking(4),
        {"placement": "spread"},
        [],
        [1],
    ),
    (
        "no device holds the request",
        gpu_node(),
        [bound(1, 5, 0), bound(2, 5, 1)],
        asking(4),
        {},
        ["Insufficient GPU Memory in one device"],
        [],
    ),
    (
        "multi-GPU: N/M on each of M devices of the node",
        gpu_node(gpus=4),
        [bound(1, 6, 0)],
        asking(8, count=2),
        {},
        [],
        [1, 2],
    ),
    (
        "multi-GPU: binpack takes the fullest devices that hold N/M",
        gpu_node(gpus=4),
        [bound(1, 2, 1), bound(2, 3, 3)],
        asking(8, count=2),
        {},
        [],
        [1, 3],
    ),
    (
        "multi-GPU: fewer than M devices hold N/M",
        gpu_node(gpus=2),
        [bound(1, 6, 0)],
        asking(8, count=2),
        {},
        ["Insufficient GPU Memory in 2 devices"],
        [],
    ),
    (
        "compute: memory and percentage on one device",
        gpu_node(mode="core_mem"),
        [bound(1, 2, 0, core=60)],
        asking(4, core=40),
        {},
        [],
        [0],
    ),
    (
        "compute: the device with memory lacks the percentage",
        gpu_node(mode="core_mem"),
        [bound(1, 2, 0, core=60), bound(2, 7, 1, core=30)],
        asking(2, core=50),
        {},
        ["Insufficient GPU compute in one device"],
        [],
    ),
    (
        "a compute pod on a node running memory-only GPU pods",
        gpu_node(mode="core_mem"),
        [bound(1, 2, 0)],
        asking(2, core=10),
        {},
        [MIXED_MEM],
        [],
    ),
    (
        "a memory-only pod on a node running compute pods",
        gpu_node(mode="core_mem"),
        [bound(1, 2, 0, core=10)],
        asking(2),
        {},
        [MIXED_CORE],
        [],
    ),
    (
        "cgpu: a GPU holds at most 16 pods",
        gpu_node(mode="cgpu", gpus=1, per_gpu=32),
        [bound(i, 1, 0) for i in range(16)],
        asking(1),
        {},
        ["GPU pod limit reached (16 pods per GPU on cgpu nodes)"],
        [],
    ),
    (
        "cgpu: 15 pods leave room for one more",
        gpu_node(mode="cgpu", gpus=1, per_gpu=32),
        [bound(i, 1, 0) for i in range(15)],
        asking(1),
        {},
        [],
        [0],
    ),
    (
        "cgpu: the cap as the run sets it; the full GPU is skipped",
        gpu_node(mode="cgpu"),
        [bound(1, 1, 0), bound(2, 1, 0)],
        asking(1),
        {"cgpu_max_pods_per_gpu": 2},
        [],
        [1],
    ),
    (
        "share nodes have no pod cap",
        gpu_node(mode="share", gpus=1, per_gpu=32),
        [bound(i, 1, 0) for i in range(16)],
        asking(1),
        {},
        [],
        [0],
    ),
]


@pytest.mark.parametrize(
    ("name", "gpus", "existing", "new", "options", "reasons", "devices"), DEVICES, ids=[c[0] for c in DEVICES]
)
def test_device_filter_and_choice(
    name: str,
    gpus: dict[str, Any],
    existing: list[dict[str, Any]],
    new: dict[str, Any],
    options: dict[str, Any],
    reasons: list[str],
    devices: list[int],
) -> None:
    case = cluster([gpus], new, existing=existing, semantics="ack", **options)
    plugin = case.profile.gpus
    assert isinstance(plugin, AckGpuShare)
    assert case.filter(plugin, "n") == reasons
    if not reasons:  # the allocator is asked only about a node that fits
        assert sorted(g.index for g in plugin.choose_gpus(case.by_name("n"), case.pod)) == devices


@pytest.mark.parametrize(("placement", "expected"), [("binpack", "busy"), ("spread", "idle")])
def test_node_order_by_gpu_memory_allocated(placement: str, expected: str) -> None:
    # ACK: "Preferably Use Bin Packing During Pod Scheduling": binpack takes the node with the larger share of GPU
    # memory allocated, spread the smaller (ties by name; no kube-scheduler score in the ack profile)
    nodes = [gpu_node("busy"), gpu_node("idle"), gpu_node("mid")]
    existing = [bound(1, 8, 0, on="busy"), bound(2, 4, 0, on="busy"), bound(3, 4, 0, on="mid")]
    case = cluster(nodes, asking(2), existing=existing, semantics="ack", placement=placement)
    chosen, _ = case.profile.choose(case.pod, case.nodes, case.nodes)
    assert chosen.name == expected
