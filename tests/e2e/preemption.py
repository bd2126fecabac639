"""Scenarios for the preemption test: GPU nodes full of running pods of low priority, and pods of higher priority
(or none, or one that never preempts) that find no room, run through the real kube-scheduler with the stand-in
extender and through `gpushare place`.

What varies: one to three nodes of one or two GPUs, now and then one tainted (preemption cannot help there) or
short of cpu; running pods of the PriorityClasses low and mid or of none, each with a start time, some under a
PodDisruptionBudget (its status as the disruption controller would write it: there is no controller-manager);
then one to three pods of class high, mid, high-never (preemptionPolicy Never) or none. Running pods have
terminationGracePeriodSeconds 0, so a victim's deletion finishes at once without a kubelet.
`python tests/e2e/preemption.py SEED` prints a scenario as YAML.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any

from differential import Scenario

SCHEDULER = "gpushare-scheduler"
IMAGE = "registry.k8s.io/pause:3.9"
#: PriorityClass name -> (value, preemptionPolicy)
CLASSES = {"low": (10, None), "mid": (100, None), "high": (1000, None), "high-never": (1000, "Never")}


@dataclass
class Case(Scenario):
    """A differential scenario (the harness creates and deletes it alike) with PodDisruptionBudgets."""

    budgets: list[dict[str, Any]] = field(default_factory=list)

    def documents(self) -> list[dict[str, Any]]:
        return [*classes(), *self.nodes, *self.budgets, *self.running, *self.pods]


def classes() -> list[dict[str, Any]]:
    found = []
    for name, (value, policy) in CLASSES.items():
        doc: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"e2e-{name}"},
            "value": value,
        }
        if policy:
            doc["preemptionPolicy"] = policy
        found.append(doc)
    return found


def _node(rng: random.Random, name: str) -> dict[str, Any]:
    gpus, per_gpu = rng.choice([1, 2, 2]), rng.choice([8, 16, 16])
    cpu = "2" if rng.random() < 0.15 else "16"
    capacity = {
        "cpu": cpu,
        "memory": "64Gi",
        "pods": "110",
        "aliyun.com/gpu-mem": str(gpus * per_gpu),
        "aliyun.com/gpu-count": str(gpus),
    }
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "e2e"}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        },
    }
    if rng.random() < 0.15:
        node["spec"]["taints"] = [{"key": "gpushare.io/busy", "value": "yes", "effect": "NoSchedule"}]
    return node


def _pod(name: str, units: int, priority_class: str | None, cpu: str = "500m") -> dict[str, Any]:
    container = {
        "name": "c",
        "image": IMAGE,
        "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}, "requests": {"cpu": cpu}},
    }
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "containers": [container], "terminationGracePeriodSeconds": 0}
    if priority_class:
        spec["priorityClassName"] = f"e2e-{priority_class}"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def scenario(seed: int) -> Case:
    rng = random.Random(seed)
    case = Case(seed)
    # nodes named per scenario: a scenario's pod the scheduler still binds while its nodes are deleted can leave a
    # ghost charge on a node of that name in kube-scheduler's cache (1.20), which must not fill the next scenario's
    case.nodes = [_node(rng, f"s{seed}-n{i}") for i in range(rng.randint(1, 3))]
    started = 0
    for node in case.nodes:
        name = node["metadata"]["name"]
        gpus = int(node["status"]["capacity"]["aliyun.com/gpu-count"])
        per_gpu = int(node["status"]["capacity"]["aliyun.com/gpu-mem"]) // gpus
        for index in range(gpus):
            free = per_gpu
            for j in range(rng.randint(1, 3)):
                units = min(free, rng.choice([2, 4, 4, 6, 8]))
                if units <= 0:
                    break
                free -= units
                pod = _pod(f"run-{name}-{index}-{j}", units, rng.choice(["low", "low", "mid", None]))
                pod["spec"]["nodeName"] = name
                pod["metadata"]["labels"] = {"app": rng.choice(["a", "b"])}
                pod["metadata"]["annotations"] = {
                    "ALIYUN_COM_GPU_MEM_IDX": str(index),
                    "ALIYUN_COM_GPU_MEM_POD": str(units),
                    "ALIYUN_COM_GPU_MEM_DEV": str(per_gpu),
                    "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
                }
                started += rng.randint(1, 50)
                pod["status"] = {
                    "phase": "Running",
                    "startTime": f"2026-01-01T{started // 3600:02d}:{started // 60 % 60:02d}:{started % 60:02d}Z",
                }
                case.running.append(pod)
    if rng.random() < 0.4:
        case.budgets.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "keep-a", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}},
                "status": {
                    "disruptionsAllowed": rng.randint(0, 1),
                    "currentHealthy": 1,
                    "desiredHealthy": 1,
                    "expectedPods": 1,
                    "observedGeneration": 1,
                },
            }
        )
    largest = max(
        int(n["status"]["capacity"]["aliyun.com/gpu-mem"]) // int(n["status"]["capacity"]["aliyun.com/gpu-count"])
        for n in case.nodes
    )
    for k in range(rng.randint(1, 3)):
        units = rng.randint(2, largest)
        cpu = "3" if rng.random() < 0.15 else "500m"
        case.pods.append(_pod(f"new-{k}", units, rng.choice(["high", "high", "mid", "high-never", None]), cpu))
    return case


if __name__ == "__main__":  # pragma: no cover - a replay aid
    import yaml

    yaml.safe_dump_all(scenario(int(sys.argv[1])).documents(), sys.stdout, sort_keys=False)
