"""`gpushare place` and `gpushare inspect` from the command line, on small hand-checked fleets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import REPO
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gpushare.cli import main

_REPORT = json.loads((REPO / "schemas" / "placement-report.schema.json").read_text())
REPORT = Draft202012Validator(_REPORT)
# the comparison refers to the report's semantics and summary: resolved from the schema files themselves
COMPARISON = Draft202012Validator(
    json.loads((REPO / "schemas" / "placement-comparison.schema.json").read_text()),
    registry=Registry().with_resource(_REPORT["$id"], Resource.from_contents(_REPORT)),
)


def node(name: str, gpus: int, per_gpu: int, mode: str | None = "share", ip: str = "10.0.0.1") -> dict:
    capacity = {
        "aliyun.com/gpu-mem": str(gpus * per_gpu),
        "aliyun.com/gpu-count": str(gpus),
        "cpu": "32",
        "memory": "128Gi",
        "pods": "110",
    }
    if mode == "core_mem":  # as ACK's device plugin reports a core_mem node (GN303)
        capacity["aliyun.com/gpu-core.percentage"] = str(100 * gpus)
    labels = {"ack.node.gpu.schedule": mode} if mode else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": capacity, "addresses": [{"type": "InternalIP", "address": ip}]},
    }


def pod(name: str, mem: object, core: int | None = None, scheduler: str | None = None) -> dict:
    limits: dict[str, object] = {"aliyun.com/gpu-mem": mem}
    if core is not None:
        limits["aliyun.com/gpu-core.percentage"] = core
    spec: dict[str, object] = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    nodes = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [node("a", 2, 15, ip="192.168.0.71"), node("b", 1, 15, ip="192.168.0.72")],
    }
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "old",
            "namespace": "ml",
            "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "6"},
        },
        "spec": {"nodeName": "a", "containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 6}}}]},
        "status": {"phase": "Running"},
    }
    (tmp_path / "running.yaml").write_text(yaml.safe_dump(running))
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "infer", "namespace": "ml"},
        "spec": {
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 5}}}]}},
        },
    }
    docs = [deploy, pod("big", 16)]
    (tmp_path / "work.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_report(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "place",
        "--nodes",
        str(fleet / "nodes.yaml"),
        "--existing",
        str(fleet / "running.yaml"),
        str(fleet / "work.yaml"),
        "-o",
        "json",
    )
    assert code == 1  # big asks 16 on one GPU, the fleet's hold 15: GW207
    report = json.loads(out)
    assert not list(REPORT.iter_errors(report))
    # binpack: GPU1 of node a already holds 6 of 15, so the first replica fits there best (9 left >= 5);
    # the next two no longer fit its 4 and fill GPU0
    assert [(p["name"], p["node"], p["gpus"]) for p in report["placements"]] == [
        ("infer-0", "a", [{"index": 1, "units": 5}]),
        ("infer-1", "a", [{"index": 0, "units": 5}]),
        ("infer-2", "a", [{"index": 0, "units": 5}]),
    ]
    (big,) = report["pending"]
    assert big["name"] == "big" and big["reasons"] == [{"reason": "Insufficient aliyun.com/gpu-mem", "nodes": 2}]
    assert big["message"] == "0/2 nodes are available: 2 Insufficient aliyun.com/gpu-mem."
    # what is left on a's partly used GPUs is below the 16 still pending; b's untouched GPU is not fragmented
    assert report["summary"]["fragmentation"] == 5 + 4


def test_upstream_reason_is_the_extenders(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = [pod(name, mem, scheduler="gpushare-scheduler") for name, mem in (("p", 14), ("r", 10), ("r2", 10))]
    (fleet / "w.yaml").write_text(yaml.safe_dump_all(pods))
    code, out, _ = run(
        capsys,
        "place",
        "--semantics",
        "upstream",
        "--nodes",
        str(fleet / "nodes.yaml"),
        "--existing",
        str(fleet / "running.yaml"),
        str(fleet / "w.yaml"),
        "-o",
        "json",
    )
    report = json.loads(out)
    assert code == 0 and [p["node"] for p in report["placements"]] == ["a", "b"]
    # node a has 30 - 6 - 14 = 10 units left in total but only 1 and 9 per GPU: the extender's reason;
    # node b has 5 left after r: kube-scheduler's own resource check
    assert report["pending"][0]["message"] == (
        "0/2 nodes are available: 1 Insufficient GPU Memory in one device, 1 Insufficient aliyun.com/gpu-mem. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for "
        "incoming pod."
    )


def test_gpu_pods_of_another_scheduler_are_not_served(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Behind a secondary scheduler a GPU pod without its schedulerName bypasses the extender (GW214)."""
    cpu_only = {**pod("web", 0), "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    docs = [pod("mine", 4, scheduler="gpushare-scheduler"), pod("stray", 4), cpu_only]
    (fleet / "w.yaml").write_text(yaml.safe_dump_all(docs))
    args = ["place", "--semantics", "upstream", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "w.yaml")]
    code, out, _ = run(capsys, *args, "-o", "json")
    report = json.loads(out)
    assert code == 0 and not list(REPORT.iter_errors(report))
    assert report["semantics"]["schedulerName"] == "gpushare-scheduler"
    assert sorted(p["name"] for p in report["placements"]) == ["mine", "web"]  # a pod without GPUs is placed anyway
    (stray,) = report["notServed"]
    assert stray["name"] == "stray" and stray["schedulerName"] == "default-scheduler" and "GW214" in stray["reason"]
    assert report["summary"]["notServed"] == 1
    _, text, _ = run(capsys, *args)
    assert "NOT SERVED BY GPUSHARE (spec.schedulerName is not gpushare-scheduler)" in text
    assert any(line.startswith("placed 2, pending 0, invalid 0, not served 1;") for line in text.splitlines())
    # naming the scheduler the pods use serves them; ack's default is the managed default-scheduler
    _, out, _ = run(capsys, *args, "--scheduler-name", "default-scheduler", "-o", "json")
    assert sorted(p["name"] for p in json.loads(out)["placements"]) == ["stray", "web"]
    _, out, _ = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "w.yaml"), "-o", "json")
    assert [p["name"] for p in json.loads(out)["notServed"]] == ["mine"]
    with pytest.raises(SystemExit) as usage:  # '' is a slip, not "serve every pod": argparse's exit 2
        main([*args, "--scheduler-name", ""])
    out, err = capsys.readouterr()
    assert usage.value.code == 2 and not out
    assert err.startswith("gpushare: error: argument --scheduler-name: '' is not")


