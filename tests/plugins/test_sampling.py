"""kube-scheduler's search on a large fleet (schedule_one.go findNodesThatPassFilters, numFeasibleNodesToFind,
nextStartNodeIndex; internal/cache node_tree.go): upstream's TestNumFeasibleNodesToFind and TestFairEvaluationForNodes
as tables, then whole runs through both engines. The real scheduler judges the same in tests/e2e/test_large_fleet.py."""

from __future__ import annotations

import random
from typing import Any

import pytest
from plugintables import node, pod

from gpushare.domain.kubescheduler import num_feasible_nodes_to_find
from gpushare.domain.minors import scoring_profile
from gpushare.kube.documents import Source
from gpushare.placement import Semantics, place
from gpushare.placement.inputs import build
from gpushare.placement.pluginsets import profile
from gpushare.placement.sampling import Sampler, search_order, zone_key

Obj = dict[str, Any]
ENGINES = pytest.mark.parametrize("engine", ["fast", "reference"])

# TestNumFeasibleNodesToFind: (percentageOfNodesToScore, nodes, nodes looked for)
FEASIBLE = [(0, 10, 10), (40, 10, 10), (0, 1000, 420), (40, 1000, 400), (0, 6000, 300), (40, 6000, 2400)]
FEASIBLE += [(0, 99, 99), (0, 100, 100), (0, 300, 144), (0, 2048, 696), (100, 300, 300), (1, 300, 100)]


