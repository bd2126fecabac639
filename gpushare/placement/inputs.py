"""Plain Kubernetes YAML in, the dry-run model out.

`kubectl get nodes -o yaml` and `kubectl get pods -A -o yaml` are valid inputs as they are: List
documents and multi-document files both work. Workloads and Nodes are read by
`gpushare.kube` (the same readers `validate` uses); here controllers become their pods in order
(`<name>-<i>`, a DaemonSet one pod per node it admits) and a pod the semantics refuses becomes an invalid
pod, its reason worded and numbered as `gpushare validate` reports it.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from gpushare.domain import labels, profiles
from gpushare.domain.labels import Placement
from gpushare.domain.profiles import MIB_PER_UNIT
from gpushare.errors import InputError
from gpushare.kube import selectors, workloads
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping, sequence
from gpushare.kube.nodes import NodeInfo, read_node
from gpushare.kube.selectors import SelectorError
from gpushare.kube.workloads import Workload, read_workload
from gpushare.placement import interpod, plugins, spreading
from gpushare.placement.model import Gpu, Node, Pod, Requirement, Semantics, Taint, Toleration, with_changes
from gpushare.placement.spreading import Owners

#: Node annotation NodePreferAvoidPods reads (v1.PreferAvoidPodsAnnotationKey).
PREFER_AVOID_PODS = "scheduler.alpha.kubernetes.io/preferAvoidPods"

#: Problems that make a pod invalid under each semantics: upstream knows no compute nor gpu-count label.
_REFUSED = {
    "upstream": {workloads.MALFORMED},
    "ack": {
        workloads.MALFORMED,
        workloads.CORE_STEP,
        workloads.CORE_NEEDS_MEM,
        workloads.GPU_COUNT,
        workloads.MULTI_WITH_CORE,
    },
}


def invalid_reason(view: Workload, semantics: Semantics) -> str | None:
    """The first problem the semantics refuses, in the words and with the rule ID `gpushare validate` uses."""
    for problem in view.problems:
        if problem.rule in _REFUSED[semantics.name]:
            return problem.message
    return None


def _term(term: dict[str, Any]) -> tuple[Requirement, ...]:
    """A NodeSelectorTerm: its matchExpressions and matchFields, ANDed."""
    result = []
    for part in ("matchExpressions", "matchFields"):
        for i, e in enumerate(term.get(part) or []):
            key, operator = _strings((e["key"], e["operator"]), ("key", "operator"), part, i)
            result.append(
                Requirement(key, operator, tuple(str(v) for v in e.get("values") or ()), part == "matchFields")
            )
    return tuple(result)


def _strings(values: tuple[Any, ...], names: tuple[str, ...], field: str, index: int) -> tuple[Any, ...]:
    """Fields Kubernetes types as strings (or leaves out) of entry `index` of a list `field`: the API server refuses
    anything else, and the model hashes them."""
    for value, name in zip(values, names, strict=True):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{field}[{index}].{name}: {json.dumps(value, default=str)} is not a string")
    return values


def _node_affinity(spec: dict[str, Any]) -> dict[str, Any]:
    return (spec.get("affinity") or {}).get("nodeAffinity") or {}


def _affinity(spec: dict[str, Any]) -> tuple[tuple[Requirement, ...], ...]:
    """Required node affinity: terms ORed. A term without requirements matches no node (component-helpers
    nodeaffinity), so it is left out; a selector left with no term matches nothing (`NO_NODE`)."""
    required = _node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return ()
    terms = tuple(t for t in (_term(term) for term in required.get("nodeSelectorTerms") or []) if t)
    return terms or NO_NODE


#: Required node affinity no node satisfies (every term empty).
NO_NODE: tuple[tuple[Requirement, ...], ...] = ((Requirement("metadata.name", "In", (), field=True),),)


def _preferred(spec: dict[str, Any]) -> tuple[tuple[int, tuple[Requirement, ...]], ...]:
    """Preferred node affinity: (weight, requirements), terms of weight 0 or without requirements left out."""
    result = []
    for entry in _node_affinity(spec).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        weight, term = int(entry.get("weight") or 0), _term(entry.get("preference") or {})
        if weight and term:
            result.append((weight, term))
    return tuple(result)


def normalized_image(name: str) -> str:
    """ImageLocality's lookup name: `:latest` added when the reference names no tag."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