def test_128mib_units_are_refused_on_core_mem_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rule validate reports on the nodes (GN309) refuses the dry run: one line naming every core_mem node."""
    nodes = [node("a", 1, 16, mode="core_mem"), node("s", 1, 16), node("b", 1, 16, mode="core_mem")]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(pod("p", 4)))
    args = ["place", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "w.yaml")]
    code, out, err = run(capsys, *args, "--gpu-memory-unit", "128MiB")
    assert code == 2 and not out
    assert err == (
        "gpushare: error: --gpu-memory-unit: '128MiB' is not allowed; expected 1GiB: 128MiB units are not "
        "supported on core_mem nodes (a, b) [GN309]\n"
    )
    assert run(capsys, *args)[0] == 0
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(nodes[1]))
    assert run(capsys, *args, "--gpu-memory-unit", "128MiB")[0] == 0


def test_inspect_view(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "inspect", "--nodes", str(fleet / "nodes.yaml"), "--existing", str(fleet / "running.yaml")
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "IPADDRESS",
        "GPU0(Allocated/Total)",
        "GPU1(Allocated/Total)",
        "GPU",
        "Memory(GiB)",
        "Free(Largest)",
    ]
    assert lines[1].split() == ["a", "192.168.0.71", "0/15", "6/15", "6/30", "24(15)"]
    assert lines[-3:] == [
        "Allocated/Total GPU Memory In Cluster:",
        "6/45 (13%)",
        "Free GPU Memory In Cluster: 39, at most 15 on one GPU",
    ]


def test_inspect_shows_compute_on_core_mem_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Like `kubectl inspect cgpu`: each GPU's compute allocated/total where the node allocates compute."""
    core = node("c", 2, 15, mode="core_mem", ip="10.0.0.9")
    core["status"]["capacity"]["aliyun.com/gpu-core.percentage"] = "200"
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([core, node("s", 1, 15, ip="10.0.0.8")]))
    running = pod("p", 4, core=30)
    running["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "0"}
    running["spec"]["nodeName"] = "c"
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([running]))
    code, out, _ = run(
        capsys, "inspect", "--nodes", str(tmp_path / "nodes.yaml"), "--existing", str(tmp_path / "pods.yaml")
    )
    assert code == 0
    lines = [line.split() for line in out.splitlines()]
    assert out.splitlines()[0].split("GPU Memory(GiB)")[1].split() == [
        "GPU0",
        "Compute(%)",
        "GPU1",
        "Compute(%)",
        "GPU",
        "Compute(%)",
        "Free(Largest)",
    ]
    rows = {line[0]: line for line in lines[1:3]}
    assert rows["c"][-4:-1] == ["30/100", "0/100", "30/200"]
    assert rows["s"][-2] == "-"


