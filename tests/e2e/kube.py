"""Small helpers over the kubernetes client for the end-to-end tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
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


def service_account_kubeconfig(cluster: Any, core: client.CoreV1Api, objects: list[dict[str, Any]], user: str) -> Path:
    """A rendered ServiceAccount, its ClusterRole and binding created as rendered (other kinds among `objects` are
    left), and a kubeconfig of this cluster with a token of that ServiceAccount (TokenRequest): the access a chart
    gives a component, to run it under."""
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    account = next(o for o in objects if o["kind"] == "ServiceAccount")
    namespace, name = account["metadata"]["namespace"], account["metadata"]["name"]
    for obj in objects:
        if obj["kind"] == "ServiceAccount":
            core.create_namespaced_service_account(namespace, obj)
        elif obj["kind"] == "ClusterRole":
            rbac.create_cluster_role(obj)
        elif obj["kind"] == "ClusterRoleBinding":
            rbac.create_cluster_role_binding(obj)
    token = core.create_namespaced_service_account_token(name, namespace, {"spec": {"expirationSeconds": 3600}})
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": user, "user": {"token": token.status.token}}]
    config["contexts"][0]["context"]["user"] = user
    path = cluster.workdir / f"{user}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path
