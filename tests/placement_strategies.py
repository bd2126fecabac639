"""Hypothesis strategies for random fleets and workloads as plain Kubernetes objects."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

MODES = ["share", "cgpu", "core_mem", "default", None]


@st.composite
def node(draw: st.DrawFn, i: int) -> dict[str, Any]:
    gpus = draw(st.integers(0, 4))
    per_gpu = draw(st.sampled_from([4, 8, 15, 16]))
    mode = draw(st.sampled_from(MODES))
    labels: dict[str, str] = {"pool": draw(st.sampled_from(["a", "b"]))}
    if mode:
        labels["ack.node.gpu.schedule"] = mode
    if draw(st.booleans()):
        labels["ack.node.gpu.placement"] = draw(st.sampled_from(["binpack", "spread"]))
    capacity: dict[str, Any] = {
        "cpu": draw(st.sampled_from(["4", "8", "16"])),
        "memory": "64Gi",
        "pods": draw(st.sampled_from([3, 10, 110])),
    }
    if draw(st.integers(0, 4)) == 0:
        capacity["example.com/fpga"] = draw(st.integers(0, 2))
    if gpus:
        capacity["aliyun.com/gpu-mem"] = gpus * per_gpu
        capacity["aliyun.com/gpu-count"] = gpus
        if mode == "core_mem":
            capacity["aliyun.com/gpu-core.percentage"] = 100 * gpus
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 9)) == 0:
        spec["unschedulable"] = True
    if draw(st.integers(0, 5)) == 0:
        spec["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:02d}", "labels": labels},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


@st.composite
def pod_template(draw: st.DrawFn) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    gpu_mem = draw(st.integers(0, 20))
    if gpu_mem:
        limits["aliyun.com/gpu-mem"] = gpu_mem
    labels: dict[str, str] = {}
    if gpu_mem and draw(st.integers(0, 4)) == 0:
        labels["aliyun.com/gpu-count"] = str(draw(st.sampled_from([1, 2, 3])))
    elif gpu_mem and draw(st.integers(0, 3)) == 0:
        limits["aliyun.com/gpu-core.percentage"] = draw(st.sampled_from([5, 10, 25, 50, 100, 7]))
    requests = {"cpu": draw(st.sampled_from(["100m", "1", "3"])), "memory": "1Gi"}
    if draw(st.integers(0, 5)) == 0:
        limits["example.com/fpga"] = 1
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits, "requests": requests}}]}
    if draw(st.integers(0, 4)) == 0:  # counted at node level when larger than the containers
        init = {"cpu": draw(st.sampled_from(["100m", "5"])), "aliyun.com/gpu-mem": draw(st.integers(0, 30))}
        spec["initContainers"] = [{"name": "init", "resources": {"limits": init, "requests": {"cpu": init["cpu"]}}}]
    if draw(st.integers(0, 4)) == 0:
        spec["nodeSelector"] = {"pool": draw(st.sampled_from(["a", "b"]))}
    if draw(st.integers(0, 4)) == 0:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if draw(st.integers(0, 9)) == 0:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "ack.node.gpu.schedule", "operator": "NotIn", "values": ["cgpu"]}
                            ]
                        }
                    ]
                }
            }
        }
    return {"metadata": {"labels": labels}, "spec": spec}


@st.composite
def workload(draw: st.DrawFn, i: int) -> dict[str, Any]:
    template = draw(pod_template())
    kind = draw(st.sampled_from(["Pod", "Pod", "Deployment", "StatefulSet", "Job", "DaemonSet"]))
    meta = {"name": f"w{i}", "namespace": "default"}
    if kind == "Pod":
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**meta, **template["metadata"]},
            "spec": template["spec"],
        }
    spec: dict[str, Any] = {"template": template}
    if kind != "DaemonSet":
        spec["parallelism" if kind == "Job" else "replicas"] = draw(st.integers(1, 6))
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


@st.composite
def running_pod(draw: st.DrawFn, i: int, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod already bound: with the extender's annotation (a GPU index, maybe a wrong one) or without, maybe done."""
    template = draw(pod_template())
    node = draw(st.sampled_from(nodes))
    annotations: dict[str, str] = {}
    gpus = node["status"]["capacity"].get("aliyun.com/gpu-count", 0)
    if gpus and draw(st.booleans()):
        annotations["ALIYUN_COM_GPU_MEM_IDX"] = str(draw(st.integers(0, gpus)))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"run{i}", "namespace": "prod", "annotations": annotations, **template["metadata"]},
        "spec": {**template["spec"], "nodeName": node["metadata"]["name"]},
        "status": {"phase": draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded", "Failed"]))},
    }


@st.composite
def scenario(draw: st.DrawFn) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 8))
    nodes = [draw(node(i)) for i in range(n_nodes)]
    workloads = [draw(workload(i)) for i in range(draw(st.integers(1, 12)))]
    unhealthy = []
    for n in nodes:
        count = n["status"]["capacity"].get("aliyun.com/gpu-count", 0)
        if count and draw(st.integers(0, 5)) == 0:
            unhealthy.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"unhealthy-gpu-{n['metadata']['name']}", "namespace": "kube-system"},
                    "data": {"gpus": str(draw(st.integers(0, count - 1)))},
                }
            )
    existing = [draw(running_pod(i, nodes)) for i in range(draw(st.integers(0, 6)))]
    names = [n["metadata"]["name"] for n in nodes] + ["node-missing"]
    order = {
        f"default/{w['metadata']['name']}" + ("" if w["kind"] == "Pod" else "-0"): draw(st.sampled_from(names))
        for w in workloads
        if w["kind"] != "DaemonSet" and draw(st.integers(0, 5)) == 0
    }
    # the inventory's unit, and the unit simulated: equal, or 1 GiB numbers simulated in 128 MiB units
    unit, input_unit = draw(st.sampled_from([("1GiB", "1GiB"), ("128MiB", "1GiB"), ("128MiB", "128MiB")]))
    return {
        "nodes": nodes + unhealthy,
        "pods": workloads,
        "existing": existing,
        "node_order": order,
        "semantics": draw(st.sampled_from(["ack", "upstream"])),
        "placement": draw(st.sampled_from(["binpack", "spread"])),
        "unit": unit,
        "input_unit": input_unit,
        "cgpu_cap": draw(st.sampled_from([1, 2, 16])),
    }
