"""Node objects, read once for every command: labels, taints, GPU capacity and what the node can allocate.

Lenient like the workload reader: a malformed capacity is a `Problem` (GN301) for the caller to report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gpushare.domain import labels
from gpushare.domain.quantity import QuantityError, count, milli, whole
from gpushare.kube.documents import Source
from gpushare.kube.fields import Problem, mapping, sequence

MALFORMED = "GN301"
#: The annotation that asks the scheduler to keep some controllers' pods away (v1.PreferAvoidPodsAnnotationKey).
PREFER_AVOID_PODS = "scheduler.alpha.kubernetes.io/preferAvoidPods"
#: kubelet's default when a Node reports no pod capacity.
DEFAULT_MAX_PODS = 110


@dataclass
class NodeInfo:
    name: str
    labels: dict[str, str]
    source: Source
    taints: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: bool = False
    gpu_mem: int = 0  # capacity (allocatable when no capacity is reported)
    gpu_mem_allocatable: int = 0
    gpu_count: int = 0
    core: int = 0
    cpu: int = 0  # allocatable millicores
    memory: int = 0  # allocatable bytes
    pods: int = DEFAULT_MAX_PODS
    address: str = ""  # InternalIP
    #: Every allocatable resource (extended resources, ephemeral-storage...), as a whole number.
    other: dict[str, int] = field(default_factory=dict)
    node_info: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] = field(default_factory=dict)
    #: status.images: each image's names and size in bytes (what kube-scheduler's ImageLocality reads).
    images: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def mode(self) -> str | None:
        return self.labels.get(labels.SCHEDULE_LABEL)

    @property
    def per_gpu(self) -> int:
        return self.gpu_mem // self.gpu_count if self.gpu_count else self.gpu_mem

    @property
    def instance_type(self) -> str | None:
        return self.labels.get("node.kubernetes.io/instance-type") or self.labels.get(
            "beta.kubernetes.io/instance-type"
        )

    @property
    def avoided(self) -> frozenset[tuple[str, str]]:
        """Controllers (kind, uid) the preferAvoidPods annotation names; unreadable JSON avoids nothing, as in
        kube-scheduler (NodePreferAvoidPods reads it)."""
        raw = self.annotations.get(PREFER_AVOID_PODS)
        try:
            entries = json.loads(raw).get("preferAvoidPods") if isinstance(raw, str) else None
        except (ValueError, AttributeError):
            return frozenset()
        result = set()
        for entry in sequence(entries):
            ref = mapping(mapping(mapping(entry).get("podSignature")).get("podController"))
            result.add((str(ref.get("kind", "")), str(ref.get("uid", ""))))
        return frozenset(result)

    @property
    def region(self) -> str | None:
        return self.labels.get("topology.kubernetes.io/region") or self.labels.get(
            "failure-domain.beta.kubernetes.io/region"
        )


def read_node(src: Source) -> NodeInfo | None:
    """The node's facts; None for other kinds."""
    obj = src.obj
    if obj.get("kind") != "Node":
        return None
    meta = mapping(obj.get("metadata"))
    status = mapping(obj.get("status"))
    spec = mapping(obj.get("spec"))
    capacity = mapping(status.get("capacity"))
    allocatable = mapping(status.get("allocatable")) or capacity
    info = NodeInfo(
        str(meta.get("name") or "unnamed"),
        {str(k): str(v) for k, v in mapping(meta.get("labels")).items()},
        src,
        [t for t in spec.get("taints") or [] if isinstance(t, dict)] if isinstance(spec.get("taints"), list) else [],
        bool(spec.get("unschedulable")),
        node_info=mapping(status.get("nodeInfo")),
        annotations=mapping(meta.get("annotations")),
    )
    for image in status.get("images") or []:
        image = mapping(image)
        names = tuple(str(n) for n in image.get("names") or [] if isinstance(n, str))
        size = image.get("sizeBytes")
        if names and isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            info.images.append((names, size))

    def read(where: str, table: dict[str, Any], resource: str, parse: Any, default: int) -> int:
        raw = table.get(resource)
        if raw is None:
            return default
        try:
            return int(parse(raw))
        except QuantityError as exc:
            if not any(p.field.endswith(f".{resource}") and p.value == raw for p in info.problems):  # once a value
                info.problems.append(Problem(MALFORMED, f"status.{where}.{resource}", raw, f"a valid quantity ({exc})"))
            return default

    for resource, attr in ((labels.GPU_MEM, "gpu_mem"), (labels.GPU_COUNT, "gpu_count"), (labels.GPU_CORE, "core")):
        table, where = (capacity, "capacity") if resource in capacity else (allocatable, "allocatable")
        setattr(info, attr, read(where, table, resource, count, 0))
    info.gpu_mem_allocatable = read("allocatable", allocatable, labels.GPU_MEM, count, info.gpu_mem)
    info.cpu = read("allocatable", allocatable, "cpu", milli, 0)
    info.memory = read("allocatable", allocatable, "memory", whole, 0)
    info.pods = read("allocatable", allocatable, "pods", whole, DEFAULT_MAX_PODS)
    for resource in allocatable:
        if resource not in ("cpu", "memory", "pods"):
            parse = count if "/" in str(resource) else whole
            info.other[str(resource)] = read("allocatable", allocatable, str(resource), parse, 0)
    info.address = next(
        (
            str(a.get("address", ""))
            for a in status.get("addresses") or []
            if isinstance(a, dict) and a.get("type") == "InternalIP"
        ),
        "",
    )
    return info
