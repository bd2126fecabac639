"""Plain Kubernetes YAML in, the dry-run model out.

`kubectl get nodes -o yaml` and `kubectl get pods -A -o yaml` are valid inputs as they are: List
documents and multi-document files both work. Controllers (Deployment, StatefulSet, ReplicaSet, Job,
CronJob, DaemonSet) are expanded to their pods in order. A pod the product would refuse becomes an
invalid pod with its reason; YAML that cannot be read is an InputError naming the file and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from gpushare.domain import labels
from gpushare.domain.labels import Placement
from gpushare.domain.profiles import MIB_PER_UNIT
from gpushare.domain.quantity import QuantityError, count, milli, whole
from gpushare.errors import InputError
from gpushare.kube.documents import Source
from gpushare.placement import plugins
from gpushare.placement.model import Gpu, Node, Pod, Requirement, Semantics, Taint, Toleration

CONTROLLERS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "DaemonSet")


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _resources(container: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = container.get("resources") or {}
    return (res.get("requests") or {}), (res.get("limits") or {})


def _sum_containers(spec: dict[str, Any], semantics: Semantics) -> dict[str, int]:
    """Pod requests the scheduler's way: containers summed, the largest init container if larger, plus overhead."""
    totals = {"cpu": 0, "memory": 0, "gpu_mem": 0, "core": 0}
    init_max = {"cpu": 0, "memory": 0}
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind) or []:
            if not isinstance(container, dict):
                raise QuantityError(f"{kind} entry is not a mapping")
            requests, limits = _resources(container)
            cpu = milli(requests.get("cpu", limits.get("cpu", 0)))
            memory = whole(requests.get("memory", limits.get("memory", 0)))
            if kind == "initContainers":
                init_max["cpu"] = max(init_max["cpu"], cpu)
                init_max["memory"] = max(init_max["memory"], memory)
                continue
            totals["cpu"] += cpu
            totals["memory"] += memory
            # extended resources: limits (requests must equal them); the extender sums containers only
            totals["gpu_mem"] += count(limits.get(labels.GPU_MEM, requests.get(labels.GPU_MEM, 0)))
            totals["core"] += count(limits.get(labels.GPU_CORE, requests.get(labels.GPU_CORE, 0)))
    for key in init_max:
        totals[key] = max(totals[key], init_max[key])
    overhead = spec.get("overhead") or {}
    totals["cpu"] += milli(overhead.get("cpu", 0))
    totals["memory"] += whole(overhead.get("memory", 0))
    return totals


def _affinity(spec: dict[str, Any]) -> tuple[tuple[Requirement, ...], ...]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = []
    for term in required.get("nodeSelectorTerms") or []:
        reqs = [
            Requirement(e["key"], e["operator"], tuple(str(v) for v in e.get("values") or ()))
            for e in term.get("matchExpressions") or []
        ]
        reqs += [
            Requirement(e["key"], e["operator"], tuple(str(v) for v in e.get("values") or ()), field=True)
            for e in term.get("matchFields") or []
        ]
        terms.append(tuple(reqs))
    return tuple(terms)


def _tolerations(spec: dict[str, Any]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(t.get("key"), t.get("operator", "Equal"), t.get("value"), t.get("effect"))
        for t in spec.get("tolerations") or []
        if isinstance(t, dict)
    )