def _tolerations(spec: dict[str, Any]) -> tuple[Toleration, ...]:
    """The pod's tolerations, one shared tuple for each distinct set."""
    raw = tuple(
        (t.get("key"), t.get("operator", "Equal"), t.get("value"), t.get("effect"))
        for t in spec.get("tolerations") or ()
        if isinstance(t, dict)
    )
    if not raw:
        return ()
    try:
        found = _TOLERATIONS.get(raw)
    except TypeError:  # a list or mapping where a string belongs: said below
        found = None
    if found is None:
        found = tuple(Toleration(*_strings(t, Toleration._fields, "spec.tolerations", i)) for i, t in enumerate(raw))
        if len(_TOLERATIONS) < _KEPT:
            _TOLERATIONS[raw] = found
    return found


#: Each distinct set of tolerations, once: pods of a workload (and most pods, which carry only the two defaults
#: the admission controller adds) then share one tuple, which the engine's lookups compare by identity.
_TOLERATIONS: dict[tuple[tuple[Any, ...], ...], tuple[Toleration, ...]] = {}
_KEPT = 4096


def to_pod(
    view: Workload,
    semantics: Semantics,
    unit_ratio: tuple[int, int],
    owners: Owners | None = None,
    pod_labels: dict[str, str] | None = None,
    controller: tuple[str, str, str, str] | None = None,
    namespaces: dict[str, dict[str, str]] | None = None,
    template: int = 0,
) -> Pod:
    """The model of one pod; a problem the semantics refuses makes it invalid, with its reason.

    With `owners` the pod is one to place: its spreading is worked out (a pod already bound needs none).
    `pod_labels` and `controller` stand in for what a controller would give the pods it creates."""
    reason = invalid_reason(view, semantics)
    if reason is not None:
        return _invalid(view, reason, template)
    spec = view.spec
    own_labels = pod_labels if pod_labels is not None else {str(k): str(v) for k, v in view.labels.items()}
    controller = controller or view.controller
    spread: tuple[Any, ...] = ()
    spread_own = False
    hard_spread: tuple[Any, ...] = ()
    try:
        selector = spec.get("nodeSelector") or {}
        node_selector = tuple(sorted((str(k), str(v)) for k, v in selector.items()))
        affinity = _affinity(spec)
        preferred = _preferred(spec)
        tolerations = _tolerations(spec)
        pod_affinity = interpod.parse_pod_affinity(spec, view.namespace, semantics.scheduler)
        if owners is not None:
            spread, spread_own = spreading.soft_constraints(
                spec, view.namespace, own_labels, controller, owners, semantics.scheduler
            )
            hard_spread = spreading.own_constraints(spec, own_labels, semantics.scheduler, "DoNotSchedule")
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return _invalid(view, f"malformed pod spec: {exc} [{workloads.MALFORMED}]", template)
    indices = None
    raw_idx = view.annotations.get(labels.ANN_IDX)
    if raw_idx is not None and str(raw_idx).strip():
        try:
            indices = tuple(int(i) for i in str(raw_idx).split(","))
        except ValueError:
            indices = None
    requests = view.requests
    return Pod(
        view.namespace,
        view.name,
        gpu_mem=_rescale(view.gpu_mem, unit_ratio),
        gpu_count=view.gpu_count if semantics.name == "ack" else 1,
        core=view.core,
        cpu=view.cpu,
        memory=view.memory,
        node_gpu_mem=_rescale(requests.get(labels.GPU_MEM, 0), unit_ratio),
        node_core=requests.get(labels.GPU_CORE, 0),
        other=tuple(sorted((r, n) for r, n in requests.items() if r not in _MODELLED and n)),
        node_selector=node_selector,
        affinity=affinity,
        tolerations=tolerations,
        node=spec.get("nodeName") or None,
        gpu_indices=indices,
        source=view.source.where,
        template=template,
        labels=tuple(sorted(own_labels.items())),
        nz_cpu=view.nz_cpu,
        nz_memory=view.nz_memory,
        images=tuple(
            normalized_image(i)
            for i in (view.init_images + view.images if semantics.scheduler.images_include_init else view.images)
        ),
        preferred=preferred,
        spread=spread,
        spread_own=spread_own,
        hard_spread=hard_spread,
        pod_affinity=pod_affinity,
        ns_labels=tuple(
            sorted(interpod.namespace_labels(view.namespace, namespaces or {}, semantics.scheduler).items())
        ),
        scheduler_name=str(spec.get("schedulerName") or profiles.DEFAULT_SCHEDULER_NAME),
        owner=(controller[1], controller[3])
        if controller and controller[1] in ("ReplicationController", "ReplicaSet")
        else None,
    )


