"""kube-scheduler's score plugins as the model computes them, on cases from kube-scheduler's own unit tests
(noderesources/balanced_allocation_test.go of 1.20 and of 1.24, where the formula changed) and on the arithmetic
that changed between minors. The end-to-end differential test compares whole runs with the real scheduler."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.domain import kubescheduler as ks
from gpushare.domain.minors import scoring_profile
from gpushare.kube.documents import Source
from gpushare.placement import Semantics
from gpushare.placement.inputs import build
from gpushare.placement.plugins import noderesources, podtopologyspread
from gpushare.placement.pluginsets import profile as profile_of
from gpushare.placement.simulation import charge_existing


def node(name: str, cpu_milli: int, memory: int, **labels: str) -> dict[str, Any]:
    capacity = {"cpu": f"{cpu_milli}m", "memory": str(memory), "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, *containers: tuple[str, str], on: str | None = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            for i, (cpu, memory) in enumerate(containers)
        ]
    }
    if on:
        spec["nodeName"] = on
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec}


CPU_ONLY = (("1000m", "0"), ("2000m", "0"))
CPU_AND_MEMORY = (("1000m", "2000"), ("2000m", "3000"))


def model(nodes: list[dict[str, Any]], running: list[dict[str, Any]], new: dict[str, Any], minor: int) -> Any:
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(minor))
    src = [Source(o, "test") for o in nodes], [Source(o, "test") for o in running], [Source(new, "test")]
    inventory = build(*src, semantics)
    charge_existing(inventory.nodes, inventory.existing, profile_of(semantics))
    return inventory.nodes, inventory.new[0], semantics.scheduler


@pytest.mark.parametrize(
    ("minor", "expected"),
    [(20, [75, 100]), (24, [87, 100])],  # 1.20: 1 - |cpu - memory|; 1.24: 1 - |cpu - memory| / 2
)
def test_balanced_nothing_scheduled_differently_sized_machines(minor: int, expected: list[int]) -> None:
    nodes, new, profile = model(
        [node("m1", 4000, 10000), node("m2", 6000, 10000)], [], pod("p", *CPU_AND_MEMORY), minor
    )
    assert [noderesources.balanced(n, new, profile) for n in nodes] == expected


@pytest.mark.parametrize(("minor", "expected"), [(20, [40, 65]), (24, [70, 82])])
def test_balanced_no_resources_requested_pods_scheduled_with_resources(minor: int, expected: list[int]) -> None:
    running = [
        pod("a", *CPU_ONLY, on="m1"),
        pod("b", *CPU_ONLY, on="m1"),
        pod("c", *CPU_ONLY, on="m2"),
        pod("d", *CPU_AND_MEMORY, on="m2"),
    ]
    nodes, new, profile = model([node("m1", 10000, 20000), node("m2", 10000, 20000)], running, pod("p"), minor)
    assert [noderesources.balanced(n, new, profile) for n in nodes] == expected


@pytest.mark.parametrize(
    ("memory", "minor", "expected"),
    [(20000, 20, [65, 90]), (20000, 24, [82, 95]), (50000, 20, [65, 60]), (50000, 24, [82, 80])],
)
def test_balanced_resources_requested_pods_scheduled(memory: int, minor: int, expected: list[int]) -> None:
    running = [pod("a", *CPU_ONLY, on="m1"), pod("b", *CPU_AND_MEMORY, on="m2")]
    nodes = [node("m1", 10000, 20000), node("m2", 10000, memory)]
    nodes_, new, profile = model(nodes, running, pod("p", *CPU_AND_MEMORY), minor)
    assert [noderesources.balanced(n, new, profile) for n in nodes_] == expected


@pytest.mark.parametrize(("minor", "expected"), [(20, 37), (21, 37), (22, 75), (28, 75)])
def test_least_allocated_counts_a_resource_the_node_has_none_of_only_before_1_22(minor: int, expected: int) -> None:
    # cpu: (4000 - 1000) * 100 / 4000 = 75; memory: the node has none. 1.20-1.21 score it 0 and average: 37.
    nodes, new, profile = model([node("m1", 4000, 0)], [], pod("p", ("1000m", "0")), minor)
    assert noderesources.least_allocated(nodes[0], new.nz_cpu, new.nz_memory, profile) == expected


def test_containers_without_requests_count_100m_and_200mib_when_scoring() -> None:
    _, new, _ = model([node("m1", 8000, 32 << 30)], [], pod("p", ("0", "1Gi")), 28)
    bare = {"kind": "Pod", "metadata": {"name": "q", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}
    _, empty, _ = model([node("m1", 8000, 32 << 30)], [], bare, 28)
    assert (new.nz_cpu, new.nz_memory) == (0, 1 << 30)  # an explicit 0 stays 0
    assert (empty.nz_cpu, empty.nz_memory) == (ks.DEFAULT_MILLI_CPU_REQUEST, ks.DEFAULT_MEMORY_REQUEST)
    assert (empty.cpu, empty.memory) == (0, 0)  # what the filters count


@pytest.mark.parametrize(("minor", "expected"), [(23, [66, 100, 100]), (24, [50, 100, 100])])
def test_spreading_truncates_before_1_24_and_rounds_from_it(minor: int, expected: list[int]) -> None:
    # 3 feasible hosts: weight log(3 + 2) = 1.609; the node with one matching pod scores 1 * 1.609 + (3 - 1) = 3.609:
    # 3 truncated (1.23), 4 rounded (1.24); the others 2. Normalised: 100 * (max + min - score) / max.
    labels = {"app": "web"}
    owned = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}]}
    running = [pod("a", ("100m", "1Gi"), on="m1", **labels)]
    new = pod("p", ("100m", "1Gi"), **labels)
    new["metadata"] |= owned
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
    }
    nodes = [node(f"m{i}", 8000, 32 << 30) for i in (1, 2, 3)]
    nodes_, new_model, profile = model(nodes, [*running, replica_set], new, minor)
    assert [c.topology_key for c in new_model.spread] == [key for key, _ in ks.SYSTEM_DEFAULT_SPREAD]
    spread = podtopologyspread.PodTopologySpread(profile).score(new_model, nodes_, nodes_)
    assert spread == expected


def test_default_spreading_reads_the_controller_from_1_22_and_every_matching_one_before() -> None:
    owners = podtopologyspread.Owners()
    for name, selector in (("web-a", {"app": "web", "hash": "a"}), ("web-any", {"app": "web"})):
        owners.add(
            Source(
                {
                    "kind": "ReplicaSet",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"selector": {"matchLabels": selector}},
                },
                "test",
            )
        )
    labels = {"app": "web", "hash": "a"}
    controller = ("apps/v1", "ReplicaSet", "web-a", "uid")
    by_owner = owners.default_selector("default", labels, controller, scoring_profile(22))
    by_labels = owners.default_selector("default", labels, controller, scoring_profile(21))
    other = {"app": "web", "hash": "b"}  # a pod of another ReplicaSet of the same app
    assert by_owner.matches(labels) and not by_owner.matches(other)
    assert by_labels.matches(labels) and not by_labels.matches(other)  # both selectors' requirements, ANDed
    # without an owner: only Services count, and none selects the pod
    assert owners.default_selector("default", labels, None, scoring_profile(22)).empty


@pytest.mark.parametrize("zoned", [False, True])
def test_ties_go_to_the_most_gpu_room_then_the_name(zoned: bool) -> None:
    """`zoned`: each node in its own zone and the pod spreading over zones, so the fast engine keeps the nodes in
    three groups and the tie is broken between groups rather than within one."""
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    small = dict(capacity) | {"aliyun.com/gpu-mem": "16"}
    nodes = [
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone} if zoned else {}},
            "status": {"capacity": cap, "allocatable": cap},
        }
        for name, cap, zone in (("a-small", small, "z3"), ("c-big", capacity, "z2"), ("b-big", capacity, "z1"))
    ]
    new = pod("p", ("1", "1Gi"), app="x")
    if zoned:
        new["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "x"}},
            }
        ]
    result = scoring_place(nodes, [new])
    (placed,) = result.placements
    assert (placed.node, placed.tied_with) == ("b-big", 3)  # all three score alike; b-big has 16 free, a-small 8


def scoring_place(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Any:
    from gpushare.placement import place

    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(28))
    fast, ref = (place(nodes, pods, semantics=semantics, engine=e) for e in ("fast", "reference"))
    assert fast.placements == ref.placements
    return fast
