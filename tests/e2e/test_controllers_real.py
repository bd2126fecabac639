"""The generated chart run by Kubernetes' own controllers: kube-controller-manager's DaemonSet, Deployment and
ReplicaSet controllers and garbage collector, the default kube-scheduler placing the DaemonSets' pods, and kwok
playing the kubelet of fake GPU nodes (gpu-mem and gpu-count capacity; labels for share, cgpu, core_mem and
`gpushare=true`). After `helm install`, each DaemonSet runs on exactly the nodes its mode targets and the
Deployments run; `helm upgrade` with a changed value rolls the device plugin and not the cGPU installer (OnDelete);
`helm rollback` and `helm uninstall` leave nothing behind. The waits are pytest-helm-charts' own, its cluster
pointed at this harness's API server by its kubeconfig (the plugin's session-wide `kube_cluster` fixture takes one
cluster for the whole run, and each minor here is a cluster of its own)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import KWOK_NODE, ControlPlane
from kube import api, create_node, gpu_node
from kubernetes import client
from pytest_helm_charts.clusters import ExistingCluster
from pytest_helm_charts.k8s.daemon_set import wait_for_daemon_sets_to_run
from pytest_helm_charts.k8s.deployment import wait_for_deployments_to_run
from toolchain import CONTROLLER_MINORS, HELM, KWOK, kwok_stages, need_tool

from gpushare.generate.render import render

pytestmark = pytest.mark.e2e
#: Only these minors build kube-controller-manager (tests/toolchain.py).
MINORS = CONTROLLER_MINORS
NS = "kube-system"
PLUGIN = "registry.example/acs/k8s-gpushare-plugin"
#: Each fake node, its labels, and the agents whose pods belong there by each settings variant.
NODES: dict[str, dict[str, str]] = {
    "kw-share": {"ack.node.gpu.schedule": "share"},
    "kw-cgpu": {"ack.node.gpu.schedule": "cgpu"},
    "kw-core": {"ack.node.gpu.schedule": "core_mem"},
    "kw-open": {"gpushare": "true"},
    "kw-plain": {},
}


@pytest.fixture(scope="module")
def fleet(cluster: ControlPlane) -> Iterator[ControlPlane]:
    """The controllers, the default scheduler and kwok running; the fake GPU nodes Ready."""
    need_tool(KWOK)
    cluster.start_scheduler([f"--kubeconfig={cluster.kubeconfig}", "--leader-elect=false"])
    cluster.start_controllers()
    cluster.start_kwok(need_tool(KWOK), kwok_stages())
    core = api(cluster.kubeconfig)
    key, value = KWOK_NODE.split("=")
    for name, labels in NODES.items():
        node, status = gpu_node(name, 2, 16, labels) if name != "kw-plain" else gpu_node(name, 0, 0, labels)
        if name == "kw-core":
            status["status"]["capacity"]["aliyun.com/gpu-core.percentage"] = "200"
        node["metadata"]["annotations"] = {key: value}
        create_node(core, node, status)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(_ready(core, n) for n in NODES):
        time.sleep(0.5)
    assert all(_ready(core, n) for n in NODES), "kwok did not make the nodes Ready"
    yield cluster


def settle(done: Callable[[], bool], timeout: float = 120) -> None:
    """Wait until `done()` holds (the caller asserts it after, so a timeout fails with what was seen)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not done():
        time.sleep(0.5)