def _invalid(view: Workload, reason: str, template: int) -> Pod:
    return Pod(view.namespace, view.name, invalid=reason, source=view.source.where, template=template)


#: Resources the model holds in fields of their own; every other one a pod requests is checked generically.
_MODELLED = frozenset(("cpu", "memory", "pods", labels.GPU_MEM, labels.GPU_CORE, labels.GPU_COUNT))


def _rescale(units: int, ratio: tuple[int, int]) -> int:
    """Requests in the inventory's unit, in the simulated unit: rounded up (a request never shrinks)."""
    return math.ceil(units * ratio[0] / ratio[1]) if units and ratio[0] != ratio[1] else units


def parse_node(src: Source, unhealthy: dict[str, set[int]], semantics: Semantics, ratio: tuple[int, int]) -> Node:
    info = read_node(src)
    assert info is not None
    return node_model(info, unhealthy, semantics, ratio)


def node_model(info: NodeInfo, unhealthy: dict[str, set[int]], semantics: Semantics, ratio: tuple[int, int]) -> Node:
    src = info.source
    if info.problems:
        problem = info.problems[0]
        raise InputError(f"Node {info.name} {problem.field}", problem.value, f"{problem.allowed} ({src.where})")
    gpu_cap, gpu_alloc, gpu_count = info.gpu_mem, info.gpu_mem_allocatable, info.gpu_count
    if gpu_cap and not gpu_count:
        gpu_count = 1
    per_gpu = gpu_cap // gpu_count if gpu_count else 0
    if ratio[0] != ratio[1]:
        per_gpu = per_gpu * ratio[0] // ratio[1]
        gpu_alloc = gpu_alloc * ratio[0] // ratio[1]
    bad = unhealthy.get(info.name, set())
    core_per_gpu = info.core // gpu_count if gpu_count and semantics.name == "ack" else 0
    gpus = [Gpu(i, per_gpu, i not in bad, core_total=core_per_gpu) for i in range(gpu_count)] if gpu_cap else []
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", ""))) for t in info.taints
    )
    mode = info.labels.get(labels.SCHEDULE_LABEL, "share" if gpu_cap else "")
    label = info.labels.get(labels.PLACEMENT_LABEL)
    placement: Placement = "spread" if label == "spread" else "binpack" if label == "binpack" else semantics.placement
    node = Node(
        info.name,
        info.labels,
        taints,
        info.unschedulable,
        info.cpu,
        info.memory,
        info.pods,
        gpu_alloc,
        gpus,
        mode,
        placement,
        address=info.address,
        other={r: n for r, n in info.other.items() if r not in _MODELLED},
        avoid=_avoided(info),
    )
    plugins.refresh_room(node)
    return node


