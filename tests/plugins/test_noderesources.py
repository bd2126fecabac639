"""NodeResources: Fit's filter, and the LeastAllocated and BalancedAllocation scores, on kube-scheduler's own cases
(noderesources/fit_test.go TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests; least_allocated_test.go
TestLeastAllocatedScoringStrategy (1.20-1.21: TestNodeResourcesLeastAllocated); balanced_allocation_test.go
TestNodeResourcesBalancedAllocation, whose numbers differ before 1.22, where the formula changed)."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import cluster, container, node, pod

from gpushare.domain.minors import scoring_profile
from gpushare.placement.framework import Plugin
from gpushare.placement.plugins.noderesources import BalancedAllocation, Fit, LeastAllocated

EXT_A, EXT_B = "example.com/aaa", "example.com/bbb"
K8S_A, K8S_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


def res(cpu: int = 0, memory: int = 0) -> dict[str, str]:
    """A container's requests as upstream's framework.Resource writes them: millicores and bytes."""
    return {"cpu": f"{cpu}m", "memory": str(memory)}


def requests(*usage: dict[str, str]) -> list[dict[str, Any]]:
    return [container(u) for u in usage]


def fit_node(pods: str = "32") -> dict[str, Any]:
    """makeAllocatableResources(10, 20, 32, 5, 20, 5): 10m cpu, 20 bytes, 32 pods, 5 of example.com/aaa, 20 bytes of
    ephemeral-storage, 5 of hugepages-2Mi."""
    extra = {EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"} if pods == "32" else {}
    return node("n", cpu="10m", memory="20", pods=pods, **extra)


def ext(name: str, amount: int, cpu: int = 1, memory: int = 1) -> dict[str, str]:
    return {"cpu": f"{cpu}m", "memory": str(memory), name: str(amount)}


CPU, MEM = "Insufficient cpu", "Insufficient memory"

# (name, pod containers, pod init containers, pod overhead, the bound pod's containers, expected reasons)
ENOUGH: list[
    tuple[str, list[dict[str, str]], list[dict[str, str]], dict[str, str] | None, list[dict[str, str]], list[str]]
] = [
    # TestEnoughRequests
    ("no resources requested always fits", [], [], None, [res(10, 20)], []),
    ("too many resources fails", [res(1, 1)], [], None, [res(10, 20)], [CPU, MEM]),
    ("too many resources fails due to init container cpu", [res(1, 1)], [res(3, 1)], None, [res(8, 19)], [CPU]),
    (
        "too many resources fails due to highest init container cpu",
        [res(1, 1)],
        [res(3, 1), res(2, 1)],
        None,
        [res(8, 19)],
        [CPU],
    ),
    ("too many resources fails due to init container memory", [res(1, 1)], [res(1, 3)], None, [res(9, 19)], [MEM]),
    (
        "too many resources fails due to highest init container memory",
        [res(1, 1)],
        [res(1, 3), res(1, 2)],
        None,
        [res(9, 19)],
        [MEM],
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        [res(1, 1)],
        [res(1, 1)],
        None,
        [res(9, 19)],
        [],
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        [res(1, 1)],
        [res(1, 1), res(1, 1)],
        None,
        [res(9, 19)],
        [],
    ),
    ("both resources fit", [res(1, 1)], [], None, [res(5, 5)], []),
    ("one resource memory fits", [res(2, 1)], [], None, [res(9, 5)], [CPU]),
    ("one resource cpu fits", [res(1, 2)], [], None, [res(5, 19)], [MEM]),
    ("equal edge case", [res(5, 1)], [], None, [res(5, 19)], []),
    ("equal edge case for init container", [res(4, 1)], [res(5, 1)], None, [res(5, 19)], []),
    ("extended resource fits", [{EXT_A: "1"}], [], None, [], []),
    ("extended resource fits for init container", [], [{EXT_A: "1"}], None, [], []),
    ("extended resource capacity enforced", [ext(EXT_A, 10)], [], None, [], [f"Insufficient {EXT_A}"]),
    (
        "extended resource capacity enforced for init container",
        [],
        [ext(EXT_A, 10)],
        None,
        [],
        [f"Insufficient {EXT_A}"],
    ),
    ("extended resource allocatable enforced", [ext(EXT_A, 1)], [], None, [{EXT_A: "5"}], [f"Insufficient {EXT_A}"]),
    (
        "extended resource allocatable enforced for init container",
        [],
        [ext(EXT_A, 1)],
        None,
        [{EXT_A: "5"}],
        [f"Insufficient {EXT_A}"],
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        [ext(EXT_A, 3), ext(EXT_A, 3)],
        [],
        None,
        [{EXT_A: "2"}],
        [f"Insufficient {EXT_A}"],
    ),
    (
        "extended resource allocatable admits multiple init containers",
        [],
        [ext(EXT_A, 3), ext(EXT_A, 3)],
        None,
        [{EXT_A: "2"}],
        [],
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        [],
        [ext(EXT_A, 6), ext(EXT_A, 3)],
        None,
        [{EXT_A: "2"}],
        [f"Insufficient {EXT_A}"],
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        [ext(EXT_B, 1)],
        [],
        None,
        [],
        [f"Insufficient {EXT_B}"],
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        [],
        [ext(EXT_B, 1)],
        None,
        [],
        [f"Insufficient {EXT_B}"],
    ),
    ("kubernetes.io resource capacity enforced", [ext(K8S_A, 10)], [], None, [], [f"Insufficient {K8S_A}"]),
    (
        "kubernetes.io resource capacity enforced for init container",
        [],
        [ext(K8S_B, 10)],
        None,
        [],
        [f"Insufficient {K8S_B}"],
    ),
    ("hugepages resource capacity enforced", [ext(HUGE_A, 10)], [], None, [], [f"Insufficient {HUGE_A}"]),
    (
        "hugepages resource capacity enforced for init container",
        [],
        [ext(HUGE_A, 10)],
        None,
        [],
        [f"Insufficient {HUGE_A}"],
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        [ext(HUGE_A, 3), ext(HUGE_A, 3)],
        [],
        None,
        [{HUGE_A: "2"}],
        [f"Insufficient {HUGE_A}"],
    ),
    ("resources + pod overhead fits", [res(1, 1)], [], {"cpu": "3m", "memory": "13"}, [res(5, 5)], []),
    ("requests + overhead does not fit for memory", [res(1, 1)], [], {"cpu": "1m", "memory": "15"}, [res(5, 5)], [MEM]),
    # TestStorageRequests
    ("due to container scratch disk", [res(1, 1)], [], None, [res(10, 10)], [CPU]),
    ("pod fit", [res(1, 1)], [], None, [res(2, 10)], []),
    (
        "storage ephemeral local storage request exceeds allocatable",
        [{"ephemeral-storage": "25"}],
        [],
        None,
        [res(2, 2)],
        ["Insufficient ephemeral-storage"],
    ),
    ("pod fits", [{"ephemeral-storage": "10"}], [], None, [res(2, 2)], []),
]


@pytest.mark.parametrize("minor", [20, 28, 36])
@pytest.mark.parametrize(
    ("name", "containers", "init", "overhead", "bound", "expected"), ENOUGH, ids=[c[0] for c in ENOUGH]
)
def test_fit_filter(
    name: str,
    containers: list[dict[str, str]],
    init: list[dict[str, str]],
    overhead: dict[str, str] | None,
    bound: list[dict[str, str]],
    expected: list[str],
    minor: int,
) -> None:
    spec: dict[str, Any] = {"overhead": overhead} if overhead else {}
    new = pod(containers=requests(*containers), init=requests(*init), **spec)
    case = cluster([fit_node()], new, existing=[pod("bound", containers=requests(*bound), on="n")], minor=minor)
    assert case.filter(Fit(scoring_profile(minor)), "n") == expected


# TestNotEnoughRequests: a node of one pod slot, one pod bound
NOT_ENOUGH: list[tuple[str, list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]] = [
    (
        "even without specified resources predicate fails when there's no space for additional pod",
        [],
        [],
        [res(10, 20)],
    ),
    (
        "even if both resources fit predicate fails when there's no space for additional pod",
        [res(1, 1)],
        [],
        [res(5, 5)],
    ),
    (
        "even for equal edge case predicate fails when there's no space for additional pod",
        [res(5, 1)],
        [],
        [res(5, 19)],
    ),
    (
        "even for equal edge case predicate fails when there's no space for additional pod due to init container",
        [res(5, 1)],
        [res(5, 1)],
        [res(5, 19)],
    ),
]


@pytest.mark.parametrize("minor", [20, 28, 36])
@pytest.mark.parametrize(("name", "containers", "init", "bound"), NOT_ENOUGH, ids=[c[0] for c in NOT_ENOUGH])
def test_fit_filter_pods(
    name: str, containers: list[dict[str, str]], init: list[dict[str, str]], bound: list[dict[str, str]], minor: int
) -> None:
    new = pod(containers=requests(*containers), init=requests(*init))
    case = cluster([fit_node(pods="1")], new, existing=[pod("bound", containers=requests(*bound), on="n")], minor=minor)
    assert case.filter(Fit(scoring_profile(minor)), "n") == ["Too many pods"]


# written: GPU memory is a node-level resource to kube-scheduler (the extender then looks at single devices)
GPU_FIT: list[tuple[str, str, list[str], list[str]]] = [
    ("GPU memory the node has left", "4", ["12"], []),
    ("exactly what is left", "4", ["8", "4"], []),
    ("more than the node has left", "5", ["12"], ["Insufficient aliyun.com/gpu-mem"]),
    ("more than the node has at all", "17", [], ["Insufficient aliyun.com/gpu-mem"]),
]


@pytest.mark.parametrize(("name", "asked", "bound", "expected"), GPU_FIT, ids=[c[0] for c in GPU_FIT])
def test_fit_filter_gpu_memory_at_node_level(name: str, asked: str, bound: list[str], expected: list[str]) -> None:
    gpu_node = node("n", gpus=2, per_gpu=8)
    existing = [
        pod(f"b{i}", containers=[container(limits={"aliyun.com/gpu-mem": g})], on="n") for i, g in enumerate(bound)
    ]
    new = pod(containers=[container(limits={"aliyun.com/gpu-mem": asked})])
    case = cluster([gpu_node], new, existing=existing)
    assert case.filter(Fit(scoring_profile(28)), "n") == expected


def least_allocated(minor: int) -> Plugin:
    """The score: its own plugin before v1beta2 (1.20-1.21 here), NodeResourcesFit's scoring strategy after."""
    scheduler = scoring_profile(minor)
    return LeastAllocated(scheduler) if minor <= 21 else Fit(scheduler)


