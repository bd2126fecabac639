"""Node-pool sizing from `gpushare capacity --pool` proven on the real kube-scheduler + the stand-in extender: the
pending pods are created and seen unschedulable, then the pool's nodes join as the answer says (named and labelled
as the replay named them). With one node fewer the pods the replay left pending stay so; with the answer's last
node every pod binds (kube-scheduler retries them as nodes join). Each pod asks more than half of one of the pool's
GPUs, so how many a node holds is a fact of memory, not of which tied node the scheduler picks."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from differential import Scenario
from kube import gpu_node
from test_capacity_real import replica
from test_defrag_real import bound_to
from test_differential import create, delete, outcome, scheduler  # noqa: F401  (the fixture, by its name)

from gpushare.domain.minors import scoring_profile
from gpushare.kube.documents import Source, from_objects
from gpushare.placement import Semantics
from gpushare.planner.pools import Fleet, copies, read_pool, size, size_mix, size_pool

pytestmark = pytest.mark.e2e


def add_node(core: Any, node: dict[str, Any]) -> None:
    """A node joining as a node pool adds it: created, its status reported, and ready (the API server's admission
    taints a new node not-ready; with no node controller here, the taint is lifted as the controller would)."""
    core.create_node({k: v for k, v in node.items() if k != "status"} | {"spec": {}})
    core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
    core.patch_node(node["metadata"]["name"], {"spec": {"taints": None}})


@pytest.mark.parametrize("seed", range(3))
def test_the_pool_nodes_the_answer_names_bind_every_pod(cluster: Any, scheduler: Any, seed: int) -> None:  # noqa: F811
    core, apps, log, standin = scheduler
    rng = random.Random(seed)
    case = Scenario(seed=seed)
    small, status = gpu_node(f"z{seed}-small", 1, 8)
    case.nodes.append({**small, "spec": {}, **status})
    pool_node, pool_status = gpu_node(f"z{seed}-pool", 2, 24)
    pool = read_pool(Source({**pool_node, **pool_status}, "pool.yaml"))
    pending = [replica(f"big{i}", rng.randint(13, 20)) for i in range(rng.randint(3, 6))]
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    fleet = Fleet(from_objects(case.nodes, "nodes"), [], from_objects(pending, "pods"), semantics)
    answer = size_pool(fleet, pool)
    assert answer.nodes == (len(pending) + 1) // 2 and not answer.unservable and not answer.result.pending
    assert answer.one_fewer is not None
    left = {p.key for p in answer.one_fewer.pending}
    assert len(left) == len(pending) - 2 * (answer.nodes - 1)
    made = [{**c.obj, "spec": {}, **pool_status} for c in copies(pool, answer.nodes)]
    create(core, apps, case, standin, log)
    try:
        for pod in pending:  # no node takes them yet
            core.create_namespaced_pod("default", pod)
            assert outcome(core, pod["metadata"]["name"], log) is None
        for node in made[:-1]:  # one node fewer than the answer: the pods the replay left pending stay so
            add_node(core, node)
            case.nodes.append(node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(unbound(core, pending)) > len(left):
            time.sleep(0.2)
        time.sleep(3)  # any other pod would have bound by now (the queue's backoff is at most 10 s)
        assert len(unbound(core, pending)) == len(left), (seed, unbound(core, pending), left)
        add_node(core, made[-1])  # the answer's last node: every pod binds
        case.nodes.append(made[-1])
        for pod in pending:
            assert bound_to(core, pod["metadata"]["name"]) is not None, (seed, pod["metadata"]["name"])
    finally:
        case.pods = pending
        delete(core, apps, case)


def unbound(core: Any, pods: list[dict[str, Any]]) -> list[str]:
    names = [p["metadata"]["name"] for p in pods]
    return [n for n in names if not core.read_namespaced_pod(n, "default").spec.node_name]


@pytest.mark.parametrize("seed", range(2))
def test_the_mix_of_pools_the_answer_names_binds_every_pod(cluster: Any, scheduler: Any, seed: int) -> None:  # noqa: F811
    """Two pools: big pods only a 48 GiB GPU holds (one a GPU), small pods that select the small pool (one a
    24 GiB GPU): the mix adds exactly one node a pod, and once its nodes join every pod binds."""
    core, apps, log, standin = scheduler
    rng = random.Random(seed)
    case = Scenario(seed=seed)
    full, status = gpu_node(f"x{seed}-full", 1, 8)
    case.nodes.append({**full, "spec": {}, **status})
    small_node, small_status = gpu_node(f"x{seed}-small", 1, 24, {"pool": "small"})
    small_node["metadata"]["annotations"] = {"gpushare.io/pool-cost": "1"}
    large_node, large_status = gpu_node(f"x{seed}-large", 1, 48)
    large_node["metadata"]["annotations"] = {"gpushare.io/pool-cost": "3"}
    pools = [
        read_pool(Source({**n, **st}, "pool.yaml"))
        for n, st in ((small_node, small_status), (large_node, large_status))
    ]
    bigs = [replica(f"huge{i}", rng.randint(30, 40)) for i in range(rng.randint(1, 2))]
    smalls = [replica(f"small{i}", rng.randint(13, 20)) for i in range(rng.randint(1, 3))]
    for pod in smalls:
        pod["spec"]["nodeSelector"] = {"pool": "small"}
    pending = bigs + smalls
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    fleet = Fleet(from_objects(case.nodes, "nodes"), [], from_objects(pending, "pods"), semantics)
    mix = size_mix(fleet, pools, size(fleet, pools))
    assert mix is not None and dict(mix.counts) == {pools[0].name: len(smalls), pools[1].name: len(bigs)}
    assert not mix.result.pending and all(result.pending for _, result in mix.one_fewer)
    made = [
        {**c.obj, "spec": {}, **st}
        for p, st in zip(pools, (small_status, large_status), strict=True)
        for c in copies(p, dict(mix.counts)[p.name])
    ]
    create(core, apps, case, standin, log)
    try:
        for pod in pending:
            core.create_namespaced_pod("default", pod)
            assert outcome(core, pod["metadata"]["name"], log) is None
        for node in made:
            add_node(core, node)
            case.nodes.append(node)
        for pod in pending:
            assert bound_to(core, pod["metadata"]["name"]) is not None, (seed, pod["metadata"]["name"])
    finally:
        case.pods = pending
        delete(core, apps, case)


def test_a_tainted_pool_serves_the_pods_that_tolerate_it(cluster: Any, scheduler: Any) -> None:  # noqa: F811
    """GPU pools are usually tainted: the pool's nodes join with their taint, the pods that tolerate it bind there
    as the answer says (one node fewer leaves the pods it names pending), the pod that does not stays pending and
    is named unservable."""
    core, apps, log, standin = scheduler
    case = Scenario(seed=50)
    taint = {"key": "gpushare.io/pool", "value": "l4", "effect": "NoSchedule"}
    pool_node, pool_status = gpu_node("t-pool", 2, 24)
    pool = read_pool(Source({**pool_node, "spec": {"taints": [taint]}, **pool_status}, "pool.yaml"))
    tolerate = {"key": "gpushare.io/pool", "operator": "Equal", "value": "l4", "effect": "NoSchedule"}
    pending = [replica(f"tol{i}", 16) for i in range(3)]
    for pod in pending:
        pod["spec"]["tolerations"] = [tolerate]
    pending.append(replica("intolerant", 16))
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    fleet = Fleet([], [], from_objects(pending, "pods"), semantics)
    answer = size_pool(fleet, pool)
    assert answer.nodes == 2 and [p.name for p in answer.unservable] == ["intolerant"]
    assert answer.one_fewer is not None
    left = {p.name for p in answer.one_fewer.pending} - {"intolerant"}
    made = [{**c.obj, **pool_status} for c in copies(pool, answer.nodes)]
    create(core, apps, case, standin, log)
    try:
        for pod in pending:
            core.create_namespaced_pod("default", pod)
            assert outcome(core, pod["metadata"]["name"], log) is None
        for node in made[:-1]:
            add_tainted_node(core, node)
            case.nodes.append(node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(unbound(core, pending)) > len(left) + 1:
            time.sleep(0.2)
        time.sleep(3)
        # which tolerating pod stays pending is the queue's timing (each node event retries them all): how many is not
        still = unbound(core, pending)
        assert len(still) == len(left) + 1 and "intolerant" in still, (still, left)
        add_tainted_node(core, made[-1])
        case.nodes.append(made[-1])
        for pod in pending[:-1]:
            assert bound_to(core, pod["metadata"]["name"]) is not None, pod["metadata"]["name"]
        time.sleep(3)
        assert unbound(core, pending) == ["intolerant"]
    finally:
        case.pods = pending
        delete(core, apps, case)


def add_tainted_node(core: Any, node: dict[str, Any]) -> None:
    """`add_node`, the node keeping its own taints (admission's not-ready taint replaced by them)."""
    core.create_node({k: v for k, v in node.items() if k != "status"})
    core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
    core.patch_node(node["metadata"]["name"], {"spec": {"taints": node["spec"]["taints"]}})
