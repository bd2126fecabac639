"""What kube-scheduler 1.29-1.36 changed in how it places pods, each against the minor before the change (read
from each release's pkg/scheduler; the differential e2e test checks them on the real schedulers)."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics, place


def upstream(minor: int) -> Semantics:
    return Semantics("upstream", scheduler=scoring_profile(minor), scheduler_name="default-scheduler")


def node(name: str, cpu: str = "8", memory: str = "32Gi", zone: str = "a") -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "2"}
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, labels: dict[str, str] | None = None, requests: dict[str, str] | None = None, **spec: Any) -> Any:
    limits = {"aliyun.com/gpu-mem": "2"}
    resources = {"limits": limits, "requests": {**limits, **(requests or {})}}
    body = {"containers": [{"name": "c", "image": "example.com/app:v1", "resources": resources}], **spec}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": labels or {}}, "spec": body}


def affinity_to(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize(("minor", "retried"), [(32, False), (33, True), (36, True)])
def test_a_pending_pod_a_bind_frees_is_retried_from_1_33(minor: int, retried: bool, engine: str) -> None:
    """SchedulerPopFromBackoffQ: the waiting pod's affinity is met by the next pod's bind, and it is retried before
    the pod after that; before 1.33 it waits out a backoff the dry run does not model, and stays pending."""
    follower = pod("follower", affinity=affinity_to("leader"))
    leader = pod("leader", {"app": "leader"})
    result = place([node("n0"), node("n1")], [follower, leader], semantics=upstream(minor), engine=engine)
    placed = [a.name for a in result.placements]
    if retried:
        assert placed == ["leader", "follower"] and not result.pending
        assert {a.node for a in result.placements} == {result.placements[0].node}  # beside its leader
    else:
        assert placed == ["leader"] and [p.name for p in result.pending] == ["follower"]


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_pods_a_bind_cannot_help_are_not_retried(engine: str) -> None:
    too_big = pod("too-big", requests={"cpu": "100"})
    result = place([node("n0")], [too_big, pod("small")], semantics=upstream(36), engine=engine)
    assert [p.name for p in result.pending] == ["too-big"] and [a.name for a in result.placements] == ["small"]


def test_balanced_allocation_skips_pods_without_cpu_or_memory_from_1_33() -> None:
    """A GPU-only pod between a node half full of cpu and one a quarter full of both: LeastAllocated scores them
    alike, BalancedAllocation prefers the balanced one on 1.32 and scores both 0 on 1.33 (a tie)."""
    cpu_only, both = (
        pod("cpu-only", requests={"cpu": "4", "memory": "0"}),
        pod("both", requests={"cpu": "2", "memory": "8Gi"}),
    )
    cpu_only["spec"]["nodeName"], both["spec"]["nodeName"] = "n0", "n1"
    chosen = {
        minor: place(
            [node("n0"), node("n1")], [pod("gpu-only")], existing=[cpu_only, both], semantics=upstream(minor)
        ).placements[0]
        for minor in (32, 33)
    }
    assert (chosen[32].node, chosen[32].tied_with) == ("n1", 1)
    assert chosen[33].tied_with == 2


def test_balanced_allocation_scores_the_improvement_from_1_36() -> None:
    """1.36 scores 50 + (50 + with - without) / 2; earlier minors the balance with the pod alone. The pod balances
    the cpu-loaded node (78 on 1.36) and unbalances the balanced one (71): 1.35 (84 against 93) chose the other."""
    cpu_loaded, balanced = (
        pod("a", requests={"cpu": "4", "memory": "2Gi"}),
        pod("b", requests={"cpu": "2", "memory": "8Gi"}),
    )
    cpu_loaded["spec"]["nodeName"], balanced["spec"]["nodeName"] = "n0", "n1"
    incoming = pod("p", requests={"cpu": "1", "memory": "8Gi"})
    chosen = {
        minor: place(
            [node("n0"), node("n1")], [incoming], existing=[cpu_loaded, balanced], semantics=upstream(minor)
        ).placements[0]
        for minor in (35, 36)
    }
    assert {m: (a.node, a.tied_with) for m, a in chosen.items()} == {35: ("n1", 1), 36: ("n0", 1)}


def test_taint_message_from_1_34() -> None:
    tainted = node("n0")
    tainted["spec"] = {"taints": [{"key": "gpu", "value": "busy", "effect": "NoSchedule"}]}
    messages = {m: place([tainted], [pod("p")], semantics=upstream(m)).pending[0].message for m in (33, 34)}
    assert "untolerated taint {gpu: busy}" in messages[33]
    assert messages[34] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/1 "
        "nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_image_locality_counts_init_containers_from_1_30() -> None:
    big = {"names": ["example.com/init:v1"], "sizeBytes": 900 * 1024 * 1024}
    nodes = [node("n0"), node("n1")]
    nodes[1]["status"]["images"] = [big]
    with_init = pod("p", initContainers=[{"name": "i", "image": "example.com/init:v1"}])
    chosen = {m: place(nodes, [with_init], semantics=upstream(m)).placements[0] for m in (29, 30)}
    assert chosen[29].tied_with == 2  # the init image does not count: both nodes alike
    assert (chosen[30].node, chosen[30].tied_with) == ("n1", 1)


def test_pods_each_unlike_the_others_place_as_the_reference_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct requests and images (as `kubectl get pods` lists them): the fast engine keeps a bounded number of
    views, drops the oldest, and still places every pod where the reference engine does."""
    from gpushare.placement.fast import scoreindex

    monkeypatch.setattr(scoreindex, "MAX_VIEWS", 3)
    nodes = [node(f"n{i}", cpu=str(8 + i), zone="ab"[i % 2]) for i in range(6)]
    nodes[2]["status"]["images"] = [{"names": ["example.com/held:v1"], "sizeBytes": 600 * 1024 * 1024}]
    pods = []
    for k in range(40):
        p = pod(f"p{k}", {"app": f"a{k % 5}"}, requests={"cpu": f"{100 + 37 * k}m", "memory": f"{1 + k % 7}Gi"})
        p["spec"]["containers"][0]["image"] = "example.com/held:v1" if k % 4 == 0 else f"example.com/own-{k}:v1"
        pods.append(p)
    results = {e: place(nodes, pods, semantics=upstream(28), engine=e) for e in ("fast", "reference")}
    fast, reference = results["fast"], results["reference"]
    assert [(a.name, a.node, a.gpus, a.tied_with) for a in fast.placements] == [
        (a.name, a.node, a.gpus, a.tied_with) for a in reference.placements
    ]
    assert [p.name for p in fast.pending] == [p.name for p in reference.pending]