@pytest.mark.parametrize(("percentage", "nodes", "wanted"), FEASIBLE)
def test_nodes_looked_for_as_upstream(percentage: int, nodes: int, wanted: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == wanted


def gpu_node(name: str, cpu: str = "8", **extra: Any) -> Obj:
    return node(name, gpus=2, per_gpu=16, cpu=cpu, **extra)


def gpu_pod(name: str, units: int = 2) -> Obj:
    return pod(name, containers=[{"image": "pause", "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}}}])


def semantics(minor: int = 28, percentage: int = 0) -> Semantics:
    scheduler = scoring_profile(minor)
    if percentage:
        scheduler = type(scheduler)(scheduler.minor, scheduler.api, scheduler.weights, percentage)
    return Semantics("upstream", gpu_memory_unit="GiB", scheduler=scheduler, scheduler_name="default-scheduler")


def sampler(nodes: list[Obj], minor: int = 28) -> tuple[Sampler, Any]:
    chosen = semantics(minor)
    inventory = build([_source(n) for n in nodes], [], [], chosen, None)
    return Sampler(inventory.nodes, chosen.scheduler), profile(chosen)


def _source(obj: Obj) -> Source:
    return Source(obj, "test")


def test_fair_evaluation_as_upstream() -> None:
    """TestFairEvaluationForNodes: 500 nodes that all fit; each cycle filters 230 (46%) and the next starts there."""
    nodes = [gpu_node(str(i)) for i in range(500)]
    search, plugins = sampler(nodes)
    (subject,) = build([], [], [_source(gpu_pod("p"))], semantics(), None).new
    assert search.wanted == 230
    for i in range(5):
        sample = search.filter(plugins, subject, None)
        assert sample.processed == 230 and not sample.complete
        assert search.start == (i + 1) * 230 % 500


def test_the_search_order_takes_zones_in_turn() -> None:
    """nodeTree.list(): one node of each zone in turn, zones in the order their first node came, a node's zone read
    from the beta label first, region and zone together."""
    zones = ["a", "b", "a", "a", "c", "b"]
    nodes = [gpu_node(f"n{i}", labels={"topology.kubernetes.io/zone": z}) for i, z in enumerate(zones)]
    inventory = build([_source(n) for n in nodes], [], [], semantics(), None)
    assert [n.name for n in search_order(inventory.nodes)] == ["n0", "n1", "n4", "n2", "n5", "n3"]
    beta = {"failure-domain.beta.kubernetes.io/zone": "x", "topology.kubernetes.io/zone": "y"}
    assert zone_key(beta) == ":\x00:x"
    assert zone_key({"topology.kubernetes.io/region": "r"}) == "r:\x00:"
    assert zone_key({}) == ""


def test_rejected_nodes_count_towards_where_the_next_search_starts() -> None:
    """120 nodes, 100 looked for: the first 10 are tainted (rejected, but filtered), so the first search goes through
    110 nodes and the one after the 100th fitting node is where the next begins."""
    tainted = [{"key": "k", "effect": "NoSchedule"}]
    nodes = [gpu_node(f"n{i:03d}", taints=tainted if i < 10 else ()) for i in range(120)]
    search, plugins = sampler(nodes)
    (subject,) = build([], [], [_source(gpu_pod("p"))], semantics(), None).new
    sample = search.filter(plugins, subject, None)
    assert (sample.processed, sample.feasible, len(sample.rejected), search.start) == (110, 100, 10, 110)
    sample = search.filter(plugins, subject, None)  # from n110: 10 fit, the 10 tainted, then 90 more fit
    assert (sample.processed, sample.feasible, search.start) == (110, 100, 100)


@ENGINES
def test_a_pod_lands_on_the_best_node_of_those_filtered(engine: str) -> None:
    """300 nodes; n150 has the most cpu (LeastAllocated prefers it). The first pod's search covers n000-n143 only,
    so it lands on a small node; the second's covers n144-n287 and takes n150. Both report how many nodes the real
    choice may come from (the parallel filters may finish in another order)."""
    nodes = [gpu_node(f"n{i:03d}", cpu="64" if i == 150 else "8") for i in range(300)]
    result = place(nodes, [gpu_pod("p0"), gpu_pod("p1")], semantics=semantics(), engine=engine)  # type: ignore[arg-type]
    first, second = result.placements
    assert first.node != "n150" and int(first.node[1:]) < 144
    assert second.node == "n150"
    assert first.tied_with > 1 and second.tied_with > 1
    whole = place(nodes, [gpu_pod("p0")], semantics=semantics(percentage=100), engine=engine)  # type: ignore[arg-type]
    assert [a.node for a in whole.placements] == ["n150"]


@ENGINES
def test_the_extender_sees_only_the_nodes_filtered(engine: str) -> None:
    """A 20 GiB pod passes kube-scheduler's filters on every node (32 GiB each), but only n290-n299 have a GPU that
    holds it. The first search ends at n143: the extender rejects all 144 it is given and the pod stays pending,
    its message counting those only; the next pod's search starts at n144 (pending again), the third's at n288 and
    reaches the big GPUs."""
    nodes = [gpu_node(f"n{i:03d}") for i in range(290)]
    nodes += [node(f"n{i:03d}", gpus=1, per_gpu=32) for i in range(290, 300)]
    pods = [gpu_pod(f"p{i}", 20) for i in range(3)]
    result = place(nodes, pods, semantics=semantics(), engine=engine)  # type: ignore[arg-type]
    assert [p.name for p in result.pending] == ["p0", "p1"]
    assert result.pending[0].message.startswith(
        "0/300 nodes are available: 144 Insufficient GPU Memory in one device. preemption: 0/300 nodes are available: "
        "144 No preemption victims found for incoming pod, 156 Preemption is not helpful for scheduling."
    )
    assert result.pending[0].unfiltered == 156
    assert [(a.name, a.node) for a in result.placements] == [("p2", "n290")]


def test_before_1_28_an_unfiltered_node_is_worth_preempting_on() -> None:
    """1.24: a node the search never reached has no status, which preemption reads as one worth trying."""
    nodes = [gpu_node(f"n{i:03d}") for i in range(290)]
    nodes += [node(f"n{i:03d}", gpus=1, per_gpu=32) for i in range(290, 300)]
    result = place(nodes, [gpu_pod("p0", 20)], semantics=semantics(24))
    (pending,) = result.pending
    assert pending.message.endswith(
        "preemption: 0/300 nodes are available: 300 No preemption victims found for incoming pod."
    )


def test_from_1_33_a_pod_the_extender_refused_on_a_cut_search_is_retried_after_a_bind() -> None:
    """1.33 on: the extender's refusal requeues the pod on any event, and a bind is one; its retry searches from
    where the last search ended. p0 (n000-n143) and p1 (n144-n287) are refused, `small` binds (its search from
    n288 ends at n131); retried in turn, p0 searches n132-n275 (refused again), p1 from n276 reaches the big GPUs;
    p1's bind retries p0 once more, from n120: refused."""
    nodes = [gpu_node(f"n{i:03d}") for i in range(290)]
    nodes += [node(f"n{i:03d}", gpus=1, per_gpu=32) for i in range(290, 300)]
    pods = [gpu_pod("p0", 20), gpu_pod("p1", 20), gpu_pod("small")]
    older = place(nodes, pods, semantics=semantics(32))
    assert [p.name for p in older.pending] == ["p0", "p1"]
    newer = place(nodes, pods, semantics=semantics(33))
    assert [p.name for p in newer.pending] == ["p0"]
    assert [a.name for a in newer.placements] == ["small", "p1"]


@ENGINES
def test_a_replayed_pod_moves_the_start_as_its_real_cycle_did(engine: str) -> None:
    """--node-order fixes where p0 went; its real search still ended at n143, so p1's starts at n144."""
    nodes = [gpu_node(f"n{i:03d}", cpu="64" if i == 150 else "8") for i in range(300)]
    order = {"default/p0": "n007"}
    result = place(nodes, [gpu_pod("p0"), gpu_pod("p1")], semantics=semantics(), engine=engine, node_order=order)  # type: ignore[arg-type]
    assert [(a.name, a.node) for a in result.placements] == [("p0", "n007"), ("p1", "n150")]


def test_fewer_than_100_nodes_are_all_filtered() -> None:
    nodes = [gpu_node(f"n{i:02d}", cpu="64" if i == 98 else "8") for i in range(99)]
    result = place(nodes, [gpu_pod("p0")], semantics=semantics())
    assert [(a.node, a.tied_with) for a in result.placements] == [("n98", 1)]


@pytest.mark.parametrize("seed", range(6))
def test_both_engines_search_alike(seed: int) -> None:
    """Random fleets of 100-260 nodes (some without GPUs, some tainted, in zones) and pods of random sizes, some
    pinned by --node-order: the fast engine's shortcut (a class too small for the search to stop early) and the
    reference's plain search agree pod for pod, ties and messages included."""
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(100, 260)):
        gpus = rng.choice([0, 1, 2, 4])
        extra: dict[str, Any] = {"labels": {"topology.kubernetes.io/zone": f"z{rng.randint(0, 2)}"}}
        if rng.random() < 0.1:
            extra["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        nodes.append(
            node(f"n{i:03d}", gpus=gpus, per_gpu=rng.choice([8, 16]), cpu=rng.choice(["4", "8", "32"]), **extra)
        )
    pods = [gpu_pod(f"p{k}", rng.choice([1, 2, 6, 12, 20])) for k in range(rng.randint(20, 60))]
    order = {f"default/p{k}": f"n{rng.randint(0, 99):03d}" for k in range(0, len(pods), 7)}
    chosen = semantics(rng.choice([20, 28, 33, 36]))
    results = [
        place(nodes, pods, semantics=chosen, engine=engine, node_order=order)  # type: ignore[arg-type]
        for engine in ("fast", "reference")
    ]
    fast, reference = results
    assert fast.placements == reference.placements
    assert fast.pending == reference.pending


@pytest.mark.parametrize("seed", range(6))
def test_the_indexed_search_follows_the_node_by_node_search(seed: int) -> None:
    """The fast engine's search over arrays (`searchindex`) against the reference's node-by-node search, on what
    the score index groups nodes by: Deployments spreading their replicas (hostname and zone counts), soft taints,
    preferred node affinity, images held, cpu filling nodes up, zones in turn; every pod's node, the set its choice
    is drawn from (`tiedWith`) and every pending message alike."""
    rng = random.Random(1000 + seed)
    nodes = []
    for i in range(rng.randint(110, 240)):
        extra: dict[str, Any] = {
            "labels": {"topology.kubernetes.io/zone": f"z{rng.randint(0, 3)}", "pool": rng.choice("ab")},
            "cpu": rng.choice(["4", "8", "16"]),
        }
        if rng.random() < 0.15:
            extra["taints"] = [{"key": "soft", "effect": "PreferNoSchedule"}]
        if rng.random() < 0.2:
            extra["images"] = [(["example.com/model:v1"], 900 * 1024 * 1024)]
        nodes.append(node(f"n{i:03d}", gpus=rng.choice([1, 2, 4]), per_gpu=rng.choice([8, 16]), **extra))
    workloads: list[Obj] = []
    for k in range(rng.randint(4, 9)):
        spec: Obj = {
            "containers": [
                {
                    "name": "c",
                    "image": rng.choice(["example.com/model:v1", "pause"]),
                    "resources": {
                        "requests": {"cpu": rng.choice(["500m", "1", "2"])},
                        "limits": {"aliyun.com/gpu-mem": str(rng.choice([1, 2, 4, 6, 12]))},
                    },
                }
            ]
        }
        if rng.random() < 0.4:
            term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
            spec["affinity"] = {
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": term}]}
            }
        labels = {"app": f"app{k}"}
        workloads.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"app{k}", "namespace": "default"},
                "spec": {
                    "replicas": rng.randint(20, 260),
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": spec},
                },
            }
        )
    chosen = semantics(rng.choice([20, 24, 28, 33, 36]))
    fast, reference = (
        place(nodes, workloads, semantics=chosen, engine=engine)  # type: ignore[arg-type]
        for engine in ("fast", "reference")
    )
    assert fast.placements == reference.placements
    assert fast.pending == reference.pending
    assert any(a.tied_with > 1 for a in fast.placements)


