"""Hypothesis strategies for random fleets and workloads as plain Kubernetes objects."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from gpushare.domain.versions import served_apis

MODES = ["share", "cgpu", "core_mem", "default", None]
IMAGES = ["example.com/a:1", "example.com/b"]
APPS = ["web", "train"]
#: A ReplicaSet of the running pods (given with them) and a Service: what kube-scheduler's default spreading reads.
REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web-1", "namespace": "default", "uid": "u-web-1"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u-web-1", "controller": True}
#: PriorityClasses the pods may name (given with the running pods): preemption, and one class that never preempts.
PRIORITY_CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    | ({"preemptionPolicy": "Never"} if name == "never" else {})
    for name, value in (("low", 10), ("high", 1000), ("never", 1000))
]
#: A budget over one app's pods, allowing one disruption.
BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 1},
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"selector": {"app": "train"}},
}


@st.composite
def node(draw: st.DrawFn, i: int) -> dict[str, Any]:
    gpus = draw(st.integers(0, 4))
    per_gpu = draw(st.sampled_from([4, 8, 15, 16]))
    mode = draw(st.sampled_from(MODES))
    labels: dict[str, str] = {"pool": draw(st.sampled_from(["a", "b"]))}
    if draw(st.integers(0, 5)):  # kubelets set it; a node without it is not spread over by host
        labels["kubernetes.io/hostname"] = f"node-{i:02d}"
    if draw(st.booleans()):
        labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(["z1", "z2"]))
    if mode:
        labels["ack.node.gpu.schedule"] = mode
    if draw(st.booleans()):
        labels["ack.node.gpu.placement"] = draw(st.sampled_from(["binpack", "spread"]))
    capacity: dict[str, Any] = {
        "cpu": draw(st.sampled_from(["8", "8", "16", "192"])),  # alike nodes often, so scores tie
        "memory": draw(st.sampled_from(["64Gi", "64Gi", "16Gi"])),
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
    if draw(st.integers(0, 3)) == 0:
        spec.setdefault("taints", []).append({"key": "spot", "value": "yes", "effect": "PreferNoSchedule"})
    images = [
        {"names": [image if ":" in image else f"{image}:latest"], "sizeBytes": draw(st.sampled_from([50, 900])) << 20}
        for image in IMAGES
        if draw(st.booleans())
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:02d}", "labels": labels},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity, "images": images},
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
    requests = {}
    cpu = draw(st.sampled_from(["100m", "1", "3", "0", None]))
    if cpu is not None:
        requests["cpu"] = cpu
    memory = draw(st.sampled_from(["1Gi", "6Gi", None]))
    if memory is not None:
        requests["memory"] = memory
    labels["app"] = draw(st.sampled_from(APPS))
    priority_class = draw(st.sampled_from(["low", "high", "never", None, None, None]))
    if draw(st.integers(0, 5)) == 0:
        limits["example.com/fpga"] = 1
    container = {
        "name": "c",
        "image": draw(st.sampled_from(IMAGES)),
        "resources": {"limits": limits, "requests": requests},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if draw(st.integers(0, 4)) == 0:  # counted at node level when larger than the containers
        init = {"cpu": draw(st.sampled_from(["100m", "5"])), "aliyun.com/gpu-mem": draw(st.integers(0, 30))}
        spec["initContainers"] = [{"name": "init", "resources": {"limits": init, "requests": {"cpu": init["cpu"]}}}]
    if draw(st.integers(0, 4)) == 0:
        spec["nodeSelector"] = {"pool": draw(st.sampled_from(["a", "b"]))}
    if draw(st.integers(0, 4)) == 0:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if draw(st.integers(0, 4)) == 0:
        spec.setdefault("tolerations", []).append({"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"})
    if draw(st.integers(0, 4)) == 0:
        term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": [draw(st.sampled_from(["a", "b"]))]}]}
        preferred = [{"weight": draw(st.sampled_from([1, 30, 100])), "preference": term}]
        spec.setdefault("affinity", {})["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
    if draw(st.integers(0, 5)) == 0:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": draw(st.sampled_from([1, 2])),
                "topologyKey": draw(st.sampled_from(["kubernetes.io/hostname", "topology.kubernetes.io/zone"])),
                "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
                "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
            }
        ]
    if draw(st.integers(0, 19)) == 0:  # pod affinity: scored node by node in both engines
        kind = draw(st.sampled_from(["podAffinity", "podAntiAffinity"]))
        term = {
            "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
            "topologyKey": "kubernetes.io/hostname",
        }
        rules = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        if draw(st.booleans()):
            rules = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": term}]}
        spec.setdefault("affinity", {})[kind] = rules
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
    if priority_class:
        spec["priorityClassName"] = priority_class
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
    if kind in ("Deployment", "StatefulSet") and draw(st.booleans()):
        spec["selector"] = {"matchLabels": {"app": template["metadata"]["labels"]["app"]}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


@st.composite
def running_pod(draw: st.DrawFn, i: int, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod already bound: with the extender's annotation (a GPU index, maybe a wrong one) or without, maybe done."""
    template = draw(pod_template())
    template["spec"].pop("topologySpreadConstraints", None)
    node = draw(st.sampled_from(nodes))
    annotations: dict[str, str] = {}
    gpus = node["status"]["capacity"].get("aliyun.com/gpu-count", 0)
    if gpus and draw(st.booleans()):  # the extender's annotations, maybe with its share, or ACK's allocation
        index = draw(st.integers(0, gpus))
        annotations["ALIYUN_COM_GPU_MEM_IDX"] = str(index)
        if draw(st.booleans()):
            annotations["ALIYUN_COM_GPU_MEM_POD"] = str(draw(st.integers(0, 8)))
        elif draw(st.booleans()):
            share = {str(index): draw(st.integers(1, 8))}
            annotations["scheduler.framework.gpushare.allocation"] = json.dumps({"0": share})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"run{i}",
            "namespace": draw(st.sampled_from(["default", "prod"])),
            "annotations": annotations,
            **template["metadata"],
            **({"ownerReferences": [OWNER]} if draw(st.booleans()) else {}),
        },
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
    existing += [doc for doc in (REPLICA_SET, SERVICE, BUDGET) if draw(st.booleans())] + PRIORITY_CLASSES
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
        "minor": (minor := draw(st.integers(20, 28))),
        "api": draw(st.sampled_from(served_apis(minor))),
        "placement": draw(st.sampled_from(["binpack", "spread"])),
        "unit": unit,
        "input_unit": input_unit,
        "cgpu_cap": draw(st.sampled_from([1, 2, 16])),
    }