def cores(cpu: int, memory: int) -> dict[str, str]:
    return {"cpu": str(cpu), "memory": str(memory)}


# (name, pod containers, node (cpu cores, memory), bound pods (node index, requests), expected scores)
LEAST: list[tuple[str, list[dict[str, str]], list[tuple[int, int]], list[tuple[int, dict[str, str]]], list[int]]] = [
    # TestLeastAllocatedScoringStrategy
    ("nothing scheduled, nothing requested", [], [(4000, 10000), (4000, 10000)], [], [100, 100]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        [cores(1000, 2000), cores(2000, 3000)],
        [(4000, 10000), (6000, 10000)],
        [],
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        [],
        [(4000, 10000)] * 2,
        [(0, {}), (0, {}), (1, {}), (1, {})],
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        [],
        [(10000, 20000)] * 2,
        [(0, cores(3000, 0)), (0, cores(3000, 0)), (1, cores(3000, 0)), (1, cores(3000, 5000))],
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        [cores(1000, 2000), cores(2000, 3000)],
        [(10000, 20000)] * 2,
        [(0, cores(3000, 0)), (1, cores(3000, 5000))],
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        [cores(1000, 2000), cores(2000, 3000)],
        [(10000, 20000), (10000, 50000)],
        [(0, cores(3000, 0)), (1, cores(3000, 5000))],
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        [cores(3000, 0)],
        [(4000, 10000)] * 2,
        [(0, cores(3000, 0)), (1, cores(3000, 5000))],
        [50, 25],
    ),
]


