"""Scenarios for the differential test: one generator, run twice, through the real kube-scheduler with the stand-in
extender and through `gpushare place`, so the two outcomes can be compared pod by pod.

A scenario is plain Kubernetes objects (Nodes with their status, ReplicaSets, running pods with the extender's
annotations, unhealthy-GPU ConfigMaps, the pods to place in order) built from a seed, printed whole when a
comparison fails so it can be replayed: `python tests/e2e/differential.py SEED` prints it as YAML.

What varies, so the comparison covers the scheduler's whole default scoring: nodes of 1-8 GPUs and of different
cpu and memory, some loaded by a cpu-heavy pod, some tainted PreferNoSchedule, some in zones, some holding the
pods' images, some asking to avoid a ReplicaSet's pods; running pods, some finished, some of a Deployment's
ReplicaSet; unhealthy GPUs; pods with sidecars, init containers, cpu and memory requests or none, tolerations,
preferred node affinity, several images, pod affinity and anti-affinity (required and preferred, of new and of
running pods), topology spread constraints (hard and soft), host ports; pods of Deployments (a ReplicaSet owns
them, as the Deployment controller would make them: there is no controller-manager here).
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

SCHEDULER = "gpushare-scheduler"
IMAGE = "registry.k8s.io/pause:3.9"
TAINT = {"key": "gpushare.io/prefer-not", "value": "yes", "effect": "PreferNoSchedule"}
ZONE = "topology.kubernetes.io/zone"
#: Images pods run and nodes may already hold (ImageLocality): the pause image, and two large ones by tag and
#: without one (`:latest` is implied).
IMAGES = ("registry.k8s.io/pause:3.9", "example.com/infer:v1", "example.com/train")
AVOID = "scheduler.alpha.kubernetes.io/preferAvoidPods"


@dataclass
class Scenario:
    seed: int
    nodes: list[dict[str, Any]] = field(default_factory=list)
    replica_sets: list[dict[str, Any]] = field(default_factory=list)
    running: list[dict[str, Any]] = field(default_factory=list)
    config_maps: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    def documents(self) -> list[dict[str, Any]]:
        return [*self.nodes, *self.config_maps, *self.replica_sets, *self.running, *self.pods]


def _container(name: str, limits: dict[str, str], requests: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": dict(limits)}
    if requests:
        resources["requests"] = dict(requests)
    return {"name": name, "image": IMAGE, "resources": resources}


def _images(rng: random.Random, sizes: dict[str, int]) -> list[dict[str, Any]]:
    """status.images as a kubelet reports them: names (a tagged one, or one left to mean :latest) and sizes."""
    held = []
    for image in IMAGES:
        if rng.random() < 0.4:
            name = image if ":" in image.rsplit("/", 1)[-1] else f"{image}:latest"
            held.append({"names": [name], "sizeBytes": sizes[image]})
    return held


def _node(rng: random.Random, i: int, zones: bool, sizes: dict[str, int]) -> dict[str, Any]:
    gpus = rng.randint(1, 8)
    per_gpu = rng.choice([8, 15, 16])
    capacity = {
        "cpu": rng.choice(["8", "16", "32"]),
        "memory": rng.choice(["32Gi", "64Gi"]),
        "pods": "110",
        "aliyun.com/gpu-mem": str(gpus * per_gpu),
        "aliyun.com/gpu-count": str(gpus),
    }
    name = f"n{i}"
    labels = {"kubernetes.io/hostname": name, "gpushare": "true"}
    if zones:
        labels[ZONE] = rng.choice(["zone-a", "zone-b"])
    if rng.random() < 0.3:
        labels["pool"] = "fast"
    spec: dict[str, Any] = {}
    if rng.random() < 0.25:
        spec["taints"] = [dict(TAINT)]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "differential"}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "images": _images(rng, sizes),
        },
    }


def _replica_set(rng: random.Random, j: int) -> dict[str, Any]:
    labels = {"app": f"d{j}", "pod-template-hash": f"{rng.getrandbits(32):08x}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"d{j}-{labels['pod-template-hash']}",
            "namespace": "default",
            "labels": dict(labels),
            "uid": str(uuid.UUID(int=rng.getrandbits(128))),
        },
        "spec": {
            "replicas": 0,  # no controller-manager runs here; the test creates the ReplicaSet's pods itself
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [_container("main", {})]}},
        },
    }


def _owned(pod: dict[str, Any], replica_set: dict[str, Any]) -> None:
    """Make the pod one of the ReplicaSet's, as its controller would: the template's labels and an owner reference."""
    meta = replica_set["metadata"]
    pod["metadata"]["labels"] = dict(meta["labels"])
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": meta["name"], "uid": meta["uid"], "controller": True}
    ]


def _gpu_pod(rng: random.Random, name: str, max_units: int) -> dict[str, Any]:
    units = rng.randint(1, max_units)
    requests = {}
    cpu = rng.choice(["0", "100m", "500m", "2", None])
    if cpu is not None:
        requests["cpu"] = cpu
    if rng.random() < 0.5:
        requests["memory"] = rng.choice(["256Mi", "2Gi", "8Gi"])
    containers = [_container("main", {"aliyun.com/gpu-mem": str(units)}, requests)]
    containers[0]["image"] = rng.choice(IMAGES)
    if rng.random() < 0.2:  # a sidecar with GPU memory of its own: the extender sums the containers
        containers.append(_container("side", {"aliyun.com/gpu-mem": str(rng.randint(1, 2))}))
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "containers": containers}
    if rng.random() < 0.2:  # an init container counts at node level when larger
        spec["initContainers"] = [_container("init", {"aliyun.com/gpu-mem": str(rng.randint(1, max_units * 2))})]
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": TAINT["key"], "operator": "Exists", "effect": "PreferNoSchedule"}]
    if rng.random() < 0.15:
        key, value = rng.choice([("pool", "fast"), (ZONE, "zone-a")])
        term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.choice([1, 50, 100]), "preference": term}
                ]
            }
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _rules(rng: random.Random, pod: dict[str, Any], apps: list[str], zones: bool) -> None:
    """Rules between pods, now and then: pod (anti-)affinity to a Deployment's pods, required or preferred, by host or
    zone, and topology spread constraints, hard or soft (kube-scheduler's InterPodAffinity and PodTopologySpread)."""
    if not apps:
        return
    spec = pod["spec"]
    key = ZONE if zones and rng.random() < 0.5 else "kubernetes.io/hostname"
    selector = {"matchLabels": {"app": rng.choice(apps)}}
    roll = rng.random()
    if roll < 0.1:
        kind = rng.choice(["podAffinity", "podAntiAffinity"])
        term = {"labelSelector": selector, "topologyKey": key}
        spec.setdefault("affinity", {})[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    elif roll < 0.2:
        kind = rng.choice(["podAffinity", "podAntiAffinity"])
        term = {"labelSelector": selector, "topologyKey": key}
        if rng.random() < 0.3:
            term["namespaceSelector"] = {}  # every namespace (1.22 on; older releases drop the field)
        weighted = [{"weight": rng.choice([10, 100]), "podAffinityTerm": term}]
        spec.setdefault("affinity", {})[kind] = {"preferredDuringSchedulingIgnoredDuringExecution": weighted}
    elif roll < 0.3:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": rng.choice([1, 2]),
                "topologyKey": key,
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": selector,
            }
        ]


