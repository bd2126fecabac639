"""The ledger as Prometheus metrics: each GPU's memory and what its pods hold equal the dry run's charged model,
each node's largest free block its best GPU, pending GPU pods by the reasons `place` gives, doctor's findings by
rule; the exposition parses as Prometheus' text format, and docs/metrics.md lists every metric."""

from __future__ import annotations

from typing import Any

from helpers import REPO
from prometheus_client.parser import text_string_to_metric_families

from gpushare.kube.documents import from_objects
from gpushare.live.doctor import doctor
from gpushare.live.metrics import METRICS, Moment, by_rule, exposition, families, reference
from gpushare.placement import Semantics, Simulation, place

GIB = 1 << 30


def node(name: str, gpus: int = 2, per_gpu: int = 16) -> dict[str, Any]:
    capacity = {"cpu": "32", "memory": "64Gi", "pods": "110"}
    capacity |= {"aliyun.com/gpu-mem": str(gpus * per_gpu), "aliyun.com/gpu-count": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}}


def pod(name: str, units: int, node_name: str | None = None, gpu: int = 0) -> dict[str, Any]:
    limits = {"aliyun.com/gpu-mem": str(units)}
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }
    if node_name is not None:
        doc["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": str(gpu), "ALIYUN_COM_GPU_MEM_POD": str(units)}
        doc["spec"]["nodeName"] = node_name
        doc["status"] = {"phase": "Running"}
    return doc


NODES = [node("a"), node("b", 1, 24)]
RUNNING = [pod("r1", 10, "a", 0), pod("r2", 4, "a", 0), pod("r3", 20, "b", 0)]
PENDING = [pod("fits", 4), pod("big", 17), pod("huge", 30)]


def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    simulation = Simulation.from_sources(
        from_objects(NODES, "nodes"), from_objects(RUNNING, "running"), from_objects(PENDING, "pending"), Semantics()
    )
    report = doctor(from_objects([*NODES, *RUNNING], "snapshot"), kube_version="1.28")
    text = exposition(families(Moment(simulation, simulation.trial(), by_rule(report.findings)))).decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    used = {(n.name, g.index): g.used for n in simulation.nodes for g in n.gpus}
    assert used == {("a", 0): 14, ("a", 1): 0, ("b", 0): 20}  # rolled back: the pending pods are not charged
    return found


def test_each_gpu_and_node_is_the_charged_model() -> None:
    got = samples()
    gpu = (("gpu", "0"), ("node", "a"))
    assert got[("gpushare_gpu_memory_bytes", gpu)] == 16 * GIB
    assert got[("gpushare_gpu_memory_allocated_bytes", gpu)] == 14 * GIB
    assert got[("gpushare_gpu_memory_allocated_units", (*gpu, ("unit", "1GiB")))] == 14
    assert got[("gpushare_gpu_memory_units", (("gpu", "0"), ("node", "b"), ("unit", "1GiB")))] == 24
    assert got[("gpushare_node_gpu_memory_largest_free_bytes", (("node", "a"),))] == 16 * GIB
    assert got[("gpushare_node_gpu_memory_largest_free_bytes", (("node", "b"),))] == 4 * GIB


def test_pending_pods_by_the_reasons_place_gives() -> None:
    """`fits` binds in the dry run (not counted); `big` (17: only b's GPU is that large, and it is busy) and `huge`
    (30) stay pending, each under its reasons."""
    got = samples()
    result = place(NODES, PENDING, existing=RUNNING)
    want: dict[str, int] = {}
    for p in result.pending:
        for reason, _ in p.reasons:
            want[reason] = want.get(reason, 0) + 1
    assert {p.name for p in result.pending} == {"big", "huge"}
    pending = {dict(labels)["reason"]: v for (name, labels), v in got.items() if name == "gpushare_pending_gpu_pods"}
    assert pending == want and pending


def test_doctors_findings_by_rule() -> None:
    """`huge` is no finding here (doctor reads the cluster's pods: these pending ones are the dry run's); the
    snapshot's nodes and running pods give none either: the family is there, empty."""
    got = samples()
    assert not [k for k in got if k[0] == "gpushare_doctor_findings"]
    simulation = Simulation.from_sources(from_objects(NODES, "nodes"), [], [], Semantics())
    report = doctor(from_objects([*NODES, pod("zero", 0)], "snapshot"), kube_version="1.28")
    text = exposition(families(Moment(simulation, simulation.trial(), by_rule(report.findings)))).decode()
    assert 'gpushare_doctor_findings{rule="GW217",severity="error"} 1.0' in text


def test_the_reference_lists_every_metric() -> None:
    doc = (REPO / "docs" / "metrics.md").read_text()
    assert doc == reference() and all(f"`{d.name}`" in doc for d in METRICS)
