"""What the rules see of Kubernetes objects: a pod template's GPU asks, a Node's GPU capacity and labels.

Built leniently from whatever the YAML holds: a malformed value is recorded as a problem for a rule
to report, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpushare.domain import labels
from gpushare.domain.quantity import QuantityError, count
from gpushare.placement.inputs import CONTROLLERS

WORKLOAD_KINDS = ("Pod", *CONTROLLERS)
Problem = tuple[str, Any, str]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass
class PodView:
    kind: str
    namespace: str
    name: str
    labels: dict[str, Any]
    spec: dict[str, Any]
    gpu_mem: int = 0
    core: int = 0
    problems: list[Problem] = field(default_factory=list)  # malformed quantities, for GW201
    env: list[tuple[str, str, Any]] = field(default_factory=list)  # (container, name, value)

    @property
    def node_selector(self) -> dict[str, Any]:
        return _dict(self.spec.get("nodeSelector"))

    @property
    def pinned_node(self) -> str | None:
        node = self.spec.get("nodeName") or self.node_selector.get("kubernetes.io/hostname")
        return str(node) if node else None

    @property
    def gpu_count_label(self) -> Any:
        return self.labels.get(labels.GPU_COUNT)


def pod_view(obj: dict[str, Any]) -> PodView | None:
    """The pod template of a Pod or controller; None for other kinds."""
    kind = obj.get("kind")
    if kind not in WORKLOAD_KINDS:
        return None
    meta = _dict(obj.get("metadata"))
    spec = _dict(obj.get("spec"))
    pod_meta = meta
    if kind != "Pod":
        if kind == "CronJob":
            spec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
        template = _dict(spec.get("template"))
        pod_meta, spec = _dict(template.get("metadata")), _dict(template.get("spec"))
    view = PodView(
        str(kind),
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or "unnamed"),
        _dict(pod_meta.get("labels")),
        spec,
    )
    for container in _list(spec.get("containers")):
        container = _dict(container)
        cname = str(container.get("name", "?"))
        resources = _dict(container.get("resources"))
        limits, requests = _dict(resources.get("limits")), _dict(resources.get("requests"))
        for resource, attr in ((labels.GPU_MEM, "gpu_mem"), (labels.GPU_CORE, "core")):
            raw = limits.get(resource, requests.get(resource))
            if raw is None:
                continue
            field_name = f"containers[{cname}].resources.limits.{resource}"
            try:
                setattr(view, attr, getattr(view, attr) + count(raw))
            except QuantityError as exc:
                view.problems.append((field_name, raw, f"a whole, non-negative number ({exc})"))
            if resource in limits and resource in requests and str(limits[resource]) != str(requests[resource]):
                view.problems.append(
                    (
                        f"containers[{cname}].resources.requests.{resource}",
                        requests[resource],
                        f"equal to the limit {limits[resource]!r} (extended resources)",
                    )
                )
        for entry in _list(container.get("env")):
            entry = _dict(entry)
            if "name" in entry:
                view.env.append((cname, str(entry["name"]), entry.get("value")))
    return view


@dataclass
class NodeView:
    name: str
    labels: dict[str, str]
    gpu_mem: int
    gpu_count: int
    core: int
    node_info: dict[str, Any]
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
    def region(self) -> str | None:
        return self.labels.get("topology.kubernetes.io/region") or self.labels.get(
            "failure-domain.beta.kubernetes.io/region"
        )


def node_view(obj: dict[str, Any]) -> NodeView | None:
    if obj.get("kind") != "Node":
        return None
    meta = _dict(obj.get("metadata"))
    status = _dict(obj.get("status"))
    capacity = _dict(status.get("capacity")) or _dict(status.get("allocatable"))
    view = NodeView(
        str(meta.get("name") or "unnamed"),
        {str(k): str(v) for k, v in _dict(meta.get("labels")).items()},
        0,
        0,
        0,
        _dict(status.get("nodeInfo")),
    )
    for resource, attr in ((labels.GPU_MEM, "gpu_mem"), (labels.GPU_COUNT, "gpu_count"), (labels.GPU_CORE, "core")):
        raw = capacity.get(resource)
        if raw is None:
            continue
        try:
            setattr(view, attr, count(raw))
        except QuantityError as exc:
            view.problems.append((f"status.capacity.{resource}", raw, f"a whole, non-negative number ({exc})"))
    return view