def scenario(seed: int) -> Scenario:
    """Nodes, Deployments' ReplicaSets, running pods, unhealthy GPUs, then 4-12 pods to place one at a time."""
    rng = random.Random(seed)
    result = Scenario(seed)
    zones = rng.random() < 0.4
    sizes = {image: rng.choice([300, 800, 2500]) * 1024 * 1024 for image in IMAGES}  # an image's size, on any node
    result.nodes = [_node(rng, i, zones, sizes) for i in range(rng.randint(2, 5))]
    result.replica_sets = [_replica_set(rng, j) for j in range(rng.randint(0, 2))]
    apps = [rs["metadata"]["labels"]["app"] for rs in result.replica_sets]
    for node in result.nodes:  # NodePreferAvoidPods (v1beta1 profiles): keep a ReplicaSet's pods away
        if result.replica_sets and rng.random() < 0.2:
            meta = rng.choice(result.replica_sets)["metadata"]
            owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": meta["name"], "uid": meta["uid"]}
            signature = {"podSignature": {"podController": owner | {"controller": True}}}
            node["metadata"]["annotations"] = {AVOID: json.dumps({"preferAvoidPods": [signature]})}
    for node in result.nodes:
        name = node["metadata"]["name"]
        gpus = int(node["status"]["capacity"]["aliyun.com/gpu-count"])
        per_gpu = int(node["status"]["capacity"]["aliyun.com/gpu-mem"]) // gpus
        if rng.random() < 0.3:
            bad = sorted(rng.sample(range(gpus), rng.randint(1, max(1, gpus // 2))))
            result.config_maps.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"unhealthy-gpu-{name}", "namespace": "kube-system"},
                    "data": {"gpus": ",".join(map(str, bad))},
                }
            )
        for j in range(rng.randint(0, 3)):
            units = rng.randint(1, per_gpu)
            pod = _gpu_pod(rng, f"run-{name}-{j}", per_gpu)
            pod["spec"]["containers"] = [_container("main", {"aliyun.com/gpu-mem": str(units)})]
            pod["spec"].pop("initContainers", None)
            pod["spec"]["nodeName"] = name
            if result.replica_sets and rng.random() < 0.5:
                _owned(pod, rng.choice(result.replica_sets))
            if rng.random() < 0.3:  # a running pod's own rules count for the new ones (anti-affinity, preferences)
                _rules(rng, pod, apps, zones)
                pod["spec"].pop("topologySpreadConstraints", None)
            pod["metadata"]["annotations"] = {
                "ALIYUN_COM_GPU_MEM_IDX": str(rng.randrange(gpus)),
                "ALIYUN_COM_GPU_MEM_POD": str(units),
                "ALIYUN_COM_GPU_MEM_DEV": str(per_gpu),
                "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
            }
            pod["status"] = {"phase": rng.choice(["Running", "Running", "Running", "Succeeded"])}
            result.running.append(pod)
        if rng.random() < 0.3:  # a cpu-heavy pod without GPU: the node is loaded
            cpu = int(node["status"]["capacity"]["cpu"]) * rng.choice([50, 75, 90]) // 100
            heavy = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"cpu-{name}", "namespace": "default"},
                "spec": {"nodeName": name, "containers": [_container("main", {"cpu": str(cpu)})]},
                "status": {"phase": "Running"},
            }
            result.running.append(heavy)
    largest = max(int(n["status"]["capacity"]["aliyun.com/gpu-mem"]) for n in result.nodes)
    for k in range(rng.randint(4, 12)):
        pod = _gpu_pod(rng, f"new-{k}", min(16, largest))
        if result.replica_sets and rng.random() < 0.5:
            _owned(pod, rng.choice(result.replica_sets))
        _rules(rng, pod, apps, zones)
        result.pods.append(pod)
    _host_ports(random.Random(f"ports-{seed}"), result)
    _odd_annotations(random.Random(f"annotations-{seed}"), result)
    extra = random.Random(f"count-{seed}")
    if extra.random() < 0.15:  # a node advertising GPU memory without a count: the extender makes no device for it
        status = extra.choice(result.nodes)["status"]
        for amounts in (status["capacity"], status["allocatable"]):
            amounts.pop("aliyun.com/gpu-count", None)
    return result


