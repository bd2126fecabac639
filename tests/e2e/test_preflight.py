"""`gpushare preflight` against a real API server: facts read live, a unit switch refused, read-only access."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import ControlPlane
from kube import api, create_node, gpu_node
from kubernetes import client
from toolchain import HELM, need_tool

from gpushare import render

pytestmark = pytest.mark.e2e


def gpushare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpushare", *args], capture_output=True, text=True, timeout=120)


def read_only_user(cluster: ControlPlane, core: Any, user: str, resources: list[str], daemonsets: bool = False) -> Any:
    """A user bound to get/list on core resources (and DaemonSets); returns its kubeconfig."""
    rules = [{"apiGroups": [""], "resources": resources, "verbs": ["get", "list"]}]
    if daemonsets:
        rules.append({"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "list"]})
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    rbac.create_cluster_role({"metadata": {"name": f"gpushare-{user}"}, "rules": rules})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": f"gpushare-{user}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"gpushare-{user}"},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        }
    )
    return cluster.write_kubeconfig(user)


def test_preflight_reads_the_cluster_and_refuses_a_unit_switch(cluster: ControlPlane, tmp_path: Path) -> None:
    core = api(cluster.kubeconfig)
    create_node(
        core,
        *gpu_node("pf-a", 2, 15, {"ack.node.gpu.schedule": "share", "topology.kubernetes.io/region": "cn-beijing"}),
    )
    chart = tmp_path / "chart"
    render({"kubernetesVersion": f"1.{cluster.minor}"}, format="chart", output=chart)  # ack, 1GiB, managed
    installed = subprocess.run(
        [
            str(need_tool(HELM)),
            "install",
            "pf",
            str(chart),
            "-n",
            "kube-system",
            "--kubeconfig",
            str(cluster.kubeconfig),
        ],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "holder"},
            "spec": {
                "nodeName": "pf-a",
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"limits": {"aliyun.com/gpu-mem": "3"}},
                    }
                ],
            },
        },
    )

    # users that may only read: preflight needs nothing more, and reads the unit from whatever it may read
    reader = read_only_user(cluster, core, "reader", ["nodes", "pods"], daemonsets=True)
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "gpushare.io/v1alpha1",
                "kind": "InstallerSettings",
                "gpuMemoryUnit": "128MiB",
                "devicePlugin": {"image": {"repository": "example.com/acs/ack-gpushare-device-plugin", "tag": "v1"}},
            }
        )
    )
    witnesses = [  # (kubeconfig, where the installed unit was read, whether it may read the kube-system Namespace)
        (reader, "(DaemonSet kube-system/", False),
        (
            read_only_user(cluster, core, "release-reader", ["nodes", "pods", "secrets", "namespaces"]),
            "(helm release kube-system/pf (ack-ai-installer ",
            True,
        ),
        (
            read_only_user(cluster, core, "node-reader", ["nodes", "pods"]),
            "(aliyun.com/gpu-mem capacity of nodes pf-a)",
            False,
        ),
    ]
    for kubeconfig, witness, reads_namespace in witnesses:
        result = gpushare("preflight", "--kubeconfig", str(kubeconfig), "--config", str(settings), "-o", "json")
        assert result.returncode == 1, result.stderr
        report = json.loads(result.stdout)
        findings = {f["rule"]: f for f in report["findings"]}
        assert "GC411" in findings and "default/holder" in findings["GC411"]["expected"], report
        assert witness in findings["GC411"]["expected"], findings["GC411"]
        # the cluster's age needs the kube-system Namespace: said when it could not be read, used when it could
        assert ("cluster age" in {n["check"] for n in report["notChecked"]}) is not reads_namespace, report
        assert "GC412" not in findings  # a cluster created today needs no restart ticket

    # the open-source stack behind a secondary scheduler: the running GPU pod bypasses the extender (GW214);
    # every GPU node's runtime is reported with what to configure (GN310)
    open_source = tmp_path / "open-source.yaml"
    open_source.write_text(
        yaml.safe_dump({"apiVersion": "gpushare.io/v1alpha1", "kind": "InstallerSettings", "profile": "open-source"})
    )
    result = gpushare("preflight", "--kubeconfig", str(reader), "--config", str(open_source), "-o", "json")
    findings = json.loads(result.stdout)["findings"]
    assert [(f["object"], f["value"]) for f in findings if f["rule"] == "GW214"] == [
        ("Pod/default/holder", "default-scheduler")
    ]
    assert [f["object"] for f in findings if f["rule"] == "GN310"] == ["Node/pf-a"]

    same_unit = tmp_path / "same.yaml"
    same_unit.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "gpushare.io/v1alpha1",
                "kind": "InstallerSettings",
                "isolation": ["share", "core_mem"],
                "computeAllocation": True,
            }
        )
    )
    result = gpushare("preflight", "--kubeconfig", str(reader), "--config", str(same_unit), "-o", "json")
    report = json.loads(result.stdout)
    rules = {f["rule"] for f in report["findings"]}
    assert result.returncode == 0, result.stdout
    assert "GC411" not in rules  # same unit: nothing to switch
    assert "GS108" not in rules  # the region came from the nodes' labels (cn-beijing)
    # without the region label the region is unknown: the same settings now draw GS108
    core.patch_node("pf-a", {"metadata": {"labels": {"topology.kubernetes.io/region": None}}})
    result = gpushare("preflight", "--kubeconfig", str(reader), "--config", str(same_unit), "-o", "json")
    assert "GS108" in {f["rule"] for f in json.loads(result.stdout)["findings"]}

    nobody = cluster.write_kubeconfig("nobody-pf")
    denied = gpushare("preflight", "--kubeconfig", str(nobody), "--config", str(settings))
    assert denied.returncode == 2 and "access denied" in denied.stderr
    assert len(denied.stderr.strip().splitlines()) == 1
    subprocess.run(
        [str(need_tool(HELM)), "uninstall", "pf", "-n", "kube-system", "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True,
        check=True,
    )