def parse_pod(
    namespace: str,
    name: str,
    pod_labels: dict[str, Any],
    annotations: dict[str, Any],
    spec: dict[str, Any],
    semantics: Semantics,
    unit_ratio: tuple[int, int],
    source: str,
) -> Pod:
    """One pod; a problem the product would refuse becomes `invalid` with the reason."""
    base = Pod(namespace, name, source=source)
    try:
        totals = _sum_containers(spec, semantics)
        selector = spec.get("nodeSelector") or {}
        node_selector = tuple(sorted((str(k), str(v)) for k, v in selector.items()))
        affinity = _affinity(spec)
        tolerations = _tolerations(spec)
    except (QuantityError, AttributeError, KeyError, TypeError) as exc:
        return replace(base, invalid=f"malformed pod spec: {exc}")
    gpu_mem = totals["gpu_mem"]
    if gpu_mem and unit_ratio[0] != unit_ratio[1]:
        gpu_mem = math.ceil(gpu_mem * unit_ratio[0] / unit_ratio[1])
    core = totals["core"]
    gpu_count = 1
    if semantics.name == "ack":
        raw = pod_labels.get(labels.GPU_COUNT)
        if raw is not None:
            if not re.fullmatch(r"[1-9][0-9]*", str(raw)):
                return replace(base, invalid=f"label {labels.GPU_COUNT}={raw!r} is not a positive integer")
            gpu_count = int(raw)
            if gpu_mem % gpu_count:
                return replace(
                    base, invalid=f"{labels.GPU_MEM}={gpu_mem} is not divisible by {labels.GPU_COUNT}={gpu_count}"
                )
            if gpu_count > 1 and core:
                return replace(
                    base, invalid=f"multi-GPU pods ({labels.GPU_COUNT}={gpu_count}) cannot request {labels.GPU_CORE}"
                )
        if core and (core % 5 or not 5 <= core <= 100):
            return replace(base, invalid=f"{labels.GPU_CORE}={core} must be a multiple of 5 in 5..100")
        if core and not gpu_mem:
            return replace(base, invalid=f"{labels.GPU_CORE} needs {labels.GPU_MEM} too")
    node = spec.get("nodeName") or None
    indices = None
    raw_idx = annotations.get(labels.ANN_IDX)
    if raw_idx is not None and str(raw_idx).strip():
        try:
            indices = tuple(int(i) for i in str(raw_idx).split(","))
        except ValueError:
            indices = None
    return Pod(
        namespace,
        name,
        gpu_mem,
        gpu_count,
        core,
        totals["cpu"],
        totals["memory"],
        node_selector,
        affinity,
        tolerations,
        node,
        indices,
        None,
        source,
    )


def _pod_from_template(
    namespace: str, name: str, template: dict[str, Any], semantics: Semantics, ratio: tuple[int, int], source: str
) -> Pod:
    meta = template.get("metadata") or {}
    return parse_pod(
        namespace,
        name,
        meta.get("labels") or {},
        meta.get("annotations") or {},
        template.get("spec") or {},
        semantics,
        ratio,
        source,
    )


def expand(src: Source, semantics: Semantics, ratio: tuple[int, int]) -> Iterator[tuple[Pod, bool]]:
    """Pods of a Pod or controller document, in order; the flag marks DaemonSet templates."""
    obj = src.obj
    kind = obj.get("kind")
    meta = _meta(obj)
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "unnamed")
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    if kind == "Pod":
        yield (
            parse_pod(
                namespace,
                name,
                meta.get("labels") or {},
                meta.get("annotations") or {},
                spec,
                semantics,
                ratio,
                src.where,
            ),
            False,
        )
        return
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = spec.get("template") or {}
    if kind == "DaemonSet":
        yield _pod_from_template(namespace, name, template, semantics, ratio, src.where), True
        return
    replicas = spec.get("parallelism", 1) if kind in ("Job", "CronJob") else spec.get("replicas", 1)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        yield (
            Pod(namespace, name, invalid=f"{kind} replicas {replicas!r} is not a whole number", source=src.where),
            False,
        )
        return
    first = _pod_from_template(namespace, f"{name}-0", template, semantics, ratio, src.where)
    for i in range(replicas):
        yield (first if i == 0 else replace(first, name=f"{name}-{i}")), False


def parse_node(src: Source, unhealthy: dict[str, set[int]], semantics: Semantics, ratio: tuple[int, int]) -> Node:
    obj = src.obj
    meta = _meta(obj)
    name = str(meta.get("name") or "")
    status = obj.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or capacity
    spec = obj.get("spec") or {}
    node_labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    try:
        gpu_cap = count(capacity.get(labels.GPU_MEM, allocatable.get(labels.GPU_MEM, 0)))
        gpu_alloc = count(allocatable.get(labels.GPU_MEM, gpu_cap))
        gpu_count = count(capacity.get(labels.GPU_COUNT, allocatable.get(labels.GPU_COUNT, 0)))
        core = count(capacity.get(labels.GPU_CORE, allocatable.get(labels.GPU_CORE, 0)))
        cpu = milli(allocatable.get("cpu", 0))
        memory = whole(allocatable.get("memory", 0))
        pods = whole(allocatable.get("pods", 110))
    except QuantityError as exc:
        raise InputError(f"Node {name} status", str(exc), f"valid quantities ({src.where})") from None
    if gpu_cap and not gpu_count:
        gpu_count = 1
    per_gpu = gpu_cap // gpu_count if gpu_count else 0
    if ratio[0] != ratio[1]:
        per_gpu = per_gpu * ratio[0] // ratio[1]
        gpu_alloc = gpu_alloc * ratio[0] // ratio[1]
    bad = unhealthy.get(name, set())
    core_per_gpu = core // gpu_count if gpu_count and semantics.name == "ack" else 0
    gpus = [Gpu(i, per_gpu, i not in bad, core_total=core_per_gpu) for i in range(gpu_count)] if gpu_cap else []
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
        for t in spec.get("taints") or []
        if isinstance(t, dict)
    )
    mode = node_labels.get(labels.SCHEDULE_LABEL, "share" if gpu_cap else "")
    label = node_labels.get(labels.PLACEMENT_LABEL)
    placement: Placement = "spread" if label == "spread" else "binpack" if label == "binpack" else semantics.placement
    address = next(
        (
            str(a.get("address", ""))
            for a in status.get("addresses") or []
            if isinstance(a, dict) and a.get("type") == "InternalIP"
        ),
        "",
    )
    return Node(
        name,
        node_labels,
        taints,
        bool(spec.get("unschedulable")),
        cpu,
        memory,
        pods,
        gpu_alloc,
        gpus,
        mode,
        placement,
        address=address,
    )