def _avoided(info: NodeInfo) -> frozenset[tuple[str, str]]:
    """Controllers (kind, uid) the node's preferAvoidPods annotation names; unreadable JSON avoids nothing, as in
    kube-scheduler."""
    raw = info.annotations.get(PREFER_AVOID_PODS)
    try:
        entries = json.loads(raw).get("preferAvoidPods") if isinstance(raw, str) else None
    except (ValueError, AttributeError):
        return frozenset()
    result = set()
    for entry in sequence(entries):
        ref = mapping(mapping(mapping(entry).get("podSignature")).get("podController"))
        result.add((str(ref.get("kind", "")), str(ref.get("uid", ""))))
    return frozenset(result)


def _image_scores(nodes: list[Node], infos: list[NodeInfo]) -> None:
    """ImageLocality's per-node image scores: an image's size times the share of all nodes that hold it.

    kube-scheduler's cache keeps one size per image name, the one the first node to report it gave; the dry run
    takes the first node in input order (`kubectl get nodes` lists them by name, as the scheduler's informer does
    when it starts). Its count of nodes holding an image is refreshed when a node is updated, which kubelets do every
    few minutes; the dry run counts every node."""
    holders: Counter[str] = Counter()
    sizes: dict[str, int] = {}
    for info in infos:
        for names, size in info.images:
            for name in names:
                sizes.setdefault(name, size)
        holders.update({n for names, _ in info.images for n in names})
    for node, info in zip(nodes, infos, strict=True):
        for names, _ in info.images:
            for name in names:
                node.image_scores[name] = int(sizes[name] * (holders[name] / len(nodes)))


@dataclass
class Inventory:
    nodes: list[Node]
    existing: list[Pod]
    new: list[Pod]
    ignored: int = 0  # documents of other kinds


def _unhealthy(sources: Iterable[Source]) -> dict[str, set[int]]:
    result: dict[str, set[int]] = {}
    for src in sources:
        meta = mapping(src.obj.get("metadata"))
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
    consume: bool = False,
) -> Inventory:
    """The model of the fleet; existing pods are charged to their nodes, DaemonSets expanded per eligible node.
    With `consume`, the workload list is emptied as its objects are modelled, so a fleet's documents and its
    model are not both held whole (the caller's last use of them)."""
    ratio = unit_ratio(input_unit or semantics.gpu_memory_unit, semantics)
    everything = node_docs + existing_docs + workload_docs
    unhealthy = _unhealthy(everything)
    infos = [info for info in (read_node(s) for s in node_docs) if info is not None]
    nodes = [node_model(info, unhealthy, semantics, ratio) for info in infos]
    for i, node in enumerate(nodes):
        node.id = i
    _image_scores(nodes, infos)
    owners = Owners()
    for src in existing_docs + workload_docs:  # what the cluster will hold: its Services and pod controllers
        owners.add(src)
    namespaces = {
        str(mapping(s.obj.get("metadata")).get("name", "")): {
            str(k): str(v) for k, v in mapping(mapping(s.obj.get("metadata")).get("labels")).items()
        }
        for s in everything
        if s.kind == "Namespace"
    }
    del everything
    existing: list[Pod] = []
    for src in existing_docs:
        view = read_workload(src) if src.kind == "Pod" else None
        if view is not None and mapping(src.obj.get("status")).get("phase") not in ("Succeeded", "Failed"):
            existing.append(to_pod(view, semantics, ratio, namespaces=namespaces))
    new: list[Pod] = []
    ignored = 0
    for template, src in enumerate(_taken(workload_docs, consume), start=1):
        view = read_workload(src)
        if view is None:
            ignored += src.kind not in _CLUSTER_STATE
            continue
        asked = len(new) + (view.replicas or 0)
        if asked > MAX_PODS:
            field = "spec.parallelism" if view.kind in ("Job", "CronJob") else "spec.replicas"
            raise InputError(
                f"{view.kind} {view.key} {field}", view.replicas, f"at most {MAX_PODS:,} pods in one run", src.where
            )
        new.extend(_pods(view, nodes, semantics, ratio, owners, namespaces, template))
    return Inventory(nodes, existing, new, ignored)


