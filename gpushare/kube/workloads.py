"""Pods and controllers, read once for every command: what a pod asks for, and what is wrong with it.

`place`, `validate` and `preflight` all read workloads here, so a pod means the same to each and a
malformed one is reported with the same rule ID everywhere. Reading is lenient: a bad value becomes a
`Problem` (rule ID, field, value, what is allowed), never an exception. Requests are counted the way
kube-scheduler counts them for node-level fit (containers summed, the largest init container if larger,
plus overhead), and the GPU memory also the way the gpushare extender counts it (containers only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gpushare.domain import labels
from gpushare.domain.kubescheduler import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from gpushare.domain.quantity import QuantityError, count, milli, whole
from gpushare.errors import shown
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping, sequence

CONTROLLERS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "DaemonSet")
WORKLOAD_KINDS = ("Pod", *CONTROLLERS)

# Rule IDs of the problems found while reading (their entries, with severity and remediation, are in
# gpushare.policy.rules.workloads).
MALFORMED = "GW201"
CORE_STEP = "GW202"
CORE_NEEDS_MEM = "GW203"
GPU_COUNT = "GW204"
MULTI_WITH_CORE = "GW205"

CORE_FIELD = f"resources.limits.{labels.GPU_CORE}"
MEM_FIELD = f"resources.limits.{labels.GPU_MEM}"


@dataclass(frozen=True)
class Problem:
    """Why a pod cannot be taken as it is: the rule it breaks, the field, the value and what is allowed."""

    rule: str
    field: str
    value: Any
    allowed: str

    @property
    def offence(self) -> tuple[str, Any, str]:
        return self.field, self.value, self.allowed

    @property
    def message(self) -> str:
        return f"{self.field}: {shown(self.value)} is not allowed; expected {self.allowed} [{self.rule}]"


@dataclass
class Workload:
    """A Pod, or the pod template of a controller, with its requests summed."""

    kind: str
    namespace: str
    name: str
    labels: dict[str, Any]
    annotations: dict[str, Any]
    spec: dict[str, Any]
    source: Source
    #: Pods a controller asks for (replicas, parallelism); None for a Pod and a DaemonSet.
    replicas: int | None = None
    gpu_mem: int = 0  # aliyun.com/gpu-mem over the containers: what the extender counts
    core: int = 0  # aliyun.com/gpu-core.percentage over the containers
    cpu: int = 0  # millicores, node-level as kube-scheduler counts them
    memory: int = 0  # bytes, node-level
    #: Every resource of the pod, node-level (containers summed, largest init container, overhead).
    requests: dict[str, int] = field(default_factory=dict)
    #: cpu (millicores) and memory (bytes) as kube-scheduler scores nodes: a container that requests none counts
    #: 100m and 200 MiB (pkg/scheduler/util GetNonzeroRequests), summed and maxed like the requests.
    nz_cpu: int = 0
    nz_memory: int = 0
    images: list[str] = field(default_factory=list)  # spec.containers[*].image, in order
    init_images: list[str] = field(default_factory=list)  # spec.initContainers[*].image, in order
    #: A controller's own `spec.selector` (the pods it owns), as written; None for a Pod.
    selector: Any = None
    #: A Pod's controller (ownerReferences entry with controller: true): (apiVersion, kind, name, uid).
    controller: tuple[str, str, str, str] | None = None
    env: list[tuple[str, str, Any]] = field(default_factory=list)  # (container, name, value)
    problems: list[Problem] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def node_selector(self) -> dict[str, Any]:
        return mapping(self.spec.get("nodeSelector"))

    @property
    def pinned_node(self) -> str | None:
        node = self.spec.get("nodeName") or self.node_selector.get("kubernetes.io/hostname")
        return str(node) if node else None

    @property
    def gpu_count_label(self) -> Any:
        return self.labels.get(labels.GPU_COUNT)

    @property
    def gpu_count(self) -> int:
        """GPUs the pod spans (ACK multi-GPU label); 1 when the label is absent or unusable."""
        raw = self.gpu_count_label
        return int(str(raw)) if raw is not None and re.fullmatch(r"[1-9][0-9]*", str(raw)) else 1

    def problems_of(self, rule: str) -> Iterator[tuple[str, Any, str]]:
        return (p.offence for p in self.problems if p.rule == rule)


def _resources(container: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = mapping(container.get("resources"))
    return mapping(res.get("requests")), mapping(res.get("limits"))


def _quantity(resource: str) -> Any:
    if resource == "cpu":
        return milli
    if resource in (labels.GPU_MEM, labels.GPU_CORE, labels.GPU_COUNT) or "/" in resource:
        return count
    return whole


def _read_containers(view: Workload) -> None:
    """Sum the requests; every quantity that does not parse is a problem, never an exception."""
    spec = view.spec
    summed: dict[str, int] = {}
    init_max: dict[str, int] = {}
    nz_sum, nz_init = [0, 0], [0, 0]
    for kind in ("containers", "initContainers"):
        for i, raw in enumerate(sequence(spec.get(kind))):
            if not isinstance(raw, dict):
                view.problems.append(Problem(MALFORMED, f"spec.{kind}[{i}]", raw, "a container (a mapping)"))
                continue
            cname = str(raw.get("name", i))
            requests, limits = _resources(raw)
            nz = [DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST]  # replaced below by what the container asks
            for resource in {*requests, *limits}:
                # the request counts (a limit stands in for a missing one); GPU resources are written as limits
                first, second = (
                    (limits, requests) if resource in (labels.GPU_MEM, labels.GPU_CORE) else (requests, limits)
                )
                table = first if resource in first else second
                value, where = table[resource], "limits" if table is limits else "requests"
                try:
                    amount = _quantity(str(resource))(value)
                except QuantityError as exc:
                    view.problems.append(
                        Problem(
                            MALFORMED,
                            f"{kind}[{cname}].resources.{where}.{resource}",
                            value,
                            f"a whole, non-negative number ({exc})"
                            if _quantity(str(resource)) is count
                            else f"a Kubernetes quantity ({exc})",
                        )
                    )
                    continue
                if (
                    "/" in str(resource)
                    and resource in limits
                    and resource in requests
                    and str(limits[resource]) != str(requests[resource])
                ):
                    view.problems.append(
                        Problem(
                            MALFORMED,
                            f"{kind}[{cname}].resources.requests.{resource}",
                            requests[resource],
                            f"equal to the limit {limits[resource]!r} (extended resources)",
                        )
                    )
                if resource in ("cpu", "memory"):
                    nz[resource == "memory"] = amount
                if kind == "containers":
                    summed[resource] = summed.get(resource, 0) + amount
                else:
                    init_max[resource] = max(init_max.get(resource, 0), amount)
            for j in (0, 1):
                if kind == "containers":
                    nz_sum[j] += nz[j]
                else:
                    nz_init[j] = max(nz_init[j], nz[j])
            (view.images if kind == "containers" else view.init_images).append(str(raw.get("image") or ""))
            if kind == "containers":
                for entry in sequence(raw.get("env")):
                    entry = mapping(entry)
                    if "name" in entry:
                        view.env.append((cname, str(entry["name"]), entry.get("value")))
    view.gpu_mem = summed.get(labels.GPU_MEM, 0)
    view.core = summed.get(labels.GPU_CORE, 0)
    requests = {r: max(summed.get(r, 0), init_max.get(r, 0)) for r in {*summed, *init_max}}
    nz = [max(nz_sum[j], nz_init[j]) for j in (0, 1)]
    for resource, value in mapping(spec.get("overhead")).items():
        try:
            amount = _quantity(str(resource))(value)
        except QuantityError as exc:
            view.problems.append(Problem(MALFORMED, f"spec.overhead.{resource}", value, f"a quantity ({exc})"))
            continue
        requests[resource] = requests.get(resource, 0) + amount
        if resource in ("cpu", "memory"):
            nz[resource == "memory"] += amount
    view.nz_cpu, view.nz_memory = nz
    view.requests = requests
    view.cpu = requests.get("cpu", 0)
    view.memory = requests.get("memory", 0)


def _check_gpu_request(view: Workload) -> None:
    """ACK's rules on what one pod may ask (seed 002, multi-card sharing): compute, gpu-count."""
    core, mem = view.core, view.gpu_mem
    if core and (core % 5 or not 5 <= core <= 100):
        view.problems.append(Problem(CORE_STEP, CORE_FIELD, core, "a multiple of 5 from 5 to 100 (percent of one GPU)"))
    if core and not mem:
        view.problems.append(Problem(CORE_NEEDS_MEM, MEM_FIELD, 0, f"a GPU memory request alongside {labels.GPU_CORE}"))
    raw = view.gpu_count_label
    if raw is None:
        return
    label = f"metadata.labels.{labels.GPU_COUNT}"
    if not re.fullmatch(r"[1-9][0-9]*", str(raw)):
        view.problems.append(Problem(GPU_COUNT, label, raw, "a positive integer (GPUs the pod spans)"))
        return
    if mem % int(str(raw)):
        view.problems.append(
            Problem(GPU_COUNT, label, raw, f"a divisor of the memory request {mem} (each GPU gets an equal share)")
        )
    if int(str(raw)) > 1 and core:
        view.problems.append(
            Problem(
                MULTI_WITH_CORE, CORE_FIELD, core, f"no compute request on a multi-GPU pod ({labels.GPU_COUNT}={raw})"
            )
        )


