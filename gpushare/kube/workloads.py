"""Pods and controllers, read once for every command: which pods an object stands for, and what is wrong with them.

`place`, `validate` and `preflight` all read workloads here, so a pod means the same to each and a
malformed one is reported with the same rule ID everywhere. A controller's pod template is read as a pod; the
pod spec itself is read by `gpushare.kube.podspec`. Reading is lenient: a bad value becomes a `Problem` (rule ID,
field, value, what is allowed), never an exception; ACK's rules on what one pod may ask are checked here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpushare.domain import labels
from gpushare.kube import podspec
from gpushare.kube.documents import Source
from gpushare.kube.fields import Problem, mapping, sequence
from gpushare.kube.podspec import MALFORMED as MALFORMED  # the rules and place name the reading's problems by it
from gpushare.kube.podspec import Requests

CONTROLLERS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "DaemonSet")
WORKLOAD_KINDS = ("Pod", *CONTROLLERS)

# Rule IDs of the problems found while reading (their entries, with severity and remediation, are in
# gpushare.policy.rules.workloads).
CORE_STEP = "GW202"
CORE_NEEDS_MEM = "GW203"
GPU_COUNT = "GW204"
MULTI_WITH_CORE = "GW205"
NO_DEVICE = "GW217"
SUFFIXED = "GW218"

#: Fields of a controller's own, not of its pod template: a finding on them names them as they are.
CONTROLLER_FIELDS = ("apiVersion", "kind", "metadata.name", "metadata.namespace", "spec.replicas", "spec.parallelism")
#: Where each controller keeps its pod template.
TEMPLATES = {"CronJob": "spec.jobTemplate.spec.template."} | {
    kind: "spec.template." for kind in CONTROLLERS if kind != "CronJob"
}

CORE_FIELD = f"resources.limits.{labels.GPU_CORE}"
MEM_FIELD = f"resources.limits.{labels.GPU_MEM}"


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
    #: What the pod spec asks for (`podspec.read`): its containers' requests, images and environment.
    pod: Requests = field(default_factory=Requests)
    #: A controller's own `spec.selector` (the pods it owns), as written; None for a Pod.
    selector: Any = None
    #: A Pod's controller (ownerReferences entry with controller: true): (apiVersion, kind, name, uid).
    controller: tuple[str, str, str, str] | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def gpu_mem(self) -> int:
        return self.pod.gpu_mem

    @property
    def core(self) -> int:
        return self.pod.core

    @property
    def env(self) -> list[tuple[str, str, Any]]:
        return self.pod.env

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

    def located(self, field: str) -> str:
        """The path of a pod field in the object as written, for findings a user looks up in the file: a
        controller's pod sits under its template (`spec.template.spec.schedulerName` in a Deployment). Totals over
        the containers (`resources.limits.*`) and the controller's own fields stay as they are."""
        template = TEMPLATES.get(self.kind)
        if template is None or field in CONTROLLER_FIELDS or field.startswith("resources."):
            return field
        if field.startswith(("containers[", "initContainers[")):
            return f"{template}spec.{field}"
        return template + field

    def problems_of(self, rule: str) -> Iterator[tuple[str, Any, str]]:
        return (p.offence for p in self.problems if p.rule == rule)


def units_instead(amount: int) -> str:
    """What a byte count written for aliyun.com/gpu-mem should have been: 4Gi -> 'a count of units: 4 (in 1GiB
    units; 32 in 128MiB units)'."""
    mib, rest = divmod(amount, 1 << 20)
    if rest or not mib:
        return "a count of units (1 is 1 GiB in 1GiB units)"
    if mib % 1024 == 0:
        return f"a count of units: {mib // 1024} (in 1GiB units; {mib // 128} in 128MiB units)"
    if mib % 128 == 0:
        return f"a count of units: {mib // 128} (in 128MiB units; {mib} in MiB units)"
    return f"a count of units: {mib} (in MiB units)"


def _check_gpu_request(view: Workload) -> None:
    """ACK's rules on what one pod may ask (seed 002, multi-card sharing): compute, gpu-count."""
    core, mem = view.core, view.gpu_mem
    unreadable = any(p.rule == MALFORMED and p.field.endswith(labels.GPU_MEM) for p in view.problems)
    if view.pod.names_gpu_mem and not mem and not core and not unreadable:
        init = view.pod.requests.get(labels.GPU_MEM, 0)  # node level: the largest init container's, here
        where = (
            f" (init containers ask {init}: kube-scheduler counts that at node level, the extender counts the "
            "containers only)"
            if init
            else ""
        )
        view.problems.append(
            Problem(
                NO_DEVICE,
                MEM_FIELD,
                0,
                f"an amount above 0 over the containers, or no {labels.GPU_MEM} at all{where}: kube-scheduler "
                "chooses a node, the extender's bind finds no device for 0 and fails on every retry, so the pod "
                "never runs",
            )
        )
    for field_name, value, amount in view.pod.suffixed:
        allowed = f"{units_instead(amount)}: it counts units of GPU memory, not bytes ({value!r} is {amount:,} units)"
        view.problems.append(Problem(SUFFIXED, field_name, value, allowed))
    # each container's share is a multiple of 5 from 5 to 100 (seed 002: the product checks every container, so
    # 3% + 2% is refused though the pod's 5% would pass), and one GPU holds at most 100% in all
    steps = [(c, n) for c, n in view.pod.core_by_container if n % 5 or not 5 <= n <= 100]
    for cname, amount in steps:
        field = f"containers[{cname}].{CORE_FIELD}"
        view.problems.append(Problem(CORE_STEP, field, amount, "a multiple of 5 from 5 to 100 (percent of one GPU)"))
    if core > 100 and not steps:
        view.problems.append(Problem(CORE_STEP, CORE_FIELD, core, "at most 100 in all (one GPU's compute)"))
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


class Unnamed(NamedTuple):
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
    node_name = spec.get("nodeName")
    if node_name is not None and not isinstance(node_name, str):
        view.problems.append(Problem(MALFORMED, "spec.nodeName", node_name, "a node name (a string)"))
    view.pod = podspec.read(spec)
    view.problems += view.pod.problems
    _check_gpu_request(view)
    return view