def _taken(docs: list[Source], consume: bool) -> Iterator[Source]:
    """Each document in order; with `consume`, each is also dropped from the list as it is handed out."""
    if not consume:
        yield from docs
        return
    docs.reverse()
    while docs:
        yield docs.pop()


#: Pods one dry run places at most: far beyond any fleet (64k GPUs x 16 pods is ~1M), well within memory.
MAX_PODS = 5_000_000


#: Kinds among the workloads that describe the cluster rather than pods to place (read, not counted as ignored).
_CLUSTER_STATE = ("Node", "ConfigMap", "Service", "Namespace")


def _pods(
    view: Workload,
    nodes: list[Node],
    semantics: Semantics,
    ratio: tuple[int, int],
    owners: Owners,
    namespaces: dict[str, dict[str, str]],
    template: int = 0,
) -> Iterator[Pod]:
    """The pods a Pod or controller stands for, in order, labelled and owned as their controller would make them."""
    template_labels = {str(k): str(v) for k, v in view.labels.items()}
    if view.kind == "Pod":
        yield to_pod(view, semantics, ratio, owners, namespaces=namespaces, template=template)
        return
    pod_labels, controller = dict(template_labels), None
    if view.kind == "Deployment":
        template_hash = owners.template_hash(view.namespace, view.name)
        pod_labels[spreading.TEMPLATE_HASH] = template_hash
        rs_name = f"{view.name}-{template_hash}"
        controller = ("apps/v1", "ReplicaSet", rs_name, "")
        key = (view.namespace, "ReplicaSet", rs_name)
        if key not in owners.controllers:
            try:
                selector = (
                    selectors.parse(view.selector, "spec.selector")
                    if view.selector is not None
                    else (selectors.from_set(template_labels))
                )
            except SelectorError:
                selector = selectors.NOTHING
            owners.controllers[key] = selector.add(
                selectors.from_set({spreading.TEMPLATE_HASH: template_hash}).requirements
            )
    elif view.kind in ("ReplicaSet", "StatefulSet"):
        controller = ("apps/v1", view.kind, view.name, "")
    pod = to_pod(view, semantics, ratio, owners, pod_labels, controller, namespaces, template)
    if view.kind == "DaemonSet" and not pod.invalid:
        yield from _daemon_pods(pod, nodes, semantics)
    elif view.replicas is None or pod.invalid:  # a controller that is invalid as a whole
        yield pod
    elif view.kind == "StatefulSet":  # each pod names itself in a label
        for i in range(view.replicas):
            labels_i = tuple(sorted({**dict(pod.labels), STATEFULSET_POD_NAME: f"{view.name}-{i}"}.items()))
            yield with_changes(pod, name=f"{view.name}-{i}", labels=labels_i)
    else:
        for i in range(view.replicas):
            yield with_changes(pod, name=f"{view.name}-{i}")


STATEFULSET_POD_NAME = "statefulset.kubernetes.io/pod-name"


_DAEMON_TOLERATIONS = (Toleration(plugins.UNSCHEDULABLE_TAINT.key, "Exists", None, "NoSchedule"),)


def _daemon_pods(template: Pod, nodes: list[Node], semantics: Semantics) -> Iterator[Pod]:
    """A DaemonSet's pods: one per node its selector, affinity and tolerations admit, pinned there."""
    probe = replace(template, tolerations=template.tolerations + _DAEMON_TOLERATIONS)
    for node in nodes:
        if plugins.static_rejection(node, probe, semantics) is None:
            pin = (Requirement("metadata.name", "In", (node.name,), field=True),)
            terms = tuple(term + pin for term in template.affinity) or (pin,)
            yield replace(probe, name=f"{template.name}-{node.name}", affinity=terms, template=0)