def _controller(meta: dict[str, Any]) -> tuple[str, str, str, str] | None:
    """The ownerReferences entry marked `controller: true` (metav1.GetControllerOf), if any."""
    for ref in sequence(meta.get("ownerReferences")):
        ref = mapping(ref)
        if ref.get("controller") is True:
            return (
                str(ref.get("apiVersion", "")),
                str(ref.get("kind", "")),
                str(ref.get("name", "")),
                str(ref.get("uid", "")),
            )
    return None


@dataclass(frozen=True)
class Unnamed:
    """A workload `place` and `validate` cannot tell from another: one without a name, or a second object of one
    kind, namespace and name (kubectl would apply it over the first). `first` is where the first one is."""

    source: Source
    field: str
    value: Any
    allowed: str
    first: Source | None = None


def unnamed(sources: Iterable[Source]) -> Iterator[Unnamed]:
    """Every workload without a name, and every later one of a kind, namespace and name already seen."""
    seen: dict[tuple[str, str, str], Source] = {}
    for src in sources:
        if src.kind not in WORKLOAD_KINDS:
            continue
        meta = mapping(src.obj.get("metadata"))
        name = meta.get("name")
        if not name:
            yield Unnamed(src, f"{src.kind} metadata.name", name, "a name: pods are reported by name")
            continue
        key = (src.kind, str(meta.get("namespace") or "default"), str(name))
        first = seen.setdefault(key, src)
        if first is not src:
            allowed = f"one object per kind, namespace and name (the same is at {first.where})"
            yield Unnamed(src, f"{src.kind} {key[1]}/{key[2]}", src.where, allowed, first)


