"""`gpushare doctor` on a real API server: every ledger fault planted in a live cluster is found with its rule ID and
the object it concerns, and nothing else; the chart's read-only access for doctor (`doctor.rbac`) serves it, and a
write under it is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import ControlPlane
from kube import api, create_node, gpu_node, service_account_kubeconfig
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpushare.generate.render import render

pytestmark = pytest.mark.e2e
NS = "kube-system"


def gpushare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpushare", *args], capture_output=True, text=True, timeout=120)


def daemonset(apps: client.AppsV1Api, name: str, image: str, unit: str | None = None) -> dict[str, Any]:
    labels = {"app": name}
    container: dict[str, Any] = {"name": "c", "image": image}
    if unit:
        container["args"] = [f"--memory-unit={unit}"]
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    made = apps.create_namespaced_daemon_set(NS, body)
    return {"name": name, "uid": made.metadata.uid}


def agent(core: client.CoreV1Api, ds: dict[str, Any], node: str) -> None:
    """A pod of the DaemonSet on the node, running (no kubelet here: its status is reported as one would)."""
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds["name"], "uid": ds["uid"], "controller": True}
    name = f"{ds['name']}-{node}"
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name, "ownerReferences": [owner]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
        },
    )
    core.patch_namespaced_pod_status(name, NS, {"status": {"phase": "Running"}})


def gpu_pod(core: client.CoreV1Api, name: str, node: str, units: int, idx: str | None, **notes: str) -> None:
    annotations: dict[str, str] = {}
    if idx is not None:
        annotations = {
            "ALIYUN_COM_GPU_MEM_IDX": idx,
            "ALIYUN_COM_GPU_MEM_POD": str(units),
            "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
            "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(time.time_ns()),
        }
    annotations.update(notes)
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}},
    }
    core.create_namespaced_pod(
        "default",
        {"metadata": {"name": name, "annotations": annotations}, "spec": {"nodeName": node, "containers": [container]}},
    )


def doctor_access(cluster: ControlPlane, core: client.CoreV1Api) -> Path:
    """The chart's doctor ServiceAccount, ClusterRole and binding created as rendered, and a kubeconfig with a token
    of that ServiceAccount (TokenRequest)."""
    objects = [
        o
        for o in render(format="chart", doctor_rbac=True, kube_version=f"1.{cluster.minor}").objects
        if o["metadata"]["name"].endswith("-doctor")
    ]
    assert sorted(o["kind"] for o in objects) == ["ClusterRole", "ClusterRoleBinding", "ServiceAccount"]
    return service_account_kubeconfig(cluster, core, objects, "doctor")


def findings(kubeconfig: Path, minor: int) -> tuple[int, set[tuple[str, str]]]:
    done = gpushare("doctor", "--kubeconfig", str(kubeconfig), "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    return done.returncode, {(f["rule"], f["object"]) for f in report["findings"]}


def test_every_planted_fault_is_found_under_doctors_own_access(cluster: ControlPlane) -> None:
    core = api(cluster.kubeconfig)
    apps = client.AppsV1Api(core.api_client)
    access = doctor_access(cluster, core)
    plugin = daemonset(apps, "gpushare-device-plugin-share", "acs/k8s-gpushare-plugin:v2", "GiB")
    installer = daemonset(apps, "gpushare-cgpu-installer", "acs/cgpu-installer:1.5.20")
    for name, labels in (("dr-a", {"ack.node.gpu.schedule": "share"}), ("dr-c", {"ack.node.gpu.schedule": "cgpu"})):
        create_node(core, *gpu_node(name, 2, 16, labels))
        agent(core, plugin, name)
    agent(core, installer, "dr-c")
    gpu_pod(core, "fine1", "dr-a", 10, "0")
    gpu_pod(core, "fine2", "dr-a", 6, "0")
    code, clean = findings(access, cluster.minor)
    assert (code, clean) == (0, set())

    # the faults, each where only it is wrong
    gpu_pod(core, "twice", "dr-a", 8, "0")  # GPU 0 of dr-a: 10 + 6 + 8 > 16
    gpu_pod(core, "beyond", "dr-c", 4, "5")
    gpu_pod(
        core,
        "stale",
        "dr-c",
        4,
        "1",
        ALIYUN_COM_GPU_MEM_ASSIGNED="false",
        ALIYUN_COM_GPU_MEM_ASSUME_TIME=str(time.time_ns() - 3600 * 10**9),
    )
    gpu_pod(core, "preset", "dr-c", 2, None)
    gpu_pod(core, "early", "dr-c", 3, "1")  # started before dr-c's cGPU installer: a mode change under it
    core.patch_namespaced_pod_status("early", "default", {"status": {"startTime": "2020-01-01T00:00:00Z"}})
    node, status = gpu_node("dr-zero", 2, 16, {"ack.node.gpu.schedule": "share"})
    for reported in ("capacity", "allocatable"):  # the plugin reports no device (kubelet refused its list)
        status["status"][reported]["aliyun.com/gpu-mem"] = "0"
    create_node(core, node, status)
    agent(core, plugin, "dr-zero")
    create_node(core, *gpu_node("dr-noplugin", 1, 16, {"ack.node.gpu.schedule": "share"}))
    create_node(core, *gpu_node("dr-stray", 1, 16))
    agent(core, plugin, "dr-stray")
    create_node(core, *gpu_node("dr-noinstaller", 1, 16, {"ack.node.gpu.schedule": "cgpu"}))
    agent(core, plugin, "dr-noinstaller")
    node, status = gpu_node("dr-whole", 1, 16, {"ack.node.gpu.schedule": "share"})
    status["status"]["capacity"]["nvidia.com/gpu"] = "1"
    create_node(core, node, status)
    agent(core, plugin, "dr-whole")
    policy = {"kind": "Policy", "apiVersion": "v1", "extenders": []}
    core.create_namespaced_config_map(
        NS, {"metadata": {"name": "old-scheduler"}, "data": {"policy.cfg": json.dumps(policy)}}
    )
    daemonset(apps, "gpushare-device-plugin-small", "acs/k8s-gpushare-plugin:v2", "128MiB")  # a unit switch half done

    code, found = findings(access, cluster.minor)
    expected = {
        ("GL602", "Node/dr-a"),
        ("GL601", "Pod/default/beyond"),
        ("GL603", "Pod/default/stale"),
        ("GL604", "Pod/default/preset"),
        ("GL605", "Node/dr-zero"),
        ("GL606", "Node/dr-noplugin"),
        ("GL607", "Node/dr-stray"),
        ("GL608", "Node/dr-noinstaller"),
        ("GL609", "Node/dr-whole"),
        ("GL611", "cluster"),
        ("GL612", "Node/dr-c"),
    }
    if cluster.minor >= 23:  # the Policy file is gone from 1.23 on
        expected.add(("GL610", "cluster"))
    assert code == 1 and found == expected, found ^ expected

    # doctor's access reads and nothing more
    reader = api(access)
    with pytest.raises(ApiException) as refused:
        reader.create_namespaced_config_map(NS, {"metadata": {"name": "written-by-doctor"}})
    assert refused.value.status == 403


def test_a_refused_or_unreachable_cluster_is_one_line(cluster: ControlPlane, tmp_path: Path) -> None:
    denied = gpushare("doctor", "--kubeconfig", str(cluster.write_kubeconfig("nobody")))
    assert denied.returncode == 2 and "access denied" in denied.stderr
    assert len(denied.stderr.strip().splitlines()) == 1
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    gone = tmp_path / "gone.kubeconfig"
    gone.write_text(yaml.safe_dump(config))
    unreachable = gpushare("doctor", "--kubeconfig", str(gone))
    assert unreachable.returncode == 2 and "cluster unreachable" in unreachable.stderr
    assert len(unreachable.stderr.strip().splitlines()) == 1