def test_fragmentation_counts_partly_used_gpus_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Left on a used GPU below the smallest pending request is fragmented; an empty GPU too small is not."""
    nodes = [node("big", 1, 16), node("small", 1, 4)]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod("a", 13), pod("b", 6)]))
    code, out, _ = run(
        capsys, "place", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "pods.yaml"), "-o", "json"
    )
    report = json.loads(out)
    assert code == 0 and [p["name"] for p in report["pending"]] == ["b"]
    assert report["summary"]["fragmentation"] == 3  # big's 3 left; small's untouched 4 is not counted


def test_invalid_pods_exit_1_and_the_run_goes_on(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = [pod("core7", 2, core=7), pod("neg", -1), pod("frac", "1.5"), pod("ok", 1)]
    bad.append(
        {**pod("split", 5), "metadata": {"name": "split", "namespace": "ml", "labels": {"aliyun.com/gpu-count": "2"}}}
    )
    (fleet / "bad.yaml").write_text(yaml.safe_dump_all(bad))
    code, out, _ = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "bad.yaml"), "-o", "json")
    report = json.loads(out)
    assert code == 1
    reasons = {i["name"]: i["reason"] for i in report["invalid"]}
    assert set(reasons) == {"core7", "neg", "frac", "split"}
    assert "multiple of 5" in reasons["core7"] and "negative" in reasons["neg"]
    # the same rule IDs `gpushare validate` reports
    assert {name: reason.rsplit("[", 1)[1] for name, reason in reasons.items()} == {
        "core7": "GW202]",
        "neg": "GW201]",
        "frac": "GW201]",
        "split": "GW204]",
    }
    # each at its own document's first line
    text = (fleet / "bad.yaml").read_text().splitlines()
    for invalid in report["invalid"]:
        file, line = invalid["source"].rsplit(":", 1)
        assert file == str(fleet / "bad.yaml")
        assert text[int(line) - 1].startswith(("apiVersion", "kind", "metadata", "spec"))
        assert int(line) == 1 or text[int(line) - 2] == "---"
    assert [p["name"] for p in report["placements"]] == ["ok"]


def test_unreadable_yaml_names_file_and_line(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\n---\nkind: Pod\nmetadata: {name: [x\n")
    code, out, err = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "broken.yaml"))
    assert code == 2 and out == ""
    assert f"{fleet / 'broken.yaml'}:6" in err
    assert len(err.strip().splitlines()) == 1


def test_node_order_replay(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "order.txt").write_text("# from the real scheduler\nml/infer-0 b\nml/infer-1 b\nml/infer-2 b\n")
    replay = [
        "place",
        "--nodes",
        str(fleet / "nodes.yaml"),
        str(fleet / "work.yaml"),
        "--node-order",
        str(fleet / "order.txt"),
    ]
    code, out, _ = run(capsys, *replay, "-o", "json")
    report = json.loads(out)
    assert [(p["name"], p["node"]) for p in report["placements"]] == [
        ("infer-0", "b"),
        ("infer-1", "b"),
        ("infer-2", "b"),
    ]
    (fleet / "order.txt").write_text("ml/infer-0\n")
    code, _, err = run(capsys, *replay)
    assert code == 2 and "order.txt:1" in err


def test_compare_side_by_side(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    placements = [
        "place",
        "--nodes",
        str(fleet / "nodes.yaml"),
        str(fleet / "work.yaml"),
        "--compare",
        "placement=binpack,spread",
    ]
    code, out, _ = run(capsys, *placements, "--compare", "scheduling-unit=1GiB,128MiB", "-o", "json")
    doc = json.loads(out)
    assert code == 1 and not list(COMPARISON.iter_errors(doc))
    by = {v["variant"]: v["summary"] for v in doc["variants"]}
    assert set(by) == {
        "placement=binpack,scheduling-unit=1GiB",
        "placement=binpack,scheduling-unit=128MiB",
        "placement=spread,scheduling-unit=1GiB",
        "placement=spread,scheduling-unit=128MiB",
    }
    assert by["placement=binpack,scheduling-unit=1GiB"]["gpusTouched"] == 1
    assert by["placement=spread,scheduling-unit=1GiB"]["gpusTouched"] == 3
    # in 128 MiB units a 15 GiB GPU is 120 units and the 16 GiB pod asks 128: still pending
    assert by["placement=binpack,scheduling-unit=128MiB"]["gpuMemory"]["total"] == 3 * 120
    assert doc["convertedFrom"] == "1GiB"
    code, _, err = run(capsys, *placements, "--compare", "gpu-memory-unit=1GiB,128MiB")
    assert code == 2 and "scheduling-unit=1GiB,128MiB to compare the unit the cluster schedules in" in err
    code, out, _ = run(capsys, *placements, "--compare", "scheduling-unit=1GiB,128MiB")
    assert "the files' numbers are in 1GiB (--gpu-memory-unit); each variant converts them" in out
    code, out, _ = run(capsys, *placements)
    assert code == 1 and out.splitlines()[0].split()[:3] == ["VARIANT", "PLACED", "PENDING"]
    assert "--gpu-memory-unit" not in out  # nothing converted, nothing said
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["placement=spread"][4] == "3/3"  # GPUS TOUCHED, as in the JSON (unit 1GiB)
    code, _, err = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), "--compare", "colour=red")
    assert code == 2 and "--compare" in err


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot(fleet: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    target = fleet / f"p.{suffix}"
    code, out, err = run(
        capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "work.yaml"), "--plot", str(target)
    )
    assert (
        code == 1
        and re.fullmatch(rf"gpushare: wrote {re.escape(str(target))} \(\d+ GPU nodes\)\n", err)
        and "placed" in out
    )
    data = target.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in data[:500]


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_never_overwrites_a_file_gpushare_did_not_write(
    fleet: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    """A picture gpushare wrote is replaced by the next run; a user's file, or a picture edited since, is refused
    before any work: one line naming --plot, exit 2, nothing printed, the file as it was."""
    import xml.etree.ElementTree as ET

    import matplotlib.image

    target = fleet / f"p.{suffix}"
    args = ["place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "work.yaml"), "--plot", str(target)]
    assert run(capsys, *args)[0] == 1  # big's GW207
    first = target.read_bytes()
    if suffix == "png":  # still a picture every reader takes, with the seal among its chunks
        assert matplotlib.image.imread(target).shape[2] == 4
    else:
        assert ET.fromstring(first).tag.endswith("svg")
    assert run(capsys, *args)[0] == 1  # its own picture: written again
    for mine in (b"my picture", first[:-20] + b"edited" + first[-20:]):
        target.write_bytes(mine)
        code, out, err = run(capsys, *args)
        assert (code, out) == (2, "") and err.count("\n") == 1 and "--plot" in err and str(target) in err
        assert target.read_bytes() == mine
        assert sorted(p.name for p in fleet.iterdir() if p.name.startswith(".p.")) == []  # no temporary left


def test_plot_tells_running_from_new_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Memory held before the run and memory the run placed are drawn apart, and a legend says which is which."""
    from gpushare.placement import plot

    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "1"}
    (tmp_path / "n.yaml").write_text(
        yaml.safe_dump({"kind": "Node", "metadata": {"name": "n0"}, "status": {"capacity": capacity}})
    )
    limits = {"limits": {"aliyun.com/gpu-mem": 4}}
    old = {
        "kind": "Pod",
        "metadata": {"name": "old", "namespace": "ml", "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "0"}},
        "spec": {"nodeName": "n0", "containers": [{"name": "c", "resources": limits}]},
        "status": {"phase": "Running"},
    }
    new = {
        "kind": "Pod",
        "metadata": {"name": "new", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": limits}]},
    }
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump(new))
    target = tmp_path / "p.svg"
    args = ["place", "--nodes", str(tmp_path / "n.yaml"), "--existing", str(tmp_path / "old.yaml")]
    assert run(capsys, *args, str(tmp_path / "new.yaml"), "--plot", str(target))[0] == 0
    svg = target.read_text()
    assert "running before (--existing)" in svg and "placed by this dry run" in svg and "8/16" in svg
    colours = (plot.RUNNING.lstrip("#"), plot.NEW.lstrip("#"))
    assert all(svg.count(colour) >= 2 for colour in colours)  # in the legend and in the cell, both parts


def test_node_without_gpus_is_not_a_gpu_node(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cpu_only = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "cpu"},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    (fleet / "cpu.yaml").write_text(yaml.safe_dump(cpu_only))
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }
    (fleet / "web.yaml").write_text(yaml.safe_dump_all([plain, pod("g", 1)]))
    code, out, _ = run(capsys, "place", "--nodes", str(fleet / "cpu.yaml"), str(fleet / "web.yaml"), "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["placements"][0]["node"] == "cpu" and report["placements"][0]["gpus"] == []
    assert report["pending"][0]["reasons"] == [{"reason": "Insufficient aliyun.com/gpu-mem", "nodes": 1}]
    assert report["summary"]["gpuNodes"] == 0
    assert [(f["rule"], f["object"]) for f in report["findings"]] == [("GW207", "Pod/ml/g")]  # no GPU at all


def test_unreachable_cluster_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [
                    {"name": "x", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
                ],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    code, out, err = run(capsys, "inspect", "--kubeconfig", str(kubeconfig))
    assert code == 2 and out == ""
    assert "cluster unreachable" in err and len(err.strip().splitlines()) == 1


def test_explain_gives_every_nodes_reason(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "work.yaml"), "--explain", "-o", "json"
    )
    report = json.loads(out)
    assert code == 1 and not list(REPORT.iter_errors(report))
    (big,) = report["pending"]
    assert big["byNode"] == [
        {"node": "a", "plugin": "NodeResourcesFit", "reason": "Insufficient aliyun.com/gpu-mem"},
        {"node": "b", "plugin": "NodeResourcesFit", "reason": "Insufficient aliyun.com/gpu-mem"},
    ]


def test_a_pod_without_gpu_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "2"}
    (tmp_path / "nodes.yaml").write_text(
        yaml.safe_dump({"kind": "Node", "metadata": {"name": "n0"}, "status": {"capacity": capacity}})
    )
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    web = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"containers": [container]},
    }
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(web))
    code, out, _ = run(capsys, "place", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "web.yaml"))
    (row,) = [line for line in out.splitlines() if line.startswith("ml/web")]
    assert code == 0 and row.split()[1:4] == ["n0", "no", "GPU"]