def _ready(core: client.CoreV1Api, name: str) -> bool:
    conditions = core.read_node(name).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def helm(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(need_tool(HELM)), *args, "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done


VARIANTS: dict[str, tuple[dict[str, Any], dict[str, set[str]], list[str]]] = {
    # settings, the nodes of each DaemonSet, the Deployments
    "ack": (
        {
            "profile": "ack",
            "isolation": ["share", "cgpu", "core_mem"],
            "computeAllocation": True,
            "region": "cn-beijing",
            "devicePlugin": {"image": {"repository": PLUGIN, "tag": "v1"}},
        },
        {
            "gpushare-device-plugin-share": {"kw-share"},
            "gpushare-device-plugin-cgpu": {"kw-cgpu"},
            "gpushare-device-plugin-core-mem": {"kw-core"},
            "gpushare-cgpu-installer": {"kw-cgpu", "kw-core"},
        },
        [],
    ),
    "open-source": (
        {"profile": "open-source", "scheduler": {"mode": "secondary"}},
        {"gpushare-device-plugin": {"kw-open"}},
        ["gpushare-scheduler"],
    ),
}


def placed(core: client.CoreV1Api, daemonset: str) -> dict[str, str]:
    """The DaemonSet's pods: node -> phase."""
    pods = core.list_namespaced_pod(NS).items
    mine = [
        p for p in pods if any(o.kind == "DaemonSet" and o.name == daemonset for o in p.metadata.owner_references or [])
    ]
    return {p.spec.node_name: p.status.phase for p in mine}


def uids(core: client.CoreV1Api, daemonset: str) -> set[str]:
    pods = core.list_namespaced_pod(NS).items
    return {p.metadata.uid for p in pods if any(o.name == daemonset for o in p.metadata.owner_references or [])}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_chart_runs_where_each_mode_says(fleet: ControlPlane, tmp_path: Path, variant: str) -> None:
    settings, expected, deployments = VARIANTS[variant]
    chart = tmp_path / "chart"
    release = f"gpushare-{variant}"
    rendered = render(settings, output=chart, kube_version=f"1.{fleet.minor}", release_name=release)
    # the objects' names as the chart gives them this release (`<release>-<what>`)
    by_suffix = {o["metadata"]["name"].removeprefix(f"{release}-"): o["metadata"]["name"] for o in rendered.objects}
    assert sorted(o["metadata"]["name"] for o in rendered.objects if o["kind"] == "DaemonSet") == sorted(
        by_suffix[d.removeprefix("gpushare-")] for d in expected
    )
    core = api(fleet.kubeconfig)
    kube_client = ExistingCluster(str(fleet.kubeconfig)).create()
    helm("install", release, str(chart), "-n", NS, kubeconfig=fleet.kubeconfig)
    try:
        names = [by_suffix[d.removeprefix("gpushare-")] for d in expected]
        wait_for_daemon_sets_to_run(kube_client, names, NS, timeout_sec=120)
        for daemonset, nodes in expected.items():
            # the helper takes a DaemonSet whose controller has not counted its nodes yet (0 desired, 0 ready) for
            # one that runs: its pods are waited for here
            name = by_suffix[daemonset.removeprefix("gpushare-")]
            want = dict.fromkeys(nodes, "Running")
            settle(lambda name=name, want=want: placed(core, name) == want)
            assert placed(core, name) == want, (name, placed(core, name))
        if deployments:
            running = [by_suffix[d.removeprefix("gpushare-")] for d in deployments]
            wait_for_deployments_to_run(kube_client, running, NS, timeout_sec=120)

        # an upgrade that changes the device plugin and the cGPU installer: the plugin rolls, the installer waits
        plugins = {n: uids(core, n) for n in names}
        values = tmp_path / "values.yaml"
        change: dict[str, Any] = {"devicePlugin": {"resources": {"limits": {"memory": "333Mi"}}}}
        if "gpushare-cgpu-installer" in expected:
            change["cgpu"] = {"resources": {"limits": {"memory": "444Mi"}}}
        values.write_text(yaml.safe_dump(change))
        helm("upgrade", release, str(chart), "-n", NS, "--reuse-values", "-f", str(values), kubeconfig=fleet.kubeconfig)
        rolled = [n for n in names if "cgpu-installer" not in n]
        settle(lambda: not any(uids(core, n) & plugins[n] for n in rolled) and all(uids(core, n) for n in rolled))
        for name in names:
            now = uids(core, name)
            if "cgpu-installer" in name:  # OnDelete: its pods stay until someone deletes them
                assert now == plugins[name], name
            else:
                assert now and not now & plugins[name], name
        wait_for_daemon_sets_to_run(kube_client, names, NS, timeout_sec=120)

        helm("rollback", release, "1", "-n", NS, kubeconfig=fleet.kubeconfig)
        apps = client.AppsV1Api(core.api_client)
        for name in rolled:
            template = apps.read_namespaced_daemon_set(name, NS).spec.template.spec.containers[0].resources.limits or {}
            assert template.get("memory") != "333Mi", name
    finally:
        helm("uninstall", release, "-n", NS, "--wait", kubeconfig=fleet.kubeconfig)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _left(core, release):
        time.sleep(0.5)
    assert _left(core, release) == []


def _left(core: client.CoreV1Api, release: str) -> list[str]:
    """Whatever of the release is still there: its pods, and any object labelled as its."""
    selector = f"app.kubernetes.io/instance={release}"
    apps = client.AppsV1Api(core.api_client)
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    found = [f"Pod/{p.metadata.name}" for p in core.list_pod_for_all_namespaces(label_selector=selector).items]
    found += [
        f"DaemonSet/{d.metadata.name}" for d in apps.list_daemon_set_for_all_namespaces(label_selector=selector).items
    ]
    found += [
        f"Deployment/{d.metadata.name}" for d in apps.list_deployment_for_all_namespaces(label_selector=selector).items
    ]
    found += [f"ClusterRole/{r.metadata.name}" for r in rbac.list_cluster_role(label_selector=selector).items]
    found += [
        f"ServiceAccount/{s.metadata.name}"
        for s in core.list_service_account_for_all_namespaces(label_selector=selector).items
    ]
    return found
