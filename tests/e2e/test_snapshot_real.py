"""`gpushare snapshot` against a real API server: paginated lists, trimmed objects, files that `place` reads as it
reads the live cluster; and every way a read fails (refused, another minor, a list cut midway, Ctrl-C) ends in one
line with nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import ControlPlane
from faults import Front
from helpers import as_from_a_terminal
from kube import api, create_node, gpu_node

from gpushare.domain.versions import MINORS

pytestmark = pytest.mark.e2e


def gpushare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpushare", *args], capture_output=True, text=True, timeout=120)


def pod(name: str, mem: int, node: str | None = None, idx: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if idx is not None:
        meta["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": str(idx), "ALIYUN_COM_GPU_MEM_POD": str(mem)}
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"limits": {"aliyun.com/gpu-mem": str(mem)}},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec}


@pytest.fixture(scope="module")
def fleet(cluster: ControlPlane) -> ControlPlane:
    core = api(cluster.kubeconfig)
    create_node(core, *gpu_node("snap-a", 2, 16))
    create_node(core, *gpu_node("snap-b", 4, 8))
    core.create_namespaced_config_map(
        "kube-system", {"metadata": {"name": "unhealthy-gpu-snap-b"}, "data": {"gpus": "3"}}
    )
    core.create_namespaced_config_map("kube-system", {"metadata": {"name": "not-ours"}, "data": {"x": "1"}})
    for i, (node, idx, mem) in enumerate(
        [("snap-a", 0, 6), ("snap-a", 1, 10), ("snap-b", 0, 8), ("snap-b", 1, 3), ("snap-b", 2, 5)]
    ):
        core.create_namespaced_pod("default", pod(f"run{i}", mem, node, idx))
    for i, mem in enumerate([4, 7, 12]):
        core.create_namespaced_pod("default", pod(f"want{i}", mem))
    return cluster


def written(path: Path) -> list[str]:
    """What is in the directory, staging leftovers included (a dot name beside the target)."""
    return sorted(p.name for p in path.iterdir())


def test_a_snapshot_is_the_live_cluster_as_files(fleet: ControlPlane, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    taken = gpushare("snapshot", "--kubeconfig", str(fleet.kubeconfig), "-o", str(out), "--page-size", "2", "--json")
    assert taken.returncode == 0, taken.stderr
    summary = json.loads(taken.stdout)
    assert summary["files"]["existing.json"]["Pod"] == 5 and summary["files"]["pending.json"]["Pod"] == 3
    assert summary["files"]["existing.json"]["ConfigMap"] == 1  # the unhealthy-gpu one only
    assert summary["files"]["nodes.json"]["Node"] == 2 and summary["version"].startswith(f"v1.{fleet.minor}.")
    nodes = json.loads((out / "nodes.json").read_text())["items"]
    assert all("managedFields" not in n["metadata"] for n in nodes) and {n["kind"] for n in nodes} == {"Node"}
    # place reads the files as it reads the cluster
    files = ["--nodes", str(out / "nodes.json"), "--existing", str(out / "existing.json"), str(out / "pending.json")]
    offline = gpushare("place", *files, "-o", "json")
    live = gpushare("place", "--kubeconfig", str(fleet.kubeconfig), str(out / "pending.json"), "-o", "json")
    assert offline.returncode == live.returncode == 0, offline.stderr + live.stderr
    for key in ("placements", "pending"):
        assert json.loads(offline.stdout)[key] == json.loads(live.stdout)[key]
    # taken again over an unchanged snapshot: written; over a user's directory: refused, one line
    assert gpushare("snapshot", "--kubeconfig", str(fleet.kubeconfig), "-o", str(out), "-q").returncode == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    refused = gpushare("snapshot", "--kubeconfig", str(fleet.kubeconfig), "-o", str(mine))
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1 and written(mine) == ["notes.txt"]


@pytest.mark.parametrize("fault", ["denied", "expired", "unreachable", "minor", "cut"])
def test_a_failed_read_is_one_line_and_writes_nothing(fleet: ControlPlane, tmp_path: Path, fault: str) -> None:
    kubeconfig, extra, front = fleet.kubeconfig, [], None
    other = fleet.minor - 1 if fleet.minor > MINORS[0] else fleet.minor + 1  # a minor gpushare knows, not this one
    if fault == "denied":  # a user the cluster knows and grants nothing
        kubeconfig = fleet.write_kubeconfig("nobody")
    elif fault in ("expired", "unreachable"):  # a token the server no longer takes (401); a port nothing serves
        config = yaml.safe_load(fleet.kubeconfig.read_text())
        if fault == "expired":
            config["users"][0]["user"] = {"token": "revoked.or.expired"}
        else:
            config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
        kubeconfig = tmp_path / f"{fault}.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
    elif fault == "minor":
        extra = ["--kube-version", f"1.{other}"]
    else:
        front = Front(fleet, on_continue="drop")
        kubeconfig = front.start()
    try:
        out = tmp_path / "snap"
        failed = gpushare("snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out), "--page-size", "2", *extra)
    finally:
        if front is not None:
            front.stop()
    assert failed.returncode == 2, failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    said = {
        "denied": "access denied",
        "expired": "access denied",
        "unreachable": "cluster unreachable",
        "minor": f"not 1.{other}",
        "cut": "cut midway",
    }[fault]
    assert said in failed.stderr
    assert [name for name in written(tmp_path) if not name.endswith(".kubeconfig")] == []  # nor a staging leftover
    if front is not None:
        assert any("continue=" in path for path in front.seen)  # it did reach a second page


def test_ctrl_c_midway_leaves_nothing(fleet: ControlPlane, tmp_path: Path) -> None:
    front = Front(fleet, on_continue="hold", hold=20)
    kubeconfig = front.start()
    try:
        out = tmp_path / "snap"
        args = [sys.executable, "-m", "gpushare", "snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]
        proc = subprocess.Popen(
            [*args, "--page-size", "2"], stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal
        )
        deadline = time.monotonic() + 60
        while not any("continue=" in p for p in front.seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert any("continue=" in p for p in front.seen), "the snapshot never asked for a second page"
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        front.stop()
    assert proc.returncode == 130 and err.strip() == "gpushare: interrupted"
    assert written(tmp_path) == []