def test_the_command_flushes_its_output_and_ends_quietly_when_the_reader_goes_away(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gpushare` ends its process at once after the command (`cli.entry`): its output must be whole before that,
    short (left in the stream's buffer) or long, and a reader that stops early (`| head`) gets no traceback."""
    (tmp_path / "nodes.json").write_text(json.dumps(node("a", 1, 15)))
    short = ["validate", str(tmp_path / "nodes.json")]
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as a user's shell has it
    said = subprocess.run(
        [sys.executable, "-m", "gpushare", *short], capture_output=True, text=True, check=True, env=buffered
    )
    assert said.stdout == run(capsys, *short)[1] != ""
    pods = {"apiVersion": "v1", "kind": "List", "items": [pod(f"p{i}", 4) for i in range(3000)]}
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    args = ["place", "--nodes", str(tmp_path / "nodes.json"), str(tmp_path / "pods.json"), "-o", "json", "-q"]
    command = [sys.executable, "-m", "gpushare", *args]
    whole = subprocess.run(command, capture_output=True, text=True, check=True, env=buffered)
    _, expected, _ = run(capsys, *args)
    assert len(whole.stdout) > 1 << 18 and json.loads(whole.stdout) == json.loads(expected)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=buffered)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(64)
    process.stdout.close()
    assert process.wait(timeout=60) == 0 and process.stderr.read() == b""


def test_preemption_in_the_report_the_table_and_explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A high-priority pod deletes the low one filling the only GPU: `preempted` in JSON (valid against the schema),
    the PREEMPTED section and column in the table; a pod that never preempts stays pending, and --explain prints
    each node's PostFilter answer."""
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        | ({"preemptionPolicy": "Never"} if n == "never" else {})
        for n, v in (("low", 1), ("high", 100), ("never", 100))
    ]
    low = pod("low", 15, scheduler="gpushare-scheduler")
    low["spec"] |= {"nodeName": "b", "priorityClassName": "low"}
    high, never = pod("high", 15, scheduler="gpushare-scheduler"), pod("never", 15, scheduler="gpushare-scheduler")
    high["spec"]["priorityClassName"], never["spec"]["priorityClassName"] = "high", "never"
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("b", 1, 15)))
    (tmp_path / "running.yaml").write_text(yaml.safe_dump_all([*classes, low]))
    (tmp_path / "w.yaml").write_text(yaml.safe_dump_all([high, never]))
    args = ["place", "--semantics", "upstream", "--kube-version", "1.28", "--nodes", str(tmp_path / "nodes.yaml")]
    args += ["--existing", str(tmp_path / "running.yaml"), str(tmp_path / "w.yaml")]
    code, out, _ = run(capsys, *args, "-o", "json")
    report = json.loads(out)
    REPORT.validate(report)
    assert code == 0 and report["summary"]["preempted"] == 1
    assert report["preempted"] == [
        {"namespace": "ml", "name": "low", "node": "b", "by": "ml/high", "priority": 1, "tiedWith": 1}
    ]
    assert report["pending"][0]["message"].endswith("preemption: not eligible due to preemptionPolicy=Never..")
    code, out, _ = run(capsys, *args, "--explain")
    assert "PREEMPTED (deleted by kube-scheduler to make room)" in out and "ml/low  b     1         ml/high" in out
    assert "    b: PostFilter DefaultPreemption: " not in out  # Never: no node is asked
    assert "preempted 1" in out
    # a pod of the same priority as everything running: each node's answer, in --explain
    (tmp_path / "w.yaml").write_text(
        yaml.safe_dump_all([high, {**high, "metadata": {"name": "twin", "namespace": "ml"}}])
    )
    code, out, _ = run(capsys, *args, "--explain")
    assert "    b: PostFilter DefaultPreemption: No preemption victims found for incoming pod" in out


def test_host_ports_read_from_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The file reader keeps what NodePorts reads (containers' ports): two pods on one host port cannot share a
    node."""
    pods = [pod(n, 1, scheduler="gpushare-scheduler") for n in ("first", "second")]
    for p in pods:
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("b", 1, 15)))
    (tmp_path / "w.yaml").write_text(yaml.safe_dump_all(pods))
    args = ["place", "--semantics", "upstream", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "w.yaml")]
    code, out, _ = run(capsys, *args, "-o", "json")
    (pending,) = json.loads(out)["pending"]
    assert code == 0 and pending["reasons"] == [
        {"reason": "node(s) didn't have free ports for the requested pod ports", "nodes": 1}
    ]


def _large_fleet(tmp_path: Path, count: int = 300) -> Path:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i:03d}", "labels": {"gpushare": "true"}},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
        for i in range(count)
    ]
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(nodes))
    return path


def test_the_search_on_a_large_fleet_and_percentage_of_nodes_to_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """300 nodes: kube-scheduler filters until 144 fit (the summary says so) and the pod may go to any of several
    nodes; with --percentage-of-nodes-to-score 100 it scores every node, and the report says which it modelled."""
    nodes = _large_fleet(tmp_path)
    work = tmp_path / "work.yaml"
    work.write_text(yaml.safe_dump(pod("p", 2, scheduler="gpushare-scheduler")))
    base = ["place", "--semantics", "upstream", "--gpu-memory-unit", "GiB", "--nodes", str(nodes), str(work)]
    code, out, _ = run(capsys, *base)
    assert code == 0 and "300 nodes: kube-scheduler stops filtering once 144 nodes fit" in out
    code, out, _ = run(capsys, *base, "-o", "json")
    report = json.loads(out)
    assert not list(REPORT.iter_errors(report))
    assert report["placements"][0]["tiedWith"] > 1
    assert report["semantics"]["scheduler"]["percentageOfNodesToScore"] == 0
    code, out, _ = run(capsys, *base, "--percentage-of-nodes-to-score", "100", "-o", "json")
    report = json.loads(out)
    assert report["semantics"]["scheduler"]["percentageOfNodesToScore"] == 100
    assert report["placements"][0]["tiedWith"] == 300  # every node scored, all alike


@pytest.mark.parametrize("value", ["101", "-1", "half"])
def test_a_bad_percentage_of_nodes_to_score_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    nodes = _large_fleet(tmp_path, 2)
    with pytest.raises(SystemExit) as exited:
        main(["place", "--nodes", str(nodes), "--percentage-of-nodes-to-score", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--percentage-of-nodes-to-score" in err and "0 to 100" in err


def test_compare_counts_the_pods_a_variant_does_not_serve(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Comparing semantics compares schedulers too: the pods one variant leaves to another scheduler are a column
    of their own (with the JSON's notServed), not missing from every count."""
    compared = ["place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "work.yaml"), "--compare"]
    code, out, _ = run(capsys, *compared, "semantics=ack,upstream", "-o", "json")
    by = {v["variant"]: v["summary"] for v in json.loads(out)["variants"]}
    assert by["semantics=ack"]["notServed"] == 0 and by["semantics=upstream"]["notServed"] > 0
    code, out, _ = run(capsys, *compared, "semantics=ack,upstream")
    lines = out.splitlines()
    assert code == 1 and lines[0].split()[:6] == ["VARIANT", "PLACED", "PENDING", "INVALID", "NOT", "SERVED"]
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    assert rows["semantics=upstream"][4] == str(by["semantics=upstream"]["notServed"])
    assert rows["semantics=ack"][4] == "0"
    code, out, _ = run(capsys, *compared, "placement=binpack,spread")
    assert "NOT SERVED" not in out  # nothing left to another scheduler, no column


def test_place_as_inspect_says_what_did_not_land(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`place -o inspect` draws where pods landed; pods left pending or to another scheduler are counted under it,
    not dropped; `inspect` of running pods alone ends as kubectl's does."""
    base = ["place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "work.yaml")]
    summary = json.loads(run(capsys, *base, "-o", "json")[1])["summary"]
    assert summary["pending"] and summary["notServed"] == 0
    code, out, _ = run(capsys, *base, "-o", "inspect")
    assert (
        code == 1
        and out.splitlines()[-1] == f"Not placed: {summary['pending']} pending (-o table lists each with its reason)"
    )
    code, out, _ = run(capsys, *base, "--semantics", "upstream", "-o", "inspect")
    assert re.search(r"^Not placed: .*\d+ not served", out, re.M)
    code, out, _ = run(capsys, "inspect", "--nodes", str(fleet / "nodes.yaml"))
    assert "Not placed" not in out


def test_inspect_offers_only_what_it_uses(capsys: pytest.CaptureFixture[str]) -> None:
    """inspect charges running pods: how new pods would be scheduled (placement, the kube-scheduler modelled, its
    sampling, cGPU admission) is place's, neither listed by `inspect --help` nor taken."""
    with pytest.raises(SystemExit):
        main(["inspect", "--help"])
    shown = capsys.readouterr().out
    place_only = ("--placement", "--kube-version", "--scheduler-config-api", "--percentage-of-nodes-to-score")
    assert "--nodes" in shown and not [flag for flag in (*place_only, "--cgpu-max-pods-per-gpu") if flag in shown]
    with pytest.raises(SystemExit) as exited:
        main(["inspect", "--nodes", "n.yaml", "--placement", "spread"])
    assert exited.value.code == 2


def test_plot_without_matplotlib_says_how_to_get_it(
    fleet: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without matplotlib, --plot is refused before any work, in a line that says what to install."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    target = fleet / "p.png"
    code, out, err = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), "--plot", str(target))
    said = "gpushare: error: --plot needs matplotlib, which is not installed: pip install 'gpushare[plot]'\n"
    assert (code, out, err) == (2, "", said) and not target.exists()