def read_workload(src: Source) -> Workload | None:
    """The pod of a Pod, or the pod template of a controller; None for other kinds."""
    obj = src.obj
    kind = obj.get("kind")
    if kind not in WORKLOAD_KINDS:
        return None
    meta = mapping(obj.get("metadata"))
    spec = mapping(obj.get("spec"))
    pod_meta = meta
    replicas: Any = None
    selector: Any = None
    if kind != "Pod":
        selector = spec.get("selector")
        if kind == "CronJob":
            spec = mapping(mapping(spec.get("jobTemplate")).get("spec"))
        if kind in ("Job", "CronJob"):
            replicas = spec.get("parallelism", 1)
        elif kind != "DaemonSet":
            replicas = spec.get("replicas", 1)
        template = mapping(spec.get("template"))
        pod_meta, spec = mapping(template.get("metadata")), mapping(template.get("spec"))
    view = Workload(
        str(kind),
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or "unnamed"),
        mapping(pod_meta.get("labels")),
        mapping(pod_meta.get("annotations")),
        spec,
        src,
        selector=selector,
        controller=_controller(meta) if kind == "Pod" else None,
    )
    if replicas is not None:
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0:
            view.replicas = replicas
        else:
            field_name = "spec.parallelism" if kind in ("Job", "CronJob") else "spec.replicas"
            view.problems.append(Problem(MALFORMED, field_name, replicas, "a whole number >= 0"))
            view.replicas = 0
    _read_containers(view)
    _check_gpu_request(view)
    return view