@dataclass
class Inventory:
    nodes: list[Node]
    existing: list[Pod]
    new: list[Pod]
    ignored: int = 0  # documents of other kinds


def _unhealthy(sources: Iterable[Source]) -> dict[str, set[int]]:
    result: dict[str, set[int]] = {}
    for src in sources:
        meta = _meta(src.obj)
        name = str(meta.get("name", ""))
        if src.obj.get("kind") != "ConfigMap" or not name.startswith(labels.UNHEALTHY_CONFIGMAP_PREFIX):
            continue
        if meta.get("namespace", "kube-system") != "kube-system":
            continue
        raw = str((src.obj.get("data") or {}).get("gpus", ""))
        result[name[len(labels.UNHEALTHY_CONFIGMAP_PREFIX) :]] = {int(i) for i in re.findall(r"\d+", raw)}
    return result


def unit_ratio(input_unit: str, semantics: Semantics) -> tuple[int, int]:
    """(MiB per input unit, MiB per simulated unit): requests round up, GPU capacity rounds down."""
    return MIB_PER_UNIT[input_unit], MIB_PER_UNIT[semantics.gpu_memory_unit]


def build(
    node_docs: list[Source],
    existing_docs: list[Source],
    workload_docs: list[Source],
    semantics: Semantics,
    input_unit: str | None = None,
) -> Inventory:
    """The model of the fleet; existing pods are charged to their nodes, DaemonSets expanded per eligible node."""
    ratio = unit_ratio(input_unit or semantics.gpu_memory_unit, semantics)
    everything = node_docs + existing_docs + workload_docs
    unhealthy = _unhealthy(everything)
    nodes = [parse_node(s, unhealthy, semantics, ratio) for s in node_docs if s.obj.get("kind") == "Node"]
    for i, node in enumerate(nodes):
        node.id = i
    existing: list[Pod] = []
    for src in existing_docs:
        if src.obj.get("kind") == "Pod":
            phase = (src.obj.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                continue
            existing.extend(p for p, _ in expand(src, semantics, ratio))
    new: list[Pod] = []
    ignored = 0
    for src in workload_docs:
        kind = src.obj.get("kind")
        if kind not in ("Pod", *CONTROLLERS):
            ignored += kind not in ("Node", "ConfigMap")
            continue
        for pod, daemon in expand(src, semantics, ratio):
            if daemon and not pod.invalid:
                new.extend(_daemon_pods(pod, nodes, semantics))
            else:
                new.append(pod)
    return Inventory(nodes, existing, new, ignored)


_DAEMON_TOLERATIONS = (Toleration(plugins.UNSCHEDULABLE_TAINT.key, "Exists", None, "NoSchedule"),)


def _daemon_pods(template: Pod, nodes: list[Node], semantics: Semantics) -> Iterator[Pod]:
    """A DaemonSet's pods: one per node its selector, affinity and tolerations admit, pinned there."""
    probe = replace(template, tolerations=template.tolerations + _DAEMON_TOLERATIONS)
    for node in nodes:
        if plugins.static_reason(node, probe, semantics) is None:
            pin = (Requirement("metadata.name", "In", (node.name,), field=True),)
            terms = tuple(term + pin for term in template.affinity) or (pin,)
            yield replace(probe, name=f"{template.name}-{node.name}", affinity=terms)