@pytest.mark.parametrize("minor", [24, 28, 34, 36])
def test_a_cut_search_leaves_a_pod_pending_alike_in_both_engines(minor: int) -> None:
    """Fleets that fill up and fragment: nodes tainted, cordoned, short of cpu, short of GPU memory at node level or
    on every single device. Pods left pending by a cut search carry the same message (filters and preemption's part,
    which counts the unresolvable statuses per minor) from the search over arrays as from the node-by-node search."""
    rng = random.Random(2000 + minor)
    nodes = []
    devices = 0
    for i in range(rng.randint(200, 260)):
        extra: dict[str, Any] = {"cpu": rng.choice(["1", "8", "8", "8"]), "unschedulable": rng.random() < 0.05}
        if rng.random() < 0.1:
            extra["taints"] = [{"key": "hard", "effect": "NoSchedule"}]
        gpus = rng.choice([0, 2, 2, 4])
        devices += gpus
        nodes.append(node(f"n{i:03d}", gpus=gpus, per_gpu=rng.choice([8, 8, 8, 3]), **extra))
    pods = []
    # about one 5 GiB pod per device fragments the fleet: most nodes then have GPU memory left, on no one device
    for k in range(devices + rng.randint(40, 80)):
        made = gpu_pod(f"p{k}", 5 if k < devices * 0.9 else rng.choice([2, 4, 6]))
        made["spec"]["containers"][0]["resources"]["requests"] = {"cpu": rng.choice(["100m", "250m", "2"])}
        pods.append(made)
    fast, reference = (
        place(nodes, pods, semantics=semantics(minor), engine=engine)  # type: ignore[arg-type]
        for engine in ("fast", "reference")
    )
    assert fast.placements == reference.placements
    assert fast.pending == reference.pending
    assert any(p.unfiltered for p in fast.pending)


