"""Scenarios for the differential test: one generator, run twice, through the real kube-scheduler with the stand-in
extender and through `gpushare place`, so the two outcomes can be compared pod by pod.

A scenario is plain Kubernetes objects (Nodes with their status, running pods with the extender's annotations,
unhealthy-GPU ConfigMaps, the pods to place in order) built from a seed, printed whole when a comparison fails
so it can be replayed: `python tests/e2e/differential.py SEED` prints it as YAML.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any

SCHEDULER = "gpushare-scheduler"
IMAGE = "registry.k8s.io/pause:3.9"


@dataclass
class Scenario:
    seed: int
    nodes: list[dict[str, Any]] = field(default_factory=list)
    running: list[dict[str, Any]] = field(default_factory=list)
    config_maps: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    def documents(self) -> list[dict[str, Any]]:
        return [*self.nodes, *self.config_maps, *self.running, *self.pods]


def _container(name: str, limits: dict[str, str], requests: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": dict(limits)}
    if requests:
        resources["requests"] = dict(requests)
    return {"name": name, "image": IMAGE, "resources": resources}


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    gpus = rng.randint(1, 8)
    per_gpu = rng.choice([8, 15, 16])
    cpu = rng.choice(["8", "16", "32"])
    capacity = {
        "cpu": cpu,
        "memory": rng.choice(["32Gi", "64Gi"]),
        "pods": "110",
        "aliyun.com/gpu-mem": str(gpus * per_gpu),
        "aliyun.com/gpu-count": str(gpus),
    }
    name = f"n{i}"
    spec: dict[str, Any] = {}
    if rng.random() < 0.25:
        spec["taints"] = [{"key": "gpushare.io/prefer-not", "value": "yes", "effect": "PreferNoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "gpushare": "true"}},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "differential"}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        },
    }


def _gpu_pod(rng: random.Random, name: str, max_units: int) -> dict[str, Any]:
    units = rng.randint(1, max_units)
    containers = [_container("main", {"aliyun.com/gpu-mem": str(units)}, {"cpu": rng.choice(["0", "500m", "2"])})]
    if rng.random() < 0.2:  # a sidecar with GPU memory of its own: the extender sums the containers
        containers.append(_container("side", {"aliyun.com/gpu-mem": str(rng.randint(1, 2))}))
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "containers": containers}
    if rng.random() < 0.2:  # an init container counts at node level when larger
        spec["initContainers"] = [_container("init", {"aliyun.com/gpu-mem": str(rng.randint(1, max_units * 2))})]
    if spec["containers"][0]["resources"].get("requests", {}).get("cpu") == "0":
        del spec["containers"][0]["resources"]["requests"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def scenario(seed: int) -> Scenario:
    """Nodes of 1-8 GPUs, some cpu-loaded or tainted PreferNoSchedule, running pods (some done), unhealthy GPUs,
    then 4-12 pods of every shape to place one at a time."""
    rng = random.Random(seed)
    result = Scenario(seed)
    result.nodes = [_node(rng, i) for i in range(rng.randint(2, 5))]
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
        result.pods.append(_gpu_pod(rng, f"new-{k}", min(16, largest)))
    return result


if __name__ == "__main__":  # pragma: no cover - a replay aid
    import yaml

    yaml.safe_dump_all(scenario(int(sys.argv[1])).documents(), sys.stdout, sort_keys=False)
