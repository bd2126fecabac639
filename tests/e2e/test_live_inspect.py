"""`gpushare inspect/place --kubeconfig` read a real API server exactly as the YAML files would say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cluster import ControlPlane
from kube import api, create_node, gpu_node

pytestmark = pytest.mark.e2e


def gpushare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpushare", *args], capture_output=True, text=True, timeout=120)


def test_inspect_and_place_from_a_live_cluster(cluster: ControlPlane, tmp_path: Path) -> None:
    core = api(cluster.kubeconfig)
    create_node(core, *gpu_node("live-a", 2, 15, {"ack.node.gpu.schedule": "share"}))
    create_node(core, *gpu_node("live-b", 4, 8))
    core.create_namespaced_config_map(
        "kube-system", {"metadata": {"name": "unhealthy-gpu-live-b"}, "data": {"gpus": "3"}}
    )
    for name, node, idx, mem in (("p1", "live-a", "1", 6), ("p2", "live-b", "0", 8), ("p3", "live-b", "2", 3)):
        core.create_namespaced_pod(
            "default",
            {
                "metadata": {
                    "name": name,
                    "annotations": {"ALIYUN_COM_GPU_MEM_IDX": idx, "ALIYUN_COM_GPU_MEM_POD": str(mem)},
                },
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {"limits": {"aliyun.com/gpu-mem": str(mem)}},
                        }
                    ],
                },
            },
        )
    live = gpushare("inspect", "--kubeconfig", str(cluster.kubeconfig))
    assert live.returncode == 0, live.stderr
    rows = {line.split()[0]: line.split() for line in live.stdout.splitlines()[1:3]}
    assert rows["live-a"][2:] == ["0/15", "6/15", "6/30", "24(15)"]  # the last: free (largest on one GPU)
    assert rows["live-b"][2:] == [
        "8/8",
        "0/8",
        "3/8",
        "0/8(unhealthy)",
        "11/32",
        "13(8)",
    ]  # unhealthy GPU 3 counts no free memory
    assert live.stdout.splitlines()[-2:] == ["17/62 (27%)", "Free GPU Memory In Cluster: 37, at most 15 on one GPU"]

    # the same objects as files give the same answer, and a workload lands where the file run says
    dump = tmp_path / "cluster.yaml"
    nodes = [core.api_client.sanitize_for_serialization(n) | {"kind": "Node"} for n in core.list_node().items]
    maps = [
        core.api_client.sanitize_for_serialization(c) | {"kind": "ConfigMap"}
        for c in core.list_namespaced_config_map("kube-system").items
    ]
    pods = [
        core.api_client.sanitize_for_serialization(p) | {"kind": "Pod"}
        for p in core.list_pod_for_all_namespaces().items
    ]
    dump.write_text(yaml.safe_dump_all(nodes + maps + pods))
    workload = tmp_path / "w.yaml"
    workload.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "w", "namespace": "default"},
                "spec": {
                    "replicas": 4,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 7}}}]}
                    },
                },
            }
        )
    )
    from_live = gpushare("place", "--kubeconfig", str(cluster.kubeconfig), str(workload), "-o", "json")
    from_files = gpushare("place", "--nodes", str(dump), "--existing", str(dump), str(workload), "-o", "json")
    assert from_live.returncode == from_files.returncode == 0, from_live.stderr + from_files.stderr
    assert json.loads(from_live.stdout)["placements"] == json.loads(from_files.stdout)["placements"]
    # worked by hand (ack, binpack): free per GPU a0=15 a1=9, b0=0 b1=8 b2=5 (b3 unhealthy); live-b is the fuller
    # node, so w-0 takes b1 there; then only live-a holds 7 units: its fullest fitting GPU first (a1, then a0)
    placed = [
        (p["name"], p["node"], [g["index"] for g in p["gpus"]]) for p in json.loads(from_live.stdout)["placements"]
    ]
    assert placed == [("w-0", "live-b", [1]), ("w-1", "live-a", [1]), ("w-2", "live-a", [0]), ("w-3", "live-a", [0])]

    # a user without read access gets one clear line, exit 2
    restricted = cluster.write_kubeconfig("nobody")
    denied = gpushare("inspect", "--kubeconfig", str(restricted))
    assert denied.returncode == 2
    assert "access denied" in denied.stderr and len(denied.stderr.strip().splitlines()) == 1
