"""Small helpers over the kubernetes client for the end-to-end tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.dynamic import DynamicClient


def api(kubeconfig: Path) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))


def dynamic(kubeconfig: Path, cache: Path) -> DynamicClient:
    """A dynamic client whose discovery cache is `cache` (by default it is left in the system's temporary
    directory, a file for each server)."""
    return DynamicClient(api(kubeconfig).api_client, cache_file=str(cache))


def gpu_node(
    name: str,
    gpus: int,
    per_gpu: int,
    labels: dict[str, str] | None = None,
    cpu: str = "32",
    memory: str = "128Gi",
    pods: int = 110,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Node object and the status a device plugin and kubelet would report for it."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpus:
        capacity |= {"aliyun.com/gpu-mem": str(gpus * per_gpu), "aliyun.com/gpu-count": str(gpus)}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
    }
    status = {
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "e2e",
                    "lastHeartbeatTime": None,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        }
    }
    return node, status


def create_node(core: client.CoreV1Api, node: dict[str, Any], status: dict[str, Any]) -> None:
    """Create the node, report its status, and lift the not-ready taint admission put on it (the node
    lifecycle controller's job, and there is no controller-manager here)."""
    name = node["metadata"]["name"]
    core.create_node(node)
    core.patch_node_status(name, status)
    core.patch_node(name, {"spec": {"taints": None}})