@pytest.mark.parametrize("minor", [20, 21, 22, 28, 36])
@pytest.mark.parametrize(("name", "containers", "sizes", "bound", "expected"), LEAST, ids=[c[0] for c in LEAST])
def test_least_allocated_score(
    name: str,
    containers: list[dict[str, str]],
    sizes: list[tuple[int, int]],
    bound: list[tuple[int, dict[str, str]]],
    expected: list[int],
    minor: int,
) -> None:
    nodes = [node(f"node{i}", cpu=str(c), memory=str(m)) for i, (c, m) in enumerate(sizes)]
    existing = [pod(f"b{j}", containers=[container(r)] if r else [], on=f"node{i}") for j, (i, r) in enumerate(bound)]
    case = cluster(nodes, pod(containers=[container(r) for r in containers]), existing=existing, minor=minor)
    assert case.scores(least_allocated(minor)) == expected


@pytest.mark.parametrize(("minor", "expected"), [(20, [0, 0]), (21, [0, 0]), (22, [0, 0]), (36, [0, 0])])
def test_least_allocated_zero_node_resources(minor: int, expected: list[int]) -> None:
    # TestLeastAllocatedScoringStrategy "zero node resources, pods scheduled with resources"
    nodes = [node("node1", cpu="0", memory="0"), node("node2", cpu="0", memory="0")]
    existing = [pod("a", containers=[container(cores(3000, 0))], on="node1")]
    existing.append(pod("b", containers=[container(cores(3000, 5000))], on="node2"))
    case = cluster(nodes, pod(containers=[]), existing=existing, minor=minor)
    assert case.scores(least_allocated(minor)) == expected