@st.composite
def alike_scenario(draw: st.DrawFn) -> dict[str, Any]:
    """Upstream semantics on identical nodes: scores tie often, so the tie count and tie-break are exercised."""
    count = draw(st.integers(2, 8))
    gpus, per_gpu = draw(st.sampled_from([(1, 16), (2, 8), (4, 16)])), None
    gpus, per_gpu = gpus
    capacity = {
        "cpu": "192",
        "memory": "1Ti",
        "pods": 110,
        "aliyun.com/gpu-mem": gpus * per_gpu,
        "aliyun.com/gpu-count": gpus,
    }
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
        for i in range(count)
    ]
    pods = []
    for i in range(draw(st.integers(1, 10))):
        container = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": draw(st.integers(0, 6))}}}
        if draw(st.booleans()):
            container["resources"]["requests"] = {"cpu": draw(st.sampled_from(["1", "2"]))}
        template = {"metadata": {"labels": {"app": draw(st.sampled_from(APPS))}}, "spec": {"containers": [container]}}
        if draw(st.booleans()):
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p{i}", "namespace": "default", **template["metadata"]},
                    "spec": template["spec"],
                }
            )
        else:
            spec = {"replicas": draw(st.integers(1, 12)), "template": template}
            pods.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"d{i}", "namespace": "default"},
                    "spec": spec,
                }
            )
    return {
        "nodes": nodes,
        "pods": pods,
        "minor": (minor := draw(st.integers(20, 28))),
        "api": draw(st.sampled_from(served_apis(minor))),
    }
