"""The scheduling queue against the real kube-scheduler (with the stand-in extender): the order of pods waiting
together, a retry after preemption, and a pod whose only GPU memory is in an init container.

- Pods created while no scheduler runs wait together when it starts: they leave its active queue by priority. The
  dry run reads them back from the API server, as a snapshot does (each with its creationTimestamp), and must bind
  the same pods and leave the same ones pending, with the same message, deleting nothing.
- A pod of a class with preemptionPolicy Never waits for room; a higher pod preempts the running one. The victim's
  deletion moves the waiting pod back, and it binds beside the preemptor.
- A pod whose gpu-mem is all in an init container: kube-scheduler counts it at node level and the extender's bind
  fails (HTTP 500, on every retry); one asking more than a node has at node level is left pending by the filters.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cluster import ControlPlane, tail
from kube import api, create_node, gpu_node
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from test_differential import running_scheduler

from gpushare.domain.minors import scoring_profile
from gpushare.placement import PlacementResult, Semantics, place

pytestmark = pytest.mark.e2e
MINORS = (28, 36)
SCHEDULER = "gpushare-scheduler"
QUIET = 4.0  # seconds without change before the pods count as settled (backoff: 1 s, then 2 s)
CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    | ({"preemptionPolicy": "Never"} if name == "q-never" else {})
    for name, value in (("q-low", 10), ("q-high", 1000), ("q-never", 10))
]
URL = re.compile(r"http://127\.0\.0\.1:\d+/gpushare-scheduler")


@dataclass(frozen=True)
class Seen:
    node: str  # "" while pending
    gpu: int | None
    message: str


def _pod(name: str, units: int, priority_class: str | None = None, init: int = 0) -> dict[str, Any]:
    limits = {"aliyun.com/gpu-mem": str(units)} if units else {}
    container = {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"limits": limits}}
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "containers": [container], "terminationGracePeriodSeconds": 0}
    if init:
        spec["initContainers"] = [
            {
                "name": "i",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"limits": {"aliyun.com/gpu-mem": str(init)}},
            }
        ]
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _running(name: str, units: int, node: str, priority_class: str) -> dict[str, Any]:
    pod = _pod(name, units, priority_class)
    pod["spec"]["nodeName"] = node
    pod["metadata"]["annotations"] = {
        "ALIYUN_COM_GPU_MEM_IDX": "0",
        "ALIYUN_COM_GPU_MEM_POD": str(units),
        "ALIYUN_COM_GPU_MEM_DEV": "16",
        "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
    }
    pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:01Z"}
    return pod


def _seen(core: Any, name: str) -> Seen:
    pod = core.read_namespaced_pod(name, "default")
    index = (pod.metadata.annotations or {}).get("ALIYUN_COM_GPU_MEM_IDX")
    condition = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
    message = (condition.message or "") if condition is not None and condition.status == "False" else ""
    return Seen(pod.spec.node_name or "", int(index) if pod.spec.node_name and index else None, message)


def _settled(core: Any, names: list[str], log: Path, limit: float = 90) -> dict[str, Seen]:
    """Each pod once every one is bound or pending with a message, and nothing has changed for QUIET seconds."""
    deadline = time.monotonic() + limit
    last: dict[str, Seen] | None = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        seen = {name: _seen(core, name) for name in names}
        left = frozenset(p.metadata.name for p in core.list_namespaced_pod("default").items)
        state = {**seen, "": Seen(",".join(sorted(left)), None, "")}
        if state != last:
            last, since = state, time.monotonic()
        elif all(s.node or s.message for s in seen.values()) and time.monotonic() - since >= QUIET:
            return seen
        time.sleep(0.2)
    pytest.fail(f"pods {names} never settled: {last}\n{tail(log)}")


def _dry(minor: int, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], running: list[Any]) -> PlacementResult:
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(minor))
    return place(nodes, pods, existing=[*CLASSES, *running], semantics=semantics)


def _judged(real: dict[str, Seen], deleted: set[str], result: PlacementResult) -> list[str]:
    """The dry run against the real run: each pod's node and GPU, or its staying pending with the same message (the
    extender's URL written as the dry run writes it), and the pods deleted."""
    mine: dict[str, Seen] = {a.name: Seen(a.node, a.gpus[0][0] if a.gpus else None, "") for a in result.placements}
    mine |= {p.name: Seen("", None, p.message) for p in result.pending}
    failures = []
    for name, seen in real.items():
        expected = Seen(seen.node, seen.gpu, URL.sub("<the extender's urlPrefix>", seen.message))
        if mine.get(name) != expected:
            failures.append(f"{name}: real {expected}, gpushare {mine.get(name)}")
    if {p.name for p in result.preempted} != deleted:
        failures.append(
            f"real deleted {sorted(deleted)}, gpushare preempted {sorted(p.name for p in result.preempted)}"
        )
    return failures


