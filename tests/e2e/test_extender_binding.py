"""The real kube-scheduler, with the configuration gpushare renders, binding pods through the stand-in extender.

Only what running outside a pod requires is adapted: the scheduler gets a kubeconfig instead of its in-cluster
config and no leader election, and the extender's port is a free one on loopback (set through the chart value
`extender.port`, as a user would).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import ControlPlane, free_port, tail
from kube import api, create_node, gpu_node
from standin_extender import StandIn

from gpushare import render

pytestmark = pytest.mark.e2e
SCHEDULER = "gpushare-scheduler"


def rendered_scheduler(cluster: ControlPlane, tmp_path: Path, port: int) -> list[str]:
    """kube-scheduler's arguments from the rendered secondary-scheduler ConfigMap, adapted to run here."""
    settings = {"profile": "open-source", "kubernetesVersion": f"1.{cluster.minor}", "extender": {"port": port}}
    objects = render(settings, format="manifests").objects
    config_map = next(o for o in objects if o["kind"] == "ConfigMap")
    ((name, text),) = config_map["data"].items()
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cluster.outside_a_pod(yaml.safe_load(text))))
    return [f"--config={path}"]


def gpu_pod(name: str, units: int, scheduler: str = SCHEDULER) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}},
                }
            ],
        },
    }


def wait_bound(core: Any, name: str, log: Path, errors: list[str], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = core.api_client.sanitize_for_serialization(core.read_namespaced_pod(name, "default"))
        if pod["spec"].get("nodeName"):
            return pod
        time.sleep(0.2)
    raise AssertionError(f"pod {name} not bound after {timeout:.0f}s: {errors[-3:]}; kube-scheduler:\n{tail(log)}")


def wait_unschedulable(core: Any, name: str, log: Path, timeout: float = 60) -> str:
    """The message of the pod's PodScheduled=False/Unschedulable condition, once kube-scheduler sets it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for condition in core.read_namespaced_pod(name, "default").status.conditions or []:
            if condition.type == "PodScheduled" and condition.reason == "Unschedulable":
                return str(condition.message)
        time.sleep(0.2)
    raise AssertionError(f"pod {name} not reported unschedulable after {timeout:.0f}s:\n{tail(log)}")


def test_rendered_config_binds_through_the_extender(cluster: ControlPlane, tmp_path: Path) -> None:
    core = api(cluster.kubeconfig)
    create_node(core, *gpu_node("bind-a", 2, 8))
    port = free_port()
    standin = StandIn(cluster.kubeconfig)
    server = standin.serve(port)
    try:
        process, sport = cluster.start_scheduler(rendered_scheduler(cluster, tmp_path, port), name="gpushare-scheduler")
        # on a loaded machine start-up can take long: wait for it before timing the binds
        cluster.wait_http(process, f"https://127.0.0.1:{sport}/healthz", cert=False, timeout=180)
        core.create_namespaced_pod("default", gpu_pod("first", 5))
        first = wait_bound(core, "first", process.log, standin.errors)
        core.create_namespaced_pod("default", gpu_pod("second", 2))
        second = wait_bound(core, "second", process.log, standin.errors)
        core.create_namespaced_pod("default", gpu_pod("too-big", 9))
        refused = wait_unschedulable(core, "too-big", process.log)
        assert process.alive(), tail(process.log)
    finally:
        server.shutdown()
    # filter and bind were called by the real scheduler, and the annotations are the extender's
    assert ("filter", "default/first") in standin.calls and ("bind", "default/first") in standin.calls
    annotations = first["metadata"]["annotations"]
    assert first["spec"]["nodeName"] == "bind-a"
    assert annotations["ALIYUN_COM_GPU_MEM_IDX"] == "0" and annotations["ALIYUN_COM_GPU_MEM_POD"] == "5"
    assert annotations["ALIYUN_COM_GPU_MEM_DEV"] == "8" and annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"] == "false"
    # best fit: GPU 0 has 3 left, GPU 1 has 8: the 2-unit pod goes to GPU 0
    assert second["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"] == "0"
    # 9 units fit no device of 8: the extender's filter refused the node and kube-scheduler says so
    assert ("filter", "default/too-big") in standin.calls and ("bind", "default/too-big") not in standin.calls
    assert "Insufficient GPU Memory in one device" in refused
    assert not standin.errors
