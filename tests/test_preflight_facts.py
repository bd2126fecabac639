"""What preflight makes of what it read: the installed unit from any witness, helm release values, checks it could
not make, cluster age. The live reads themselves run against a real API server in tests/e2e/test_preflight.py."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from gpushare.domain.products import INSTALLER_CHART
from gpushare.kube.documents import Source
from gpushare.kube.installed import UnitReading, daemonset_units, helm_release, node_unit, node_units
from gpushare.kube.nodes import read_node
from gpushare.policy.preflight import ClusterReading, preflight
from gpushare.policy.report import to_dict, to_text

SETTINGS = {"apiVersion": "gpushare.io/v1alpha1", "kind": "InstallerSettings"}


def gpu_node(name: str, gpus: int, per_gpu: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    capacity = {"aliyun.com/gpu-mem": str(gpus * per_gpu), "aliyun.com/gpu-count": str(gpus)}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"capacity": capacity, "nodeInfo": {"containerRuntimeVersion": "containerd://1.7.13"}},
    }


def info(obj: dict[str, Any]) -> Any:
    return read_node(Source(obj, "test"))


@pytest.mark.parametrize(
    ("gpus", "per_gpu", "labels", "unit"),
    [
        (2, 15, {}, "GiB"),  # a 16 GB V100 in GiB: below 32 only GiB is possible
        (1, 16160, {}, "MiB"),
        (4, 126, {}, None),  # GiB of a 141 GB GPU or 128MiB of a 16 GB one: the numbers cannot tell
        (4, 126, {"aliyun.accelerator/nvidia_mem": "16160MiB"}, "128MiB"),
        (4, 126, {"nvidia.com/gpu.memory": "129024"}, "GiB"),
        (1, 22, {"aliyun.accelerator/nvidia_mem": "23028MiB"}, "GiB"),
        (1, 179, {"aliyun.accelerator/nvidia_mem": "23028MiB"}, "128MiB"),
        (1, 500, {"aliyun.accelerator/nvidia_mem": "23028MiB"}, None),  # matches no unit
    ],
)
def test_a_nodes_unit_from_its_numbers(gpus: int, per_gpu: int, labels: dict[str, str], unit: str | None) -> None:
    assert node_unit(info(gpu_node("n", gpus, per_gpu, labels))) == unit


def test_node_readings_name_the_nodes_and_the_undecided() -> None:
    nodes = [info(gpu_node(f"g{i}", 1, 15)) for i in range(5)] + [info(gpu_node("odd", 1, 100))]
    readings, undecided = node_units(nodes)
    assert readings == [UnitReading("GiB", "aliyun.com/gpu-mem capacity of nodes g0, g1, g2 and 2 more")]
    assert undecided == ["odd"]


def test_device_plugins_whatever_their_names() -> None:
    def ds(name: str, args: list[str]) -> dict[str, Any]:
        containers = [{"name": "c", "command": ["plugin"], "args": args}]
        return {
            "metadata": {"name": name, "namespace": "gpu"},
            "spec": {"template": {"spec": {"containers": containers}}},
        }

    found = daemonset_units(
        [ds("my-plugin", ["--memory-unit=MiB"]), ds("other", ["-v=2"]), ds("p2", ["--memory-unit=GiB"])]
    )
    assert found == [UnitReading("MiB", "DaemonSet gpu/my-plugin"), UnitReading("GiB", "DaemonSet gpu/p2")]
    assert found[1].mib == UnitReading("1GiB", "x").mib == 1024  # GiB and 1GiB: one unit


def release_secret(chart: str, defaults: dict[str, Any], config: dict[str, Any], zipped: bool = True) -> dict[str, Any]:
    """A Secret as helm 3 writes it: the release JSON, gzip'd, base64'd, in the Secret's own base64."""
    release = {
        "name": "gpu",
        "namespace": "kube-system",
        "chart": {"metadata": {"name": chart, "version": "1.2.0+gpushare.0.9.0"}, "values": defaults},
        "config": config,
    }
    payload = json.dumps(release).encode()
    inner = base64.b64encode(gzip.compress(payload) if zipped else payload)
    return {"kind": "Secret", "data": {"release": base64.b64encode(inner).decode()}}


def test_helm_release_values_are_the_defaults_with_the_overrides() -> None:
    defaults = {"gpuMemoryUnit": "1GiB", "scheduler": {"mode": "managed", "name": "gpushare-scheduler"}}
    release = helm_release(
        release_secret(INSTALLER_CHART, defaults, {"gpuMemoryUnit": "128MiB", "scheduler": {"mode": "secondary"}})
    )
    assert release is not None
    assert release.unit == UnitReading(
        "128MiB", "helm release kube-system/gpu (ack-ai-installer 1.2.0+gpushare.0.9.0) values"
    )
    assert release.chart_version == "1.2.0+gpushare.0.9.0" and release.scheduler_name == "gpushare-scheduler"
    plain = helm_release(release_secret(INSTALLER_CHART, defaults, {}, zipped=False))
    assert plain is not None and plain.scheduler_name == "default-scheduler" and plain.unit.unit == "1GiB"  # type: ignore[union-attr]
    assert helm_release(release_secret("nginx", defaults, {})) is None
    assert helm_release({"data": {"release": "not base64!"}}) is None