@contextlib.contextmanager
def _fleet(cluster: ControlPlane, nodes: list[str]) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """One-GPU 16 GiB nodes and the PriorityClasses; everything in the default namespace deleted after."""
    core = api(cluster.kubeconfig)
    scheduling = client.SchedulingV1Api(core.api_client)
    documents = []
    for priority_class in CLASSES:
        with contextlib.suppress(ApiException):
            scheduling.create_priority_class(priority_class)
    for name in nodes:
        node, status = gpu_node(name, 1, 16, cpu="8", memory="32Gi")
        create_node(core, node, status)
        documents.append(node | status)
    try:
        yield core, documents
    finally:
        for pod in core.list_namespaced_pod("default").items:
            with contextlib.suppress(ApiException):
                core.delete_namespaced_pod(pod.metadata.name, "default", grace_period_seconds=0)
        for name in nodes:
            core.delete_node(name)
        for priority_class in CLASSES:
            with contextlib.suppress(ApiException):
                scheduling.delete_priority_class(priority_class["metadata"]["name"])


def test_pods_created_before_the_scheduler_starts_leave_its_queue_by_priority(
    cluster: ControlPlane, tmp_path: Path
) -> None:
    """Two low pods created first, then two high ones, while no scheduler runs; one 16 GiB GPU. Started, the
    scheduler takes the high pods first: they bind, and the low ones find no victim. Taken in the files' order, the
    low pods would bind first and be preempted."""
    with _fleet(cluster, ["q1-n0"]) as (core, nodes):
        names = ["low-a", "low-b", "high-a", "high-b"]
        for name in names:
            core.create_namespaced_pod("default", _pod(name, 8, f"q-{name.split('-')[0]}"))
        # as a snapshot reads them: each with its creationTimestamp, none scheduled yet
        snapshot = [core.api_client.sanitize_for_serialization(core.read_namespaced_pod(n, "default")) for n in names]
        with running_scheduler(cluster, tmp_path) as (_, _, log, _):
            real = _settled(core, names, log)
        left = {p.metadata.name for p in core.list_namespaced_pod("default").items}
        result = _dry(cluster.minor, nodes, snapshot, [])
    assert [n for n in names if real[n].node] == ["high-a", "high-b"], (
        real
    )  # the real queue's order, as the issue saw it
    failures = _judged(real, set(names) - left, result)
    assert not failures, "\n".join(failures)


def test_a_pod_that_never_preempts_binds_beside_the_preemptor(cluster: ControlPlane, tmp_path: Path) -> None:
    """A 16 GiB low pod fills the GPU; a 4 GiB pod of a Never class waits; an 8 GiB high pod preempts the low one,
    and the waiting pod, moved back by the deletion, binds beside it."""
    # the scheduler first: its probe pod must find no node
    with running_scheduler(cluster, tmp_path) as (_, _, log, _), _fleet(cluster, ["q2-n0"]) as (core, nodes):
        victim = _running("victim", 16, "q2-n0", "q-low")
        core.create_namespaced_pod("default", {k: v for k, v in victim.items() if k != "status"})
        core.patch_namespaced_pod_status("victim", "default", {"status": victim["status"]})
        pods = [_pod("never", 4, "q-never"), _pod("preemptor", 8, "q-high")]
        created: list[str] = []
        for pod in pods:  # each settled before the next is created
            core.create_namespaced_pod("default", pod)
            created.append(pod["metadata"]["name"])
            real = _settled(core, created, log)
        left = {p.metadata.name for p in core.list_namespaced_pod("default").items}
        result = _dry(cluster.minor, nodes, pods, [victim])
    assert real["never"].node == real["preemptor"].node == "q2-n0", real
    failures = _judged(real, {"victim"} - left, result)
    assert not failures, "\n".join(failures)


def test_a_pod_asking_gpu_memory_only_in_an_init_container(cluster: ControlPlane, tmp_path: Path) -> None:
    """Asking 4 in its init container, the pod passes the filters and its bind fails; asking 20, more than the node
    has, it is left pending at node level."""
    # the scheduler first: its probe pod must find no node
    with running_scheduler(cluster, tmp_path) as (_, _, log, _), _fleet(cluster, ["q3-n0"]) as (core, nodes):
        pods = [_pod("init-small", 0, init=4), _pod("init-big", 0, init=20)]
        for pod in pods:
            core.create_namespaced_pod("default", pod)
        real = _settled(core, ["init-small", "init-big"], log)
        result = _dry(cluster.minor, nodes, pods, [])
    assert "bind" in real["init-small"].message and "Insufficient aliyun.com/gpu-mem" in real["init-big"].message, real
    failures = _judged(real, set(), result)
    assert not failures, "\n".join(failures)