def _odd_annotations(rng: random.Random, case: Scenario) -> None:
    """Now and then a running pod's annotations as hands or old tools leave them: no ALIYUN_COM_GPU_MEM_POD, another
    amount than its limit, an index with a space or a list; the extender reads each with Go's Atoi."""
    for pod in case.running:
        annotations = pod["metadata"].get("annotations")
        if not annotations or rng.random() >= 0.15:
            continue
        roll = rng.random()
        if roll < 0.3:
            del annotations["ALIYUN_COM_GPU_MEM_POD"]
        elif roll < 0.6:
            annotations["ALIYUN_COM_GPU_MEM_POD"] = str(rng.randint(0, 4))
        elif roll < 0.8:
            annotations["ALIYUN_COM_GPU_MEM_IDX"] = " " + annotations["ALIYUN_COM_GPU_MEM_IDX"]
        else:
            annotations["ALIYUN_COM_GPU_MEM_IDX"] += ",0"


def _host_ports(rng: random.Random, case: Scenario) -> None:
    """Host ports now and then (NodePorts), on running pods and new ones, from a generator of their own so the rest
    of each scenario stays as it was: two ports, some bound on one address, some UDP. (Sidecars' ports are left
    out: a sidecar's requests count at node level from 1.29, which the dry run does not model yet.)"""
    for pod in [p for p in case.running if p["spec"].get("containers")] + case.pods:
        if rng.random() >= 0.25:
            continue
        port: dict[str, Any] = {"containerPort": 80, "hostPort": rng.choice([8080, 8081])}
        if rng.random() < 0.3:
            port["hostIP"] = "127.0.0.1"
        if rng.random() < 0.2:
            port["protocol"] = "UDP"
        pod["spec"]["containers"][0]["ports"] = [port]


if __name__ == "__main__":  # pragma: no cover - a replay aid
    import yaml

    yaml.safe_dump_all(scenario(int(sys.argv[1])).documents(), sys.stdout, sort_keys=False)
