"""The planner on any pool and any pod: `gpushare capacity` over a matrix of pool shapes (plain, tainted, labelled for
a node selector, labelled for required node affinity, few pods per node, a taint no template tolerates) and of
templates (a GPU pod, a cpu-only pod as cluster-capacity answers it). In CI the command is the installed, compiled
build (a tainted pool once crashed it there: a compiled frozen dataclass cannot be deep-copied).

Each answer is held against placements made afresh: the template's `more` replicas all bind on the fleet and one
more does not; the pool's `nodes` added (named as the planner names them) bind every replica asked, and one fewer
leaves exactly the pods the answer names pending.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from helpers import run_gpushare

from gpushare.placement import Semantics, place

Obj = dict[str, Any]
WANTED = 30  # the template's spec.replicas: what the pool is sized for


def node(name: str, gpus: int = 1, pods: int = 110, labels: Obj | None = None, taints: list[Obj] | None = None) -> Obj:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": str(pods)}
    if gpus:
        capacity |= {"aliyun.com/gpu-mem": str(16 * gpus), "aliyun.com/gpu-count": str(gpus)}
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
    if taints:
        obj["spec"] = {"taints": taints}
    return obj


def template(gpu: bool, shape: str) -> Obj:
    resources: Obj = {"requests": {"cpu": "500m", "memory": "1Gi"}}
    if gpu:
        resources["limits"] = {"aliyun.com/gpu-mem": "4"}
    else:
        resources["requests"] = {"cpu": "1500m", "memory": "2Gi"}
    spec: Obj = {
        "schedulerName": "gpushare-scheduler",
        "containers": [{"name": "c", "image": "app:1", "resources": resources}],
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if shape == "selector":
        spec["nodeSelector"] = {"pool": "a"}
    if shape == "affinity":
        term = {"matchExpressions": [{"key": "accel", "operator": "In", "values": ["l4", "a10"]}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {
            "replicas": WANTED,
            "selector": {"matchLabels": {"app": "t"}},
            "template": {"metadata": {"labels": {"app": "t"}}, "spec": spec},
        },
    }


POOLS = {
    "plain": node("pool"),
    "tainted": node("pool", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    "selector": node("pool", labels={"pool": "a"}),
    "affinity": node("pool", labels={"accel": "l4"}),
    "max-pods": node("pool", pods=3),
    "refused": node("pool", taints=[{"key": "other", "value": "x", "effect": "NoSchedule"}]),
}
FLEET = [node("gpu-0"), node("cpu-0", gpus=0)]
RUNNING = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "busy",
        "namespace": "default",
        "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "12"},
    },
    "spec": {
        "nodeName": "gpu-0",
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"aliyun.com/gpu-mem": "12"}}}],
    },
    "status": {"phase": "Running"},
}


def pool_nodes(pool: Obj, count: int) -> list[Obj]:
    """The pool's nodes as the planner adds them (`<pool>-new-<i>`)."""
    made = []
    for i in range(count):
        obj = copy.deepcopy(pool)
        name = f"{pool['metadata']['name']}-new-{i}"
        obj["metadata"]["name"] = name
        obj["metadata"]["labels"]["kubernetes.io/hostname"] = name
        made.append(obj)
    return made


def with_replicas(obj: Obj, count: int) -> Obj:
    obj = copy.deepcopy(obj)
    obj["spec"]["replicas"] = count
    return obj


def placed(nodes: list[Obj], workload: Obj) -> tuple[int, list[str]]:
    result = place(nodes, [workload], existing=[RUNNING], semantics=Semantics("upstream", gpu_memory_unit="GiB"))
    assert not result.invalid
    return len(result.placements), sorted(p.key for p in result.pending)


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "cpu-only"])
@pytest.mark.parametrize("shape", sorted(POOLS))
def test_capacity_answers_hold_on_every_pool_shape(tmp_path: Any, shape: str, gpu: bool) -> None:
    pool, tmpl = POOLS[shape], template(gpu, shape)
    files = {"nodes": FLEET, "running": [RUNNING], "template": [tmpl], "pool": [pool]}
    for name, docs in files.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
    run = run_gpushare(
        "capacity", "--semantics", "upstream", "--gpu-memory-unit", "GiB", "--nodes", "nodes.yaml",
        "--existing", "running.yaml", "--template", "template.yaml", "--pool", "pool.yaml", "-o", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    (headroom,) = answer["templates"]
    more = headroom["more"]
    # the headroom: `more` replicas bind on the fleet as it is, one more does not
    assert placed(FLEET, with_replicas(tmpl, more)) == (more, [])
    bound, pending = placed(FLEET, with_replicas(tmpl, more + 1))
    assert bound == more and pending == [f"default/t-{more}"] if more else len(pending) == 1
    assert headroom["blocked_by"]["name"] == f"t-{more}"
    # the pool: its nodes bind every replica it can serve; one fewer leaves the pods the answer names pending
    (sizing,) = answer["add"]
    added = sizing["nodes"]
    unservable = sorted(f"{p['namespace']}/{p['name']}" for p in sizing["unservable"])
    bound, pending = placed(FLEET + pool_nodes(pool, added), tmpl)
    assert pending == unservable, (shape, added)
    if shape == "refused":  # a taint no template tolerates: the pool serves nothing, and says so
        assert added == 0 and len(unservable) == WANTED - more
        return
    assert bound == WANTED and added > 0, (shape, added)
    _, fewer = placed(FLEET + pool_nodes(pool, added - 1), tmpl)
    named = sorted(f"{p['namespace']}/{p['name']}" for p in sizing["one_fewer_leaves"])
    assert fewer == named and fewer, (shape, added)