CPU_ONLY = [res(1000, 0), res(2000, 0)]
CPU_AND_MEMORY = [res(1000, 2000), res(2000, 3000)]

# (name, pod containers, nodes (millicores, memory), bound pods (node index, containers), 1.20-1.21, 1.22 on)
BALANCED: list[
    tuple[
        str, list[dict[str, str]], list[tuple[int, int]], list[tuple[int, list[dict[str, str]]]], list[int], list[int]
    ]
] = [
    # TestNodeResourcesBalancedAllocation (1.20's numbers: 1 - |cpu - memory|; 1.22 on: 1 - |cpu - memory| / 2)
    (
        "nothing scheduled, resources requested, differently sized nodes",
        CPU_AND_MEMORY,
        [(4000, 10000), (6000, 10000)],
        [],
        [75, 100],
        [87, 100],
    ),
    (
        "resources requested, pods scheduled with resources",
        CPU_AND_MEMORY,
        [(10000, 20000), (10000, 20000)],
        [(0, CPU_ONLY), (1, CPU_AND_MEMORY)],
        [65, 90],
        [82, 95],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        CPU_AND_MEMORY,
        [(10000, 20000), (10000, 50000)],
        [(0, CPU_ONLY), (1, CPU_AND_MEMORY)],
        [65, 60],
        [82, 80],
    ),
    (
        "requested resources at node capacity",
        CPU_ONLY,
        [(6000, 10000), (6000, 10000)],
        [(0, CPU_ONLY), (1, CPU_AND_MEMORY)],
        [0, 0],
        [50, 75],
    ),
]


# 1.36 scores the improvement the pod brings to the node's balance; kube-scheduler's tables we read predate it
@pytest.mark.parametrize("minor", [20, 21, 22, 28, 33, 35])
@pytest.mark.parametrize(
    ("name", "containers", "sizes", "bound", "before", "after"), BALANCED, ids=[c[0] for c in BALANCED]
)
def test_balanced_allocation_score(
    name: str,
    containers: list[dict[str, str]],
    sizes: list[tuple[int, int]],
    bound: list[tuple[int, list[dict[str, str]]]],
    before: list[int],
    after: list[int],
    minor: int,
) -> None:
    nodes = [node(f"node{i}", cpu=f"{c}m", memory=str(m)) for i, (c, m) in enumerate(sizes)]
    existing = [pod(f"b{j}", containers=requests(*r), on=f"node{i}") for j, (i, r) in enumerate(bound)]
    case = cluster(nodes, pod(containers=requests(*containers)), existing=existing, minor=minor)
    assert case.scores(BalancedAllocation(scoring_profile(minor))) == (before if minor <= 21 else after)


@pytest.mark.parametrize(("minor", "expected"), [(28, [100, 100]), (32, [100, 100]), (33, [0, 0]), (35, [0, 0])])
def test_balanced_allocation_best_effort_pod(minor: int, expected: list[int]) -> None:
    # TestNodeResourcesBalancedAllocation "nothing scheduled, nothing requested, skip in PreScore" (1.33 on,
    # kubernetes#129138: a pod that requests neither cpu nor memory is not scored, here 0 everywhere); before, the
    # nodes' own (empty) balance: 100
    nodes = [node("node1", cpu="4000m", memory="10000"), node("node2", cpu="4000m", memory="10000")]
    case = cluster(nodes, pod(containers=[]), minor=minor)
    assert case.scores(BalancedAllocation(scoring_profile(minor))) == expected