def holder(name: str, scheduler: str | None = None) -> Source:
    spec: dict[str, Any] = {
        "nodeName": "a",
        "containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 2}}}],
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    pod = {"kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec, "status": {"phase": "Running"}}
    return Source(pod, f"cluster:Pod/{name}")


def test_unit_switch_is_seen_by_any_witness() -> None:
    settings = {
        **SETTINGS,
        "gpuMemoryUnit": "128MiB",
        "devicePlugin": {"image": {"repository": "acs/ack-plugin", "tag": "1"}},
    }
    nodes = [gpu_node("a", 2, 15)]
    reading = ClusterReading("v1.28.3", nodes=nodes, gpu_pods=[holder("p")], units=[UnitReading("GiB", "nodes a")])
    (switch,) = [f for f in preflight(settings, reading).findings if f.rule.id == "GC411"]
    assert "GiB (nodes a)" in switch.allowed and "ml/p" in switch.allowed
    # the same unit spelt the other way is no switch; no pods holding memory, no switch either
    same = ClusterReading("v1.28.3", nodes=nodes, gpu_pods=[holder("p")], units=[UnitReading("GiB", "nodes a")])
    assert "GC411" not in {f.rule.id for f in preflight(SETTINGS, same).findings}
    idle = ClusterReading("v1.28.3", nodes=nodes, units=[UnitReading("GiB", "nodes a")])
    assert "GC411" not in {f.rule.id for f in preflight(settings, idle).findings}


def test_running_gpu_pods_that_bypass_the_extender() -> None:
    settings = {**SETTINGS, "profile": "open-source"}  # secondary gpushare-scheduler
    reading = ClusterReading(
        "v1.28.3", nodes=[gpu_node("a", 2, 15)], gpu_pods=[holder("stray"), holder("ok", "gpushare-scheduler")]
    )
    report = preflight(settings, reading)
    bypass = [f for f in report.findings if f.rule.id == "GW214"]
    assert [(f.subject, f.value) for f in bypass] == [("Pod/ml/stray", "default-scheduler")]
    # the open-source stack: each GPU node's runtime and what to configure for it
    (runtime,) = [f for f in report.findings if f.rule.id == "GN310"]
    assert runtime.value == "containerd://1.7.13" and "default_runtime_name" in runtime.allowed


def test_what_preflight_could_not_check_is_said() -> None:
    compute = {**SETTINGS, "isolation": ["core_mem"], "computeAllocation": True, "region": "cn-beijing"}
    reading = ClusterReading(
        "v1.28.3",
        nodes=[gpu_node("a", 4, 126)],
        gpu_pods=[holder("p")],
        undecided_nodes=["a"],
        denied={"DaemonSets": "reading the cluster failed (access denied): Forbidden"},
    )
    report = preflight(compute, reading)
    missing = {n.what: n for n in report.not_checked}
    assert set(missing) == {
        "kube-scheduler version",
        "ack-ai-installer chart version",
        "cGPU version",
        "NVIDIA driver version",
        "cluster age",
        "installed GPU memory unit",
    }
    unit = missing["installed GPU memory unit"]
    assert "DaemonSets not readable (reading the cluster failed (access denied): Forbidden)" in unit.why
    assert "nodes a report GPU memory that could be GiB or 128MiB units" in unit.why
    assert missing["kube-scheduler version"].supply == "--scheduler-version"
    text = to_text(report)
    assert "not checked: kube-scheduler version (GC403): no kube-scheduler pod in kube-system" in text
    assert text.rstrip().endswith("6 checks not made")
    assert to_dict(report)["summary"]["notChecked"] == 6
    # facts given by flags (or read) are checked: nothing left unsaid for them
    flags = {"scheduler_version": "1.28.1-aliyun-5.6-998282b9", "chart_version": "1.2.0", "cgpu_version": "1.5.10"}
    given = {n.what for n in preflight(compute, reading, driver_version="535.161.08", **flags).not_checked}
    assert given == {"cluster age", "installed GPU memory unit"}
    # a plain share install needs none of them
    assert [n.what for n in preflight(SETTINGS, ClusterReading("v1.28.3")).not_checked] == []


@pytest.mark.parametrize(
    ("settings", "created", "rule", "fires"),
    [
        ({"gpuMemoryUnit": "128MiB"}, "2021-10-19T23:59:59Z", "GC412", True),
        ({"gpuMemoryUnit": "128MiB"}, "2021-10-20T00:00:00Z", "GC412", False),
        ({}, "2020-01-01T00:00:00Z", "GC412", False),
        ({"isolation": ["core_mem"], "computeAllocation": True}, "2022-02-28T10:00:00Z", "GC413", True),
        ({"isolation": ["core_mem"], "computeAllocation": True}, "2022-03-01T10:00:00Z", "GC413", False),
    ],
)
def test_cluster_age(settings: dict[str, Any], created: str, rule: str, fires: bool) -> None:
    doc = {**SETTINGS, "region": "cn-beijing", **settings}
    if doc.get("gpuMemoryUnit") == "128MiB":
        doc["devicePlugin"] = {"image": {"repository": "acs/ack-plugin", "tag": "1"}}
    report = preflight(doc, ClusterReading("v1.28.3", created=created))
    assert (rule in {f.rule.id for f in report.findings}) is fires


def test_a_known_scheduler_version_leaves_the_age_to_gc403() -> None:
    doc = {**SETTINGS, "region": "cn-beijing", "isolation": ["core_mem"], "computeAllocation": True}
    reading = ClusterReading("v1.28.3", created="2021-01-01T00:00:00Z", scheduler="1.28.1-aliyun-5.6-998282b9")
    assert "GC413" not in {f.rule.id for f in preflight(doc, reading).findings}