def test_explain_lists_the_nodes_filtered_alike_in_both_engines() -> None:
    """--explain on a cut search: the 144 nodes filtered, in the fleet's order, the same from both engines."""
    nodes = [gpu_node(f"n{i:03d}") for i in range(290)]
    nodes += [node(f"n{i:03d}", gpus=1, per_gpu=32) for i in range(290, 300)]
    fast, reference = (
        place(nodes, [gpu_pod("p0", 20)], semantics=semantics(), engine=engine, explain=True)  # type: ignore[arg-type]
        for engine in ("fast", "reference")
    )
    assert fast.pending == reference.pending
    (pending,) = fast.pending
    assert [name for name, _ in pending.by_node] == [f"n{i:03d}" for i in range(144)]


@pytest.mark.parametrize(("minor", "lands"), [(24, "small"), (28, "n150")])
def test_1_22_to_1_24_start_over_after_trying_a_nominated_node(minor: int, lands: str) -> None:
    """300 one-GPU nodes, each GPU held by a low-priority pod; n150 has the most cpu. `warm` (no GPU) moves the
    start to 144; `high` preempts and is nominated; its next cycle tries that node first, which in 1.22-1.24 sets
    the start back to 0 (a search over one node, modulo one). `probe` then searches n000-n143 (a small node) on
    1.24, and n144-n287 (n150) on 1.28."""
    nodes = [node(f"n{i:03d}", gpus=1, per_gpu=16, cpu="64" if i == 150 else "8") for i in range(300)]
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in (("low", 10), ("high", 1000))
    ]
    running = []
    for i in range(300):
        held = gpu_pod(f"r{i}", 16)
        held["spec"] |= {"nodeName": f"n{i:03d}", "priorityClassName": "low"}
        held["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "16"}
        held["status"] = {"phase": "Running"}
        running.append(held)
    high = gpu_pod("high", 16)
    high["spec"]["priorityClassName"] = "high"
    pods = [pod("warm"), high, pod("probe")]
    result = place(nodes, pods, existing=[*classes, *running], semantics=semantics(minor))
    placed = {a.name: a.node for a in result.placements}
    assert "high" in placed and len(result.preempted) == 1
    assert (placed["probe"] == "n150") == (lands == "n150")
