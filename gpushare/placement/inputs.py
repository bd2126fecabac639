"""Plain Kubernetes YAML in, the dry-run model out.

`kubectl get nodes -o yaml` and `kubectl get pods -A -o yaml` are valid inputs as they are: List
documents and multi-document files both work. Workloads and Nodes are read by
`gpushare.kube` (the same readers `validate` uses); here controllers become their pods in order
(`<name>-<i>`, a DaemonSet one pod per node it admits) and a pod the profile refuses becomes an invalid
pod, its reason worded and numbered as `gpushare validate` reports it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpushare import process
from gpushare.domain import labels, products
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.domain.labels import Placement
from gpushare.domain.products import MIB_PER_UNIT
from gpushare.domain.sizes import MAX_PODS
from gpushare.errors import InputError
from gpushare.kube import ledger, podspec, workloads
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.kube.nodes import NodeInfo, read_node
from gpushare.kube.podspec import Requirement, SelectorError, Taint, Toleration
from gpushare.kube.workloads import Workload, read_workload
from gpushare.placement import priorities
from gpushare.placement.admission import Quota, read_quotas
from gpushare.placement.model import Gpu, Node, Pod, Semantics, with_changes
from gpushare.placement.plugins import nodepreferavoidpods, nodeunschedulable
from gpushare.placement.plugins.podtopologyspread import TEMPLATE_HASH, Owners, soft_constraints
from gpushare.placement.pluginsets import Profile, profile
from gpushare.policy import neverruns
from gpushare.policy.engine import ClusterFacts, Finding


def invalid_reason(view: Workload, plugins: Profile) -> str | None:
    """The first problem the profile refuses, in the words and with the rule ID `gpushare validate` uses."""
    for problem in view.problems:
        if problem.rule in plugins.refuses:
            return problem._replace(field=view.located(problem.field)).message
    return None


def bind_error(view: Workload, plugins: Profile, scheduler_name: str) -> str:
    """The condition of a pod whose bind fails on any node (`Pod.bind_error`), in the modelled minor's words: one
    that names gpu-mem with none over its containers, scheduled through the extender."""
    if (
        not plugins.gpus.fails_deviceless_bind
        or scheduler_name != plugins.semantics.served_scheduler
        or not any(p.rule == workloads.NO_DEVICE for p in view.problems)
    ):
        return ""
    return plugins.scheduler.extender_bind_failure("<the extender's urlPrefix>")


def to_pod(
    view: Workload,
    plugins: Profile,
    unit_ratio: tuple[int, int],
    owners: Owners | None = None,
    pod_labels: dict[str, str] | None = None,
    controller: tuple[str, str, str, str] | None = None,
    namespaces: dict[str, dict[str, str]] | None = None,
    template: int = 0,
    classes: Mapping[str, priorities.PriorityClass] | None = None,
) -> Pod:
    """The model of one pod; a problem the profile refuses makes it invalid, with its reason.

    With `owners` the pod is one to place: its spreading is worked out (a pod already bound needs none).
    `pod_labels` and `controller` stand in for what a controller would give the pods it creates."""
    reason = invalid_reason(view, plugins)
    if reason is not None:
        return _invalid(view, reason, template)
    spec = view.spec
    scheduler = plugins.scheduler
    own_labels = pod_labels if pod_labels is not None else {str(k): str(v) for k, v in view.labels.items()}
    controller = controller or view.controller
    try:
        read = podspec.constraints(spec, view.namespace, own_labels, scheduler, spreading=owners is not None)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return _invalid(view, f"malformed pod spec: {exc} [{workloads.MALFORMED}]", template)
    spread: tuple[podspec.SpreadConstraint, ...] = ()
    spread_own = False
    if owners is not None:
        spread, spread_own = soft_constraints(
            read.soft_spread, read.spreads, view.namespace, own_labels, controller, owners, scheduler
        )
    held = _ledger(view.annotations, plugins, unit_ratio)
    requests, nz_cpu, nz_memory = view.pod.as_scheduled(scheduler.counts_sidecars)
    priority = priorities.admitted(spec, classes or priorities.SYSTEM, running=owners is None)
    scheduler_name = str(spec.get("schedulerName") or products.DEFAULT_SCHEDULER_NAME)
    return Pod(
        view.namespace,
        view.name,
        gpu_mem=_rescale(view.gpu_mem, unit_ratio),
        gpu_count=view.gpu_count if plugins.multi_gpu else 1,
        core=view.core,
        cpu=requests.get("cpu", 0),
        memory=requests.get("memory", 0),
        node_gpu_mem=_rescale(requests.get(labels.GPU_MEM, 0), unit_ratio),
        node_core=requests.get(labels.GPU_CORE, 0),
        other=tuple(sorted((r, n) for r, n in requests.items() if r not in _MODELLED and n)),
        node_selector=read.node_selector,
        affinity=read.affinity,
        tolerations=read.tolerations,
        node=spec.get("nodeName") or None,
        gpu_held=held,
        source=view.source.where,
        template=template,
        labels=tuple(sorted(own_labels.items())),
        nz_cpu=nz_cpu,
        nz_memory=nz_memory,
        images=tuple(
            podspec.normalized_image(i)
            for i in (view.pod.init_images + view.pod.images if scheduler.images_include_init else view.pod.images)
        ),
        preferred=read.preferred,
        spread=spread,
        spread_own=spread_own,
        hard_spread=read.hard_spread,
        pod_affinity=read.pod_affinity,
        ns_labels=tuple(sorted(namespace_labels(view.namespace, namespaces or {}, scheduler).items())),
        scheduler_name=scheduler_name,
        owner=(controller[1], controller[3]) if controller and controller[1] in nodepreferavoidpods.KINDS else None,
        host_ports=read.host_ports,
        priority=priority.value,
        preempts=priority.preempts,
        started=str(mapping(view.source.obj.get("status")).get("startTime") or ""),
        created=_created(view),
        bind_error=bind_error(view, plugins, scheduler_name) if owners is not None else "",
    )


def _ledger(
    annotations: Mapping[str, Any], plugins: Profile, unit_ratio: tuple[int, int]
) -> tuple[tuple[int, int], ...] | None:
    """What the scheduler wrote on a bound pod, as the profile's scheduler reads it back (`kube.ledger.held`): the
    GPUs it chose and the units on each, in the model's unit."""
    found = ledger.held(annotations, plugins.gpus.grammar)
    return None if found is None else tuple((index, _rescale(units, unit_ratio)) for index, units in found)


#: Templates `_Alike` keeps per namespace, and the lookups after which a hit rate below one in four stops it.
_KEPT = 8
_TRIAL = 512


class _Alike:
    """Running pods modelled as copies of one read before them where they differ from it only in what each pod
    has of its own (name, node, the extender's annotations, start time): a fleet's pods are the replicas of a few
    templates, and gpushare's readers cut them to what it reads (`kube.shapes`), so most are such copies, and a
    copy costs a comparison of the spec instead of reading it. Kept per namespace, the last few templates met;
    where few pods are copies (documents read whole: each pod's service-account volume has a name of its own),
    it stops looking."""

    def __init__(self, plugins: Profile, ratio: tuple[int, int]) -> None:
        self.plugins, self.ratio = plugins, ratio
        self.seen: dict[str, list[tuple[dict[str, Any], dict[str, Any], Pod]]] = {}
        self.lookups = self.hits = 0
        self.on = True

    def copy(self, src: Source) -> Pod | None:
        """The pod as a copy of a template met before, or None (then it is read whole and `keep` is offered it)."""
        if not self.on:
            return None
        meta, spec = mapping(src.obj.get("metadata")), mapping(src.obj.get("spec"))
        node = spec.get("nodeName")
        kept = self.seen.get(str(meta.get("namespace") or "default"))
        if kept is None or not isinstance(node, str):
            return None
        self.lookups += 1
        for i, (seen_meta, seen_spec, pod) in enumerate(kept):
            if _same(spec, seen_spec, "nodeName") and _same(meta, seen_meta, "name", "annotations"):
                self.hits += 1
                if i:
                    kept.insert(0, kept.pop(i))
                return with_changes(
                    pod,
                    name=str(meta.get("name") or "unnamed"),
                    node=node or None,
                    gpu_held=_ledger(mapping(meta.get("annotations")), self.plugins, self.ratio),
                    source=src.where,
                    started=str(mapping(src.obj.get("status")).get("startTime") or ""),
                )
        if self.lookups >= _TRIAL and self.hits * 4 < self.lookups:
            self.on = False
        return None

    def keep(self, src: Source, pod: Pod) -> None:
        """A pod read whole becomes a template (a valid one: an invalid pod's reason may name it)."""
        if self.on and pod.invalid is None:
            meta = mapping(src.obj.get("metadata"))
            kept = self.seen.setdefault(str(meta.get("namespace") or "default"), [])
            kept.insert(0, (meta, mapping(src.obj.get("spec")), pod))
            del kept[_KEPT:]


#: What no document holds: a key `_same` finds in one mapping and not the other.
_ABSENT = object()


def _created(view: Workload) -> str:
    """A Pod's creationTimestamp: it exists (a controller's is not its pods', which are yet to be made)."""
    if view.kind != "Pod":
        return ""
    return str(mapping(view.source.obj.get("metadata")).get("creationTimestamp") or "")


def _same(a: Mapping[str, Any], b: Mapping[str, Any], *own: str) -> bool:
    """Equal but for the keys `own` (each object's own values)."""
    if len(a) - sum(k in a for k in own) != len(b) - sum(k in b for k in own):
        return False
    return all(k in own or b.get(k, _ABSENT) == v for k, v in a.items())


def _invalid(view: Workload, reason: str, template: int) -> Pod:
    return Pod(view.namespace, view.name, invalid=reason, source=view.source.where, template=template)


#: Resources the model holds in fields of their own; every other one a pod requests is checked generically.
_MODELLED = frozenset(("cpu", "memory", "pods", labels.GPU_MEM, labels.GPU_CORE, labels.GPU_COUNT))


def _rescale(units: int, ratio: tuple[int, int]) -> int:
    """Requests in the inventory's unit, in the simulated unit: rounded up (a request never shrinks)."""
    return math.ceil(units * ratio[0] / ratio[1]) if units and ratio[0] != ratio[1] else units


def node_model(info: NodeInfo, unhealthy: dict[str, set[int]], plugins: Profile, ratio: tuple[int, int]) -> Node:
    src = info.source
    if info.problems:
        problem = info.problems[0]
        raise InputError(f"Node {info.name} {problem.field}", problem.value, f"{problem.allowed} ({src.where})")
    gpu_cap, gpu_alloc = info.gpu_mem, info.gpu_mem_allocatable
    gpu_count = plugins.gpus.devices(gpu_cap, info.gpu_count)
    per_gpu = gpu_cap // gpu_count if gpu_count else 0
    if ratio[0] != ratio[1]:
        per_gpu = per_gpu * ratio[0] // ratio[1]
        gpu_alloc = gpu_alloc * ratio[0] // ratio[1]
    bad = unhealthy.get(info.name, set())
    core_per_gpu = info.core // gpu_count if gpu_count and plugins.compute else 0
    gpus = [Gpu(i, per_gpu, i not in bad, core_total=core_per_gpu) for i in range(gpu_count)]
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", ""))) for t in info.taints
    )
    mode = info.labels.get(labels.SCHEDULE_LABEL, labels.UNLABELLED_MODE if gpu_cap else "")
    label = info.labels.get(labels.PLACEMENT_LABEL)
    placement: Placement = (
        "spread" if label == "spread" else "binpack" if label == "binpack" else plugins.semantics.placement
    )
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
        avoid=info.avoided,
    )
    node.refresh_room()
    return node


def _image_states(nodes: list[Node], infos: list[NodeInfo]) -> None:
    """The scheduler cache's image states, as ImageLocality reads them: an image's size times the share of all
    nodes that hold it, on each node that holds it.

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


def namespace_labels(
    namespace: str, objects: Mapping[str, Mapping[str, str]], scheduler: ScoringProfile
) -> dict[str, str]:
    """A namespace's labels as the scheduler's lister gives them (pod affinity's namespaceSelector reads them): the
    Namespace object's, with the name label the API server sets on every namespace from 1.21; empty for one not in
    the inputs."""
    found = dict(objects.get(namespace, {}))
    if scheduler.adds_namespace_name_label:
        found.setdefault("kubernetes.io/metadata.name", namespace)
    return found


@dataclass
class Inventory:
    nodes: list[Node]
    existing: list[Pod]
    new: list[Pod]
    ignored: int = 0  # documents of other kinds
    quotas: list[Quota] = field(default_factory=list)  # ResourceQuota objects, which admit the new pods
    budgets: list[priorities.DisruptionBudget] = field(default_factory=list)  # what preemption weighs
    notes: list[str] = field(default_factory=list)  # what the inputs leave the run to assume
    #: validate's errors on the pods to place that the profile does not refuse, and on the nodes (`neverruns`).
    findings: list[Finding] = field(default_factory=list)
    #: The pods of the workloads read last but held out of the queue (`build`'s `held`): templates whose replicas a
    #: planner adds, read as the pending ones were (their controllers count for spreading).
    held: list[Pod] = field(default_factory=list)
    #: How its objects were read, to read one more the same way (a live cluster's next event).
    reading: Reading | None = None


#: Pod fields with few values across a fleet (`Reading._shared`), and how many values are kept at most: a
#: watch reads pods for as long as it runs, and the values of pods long deleted are let go when the table is full.
_SHARED_FIELDS = ("namespace", "labels", "gpu_held", "node", "gpu_mem", "created", "ask")
_SHARED_MOST = 200_000


@dataclass
class Reading:
    """What a fleet's pods and nodes are read against: the profile, the unit's ratio, the controllers and Services
    (spreading), the Namespaces' labels, the PriorityClasses and the GPUs marked unhealthy. Kept with the model so a
    pod or node that arrives later (`gpushare watch`'s events) is modelled exactly as the ones read with it were."""

    plugins: Profile
    ratio: tuple[int, int]
    owners: Owners
    namespaces: dict[str, dict[str, str]]
    classes: Mapping[str, priorities.PriorityClass]
    unhealthy: dict[str, set[int]]
    #: Running pods read as copies of one read before them (`_Alike`): a fleet's pods share a few templates.
    alike: _Alike | None = None
    #: One object for each value pods share (a namespace, labels, images, a request), for pods read one by one.
    shared: dict[Any, Any] = field(default_factory=dict)

    def pod(self, src: Source) -> Pod | None:
        """One Pod as the fleet's were read: a bound one as running (charged by its annotations; a copy of a like
        one read before, as `build` reads them), an unbound one as one to place (its spreading worked out). None
        for what is no pod."""
        if self.alike is None:
            self.alike = _Alike(self.plugins, self.ratio)
        copied = self.alike.copy(src) if src.kind == "Pod" else None
        if copied is not None:  # its template's values are shared already; what the copy has of its own, here
            table = self._table()
            copied.node = table.setdefault(copied.node, copied.node)
            copied.gpu_held = table.setdefault(copied.gpu_held, copied.gpu_held)
            return copied
        view = read_workload(src)
        if view is None or view.kind != "Pod":
            return None
        if view.spec.get("nodeName"):
            pod = self._shared(to_pod(view, self.plugins, self.ratio, namespaces=self.namespaces, classes=self.classes))
            self.alike.keep(src, pod)
            return pod
        return self._shared(
            next(_pods(view, [], self.plugins, self.ratio, self.owners, self.namespaces, 0, self.classes))
        )

    def _shared(self, pod: Pod) -> Pod:
        """The pod holding the objects other pods hold for equal values: a fleet read pod by pod (a live cluster's)
        holds each namespace, label set and `Ask` (requests, images, constraints) once, as `build`'s copies do."""
        table = self._table()
        for name in _SHARED_FIELDS:
            value = getattr(pod, name)
            setattr(pod, name, table.setdefault(value, value))
        return pod

    def _table(self) -> dict[Any, Any]:
        if len(self.shared) >= _SHARED_MOST:
            self.shared = {}
        return self.shared

    def node(self, src: Source) -> Node | None:
        """One Node as the fleet's were read (None for what is no Node); an invalid one raises InputError."""
        info = read_node(src)
        return None if info is None else node_model(info, self.unhealthy, self.plugins, self.ratio)


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


def nodes_of(
    node_docs: list[Source], sources: Iterable[Source], semantics: Semantics, input_unit: str | None = None
) -> list[Node]:
    """The nodes made afresh from their manifests, the GPUs the ConfigMaps among `sources` mark unhealthy marked
    again: a planner runs the placement again on them with pod models it read once (`dataclasses.replace` of the
    inventory's nodes)."""
    unhealthy = [s for s in sources if s.kind == "ConfigMap"]
    return build(node_docs, unhealthy, [], semantics, input_unit).nodes


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
    held: int = 0,
) -> Inventory:
    """The model of the fleet; existing pods are charged to their nodes, DaemonSets expanded per eligible node.
    With `consume`, the workload list is emptied as its objects are modelled, so a fleet's documents and its
    model are not both held whole (the caller's last use of them); the last `held` workloads are modelled but not
    queued (`Inventory.held`). The model is made with the cyclic collector paused (`process`): it holds no
    cycles, and the collector would otherwise walk it again and again as it grows (a tenth of a headroom answer at
    100,000 running pods, called from Python)."""
    with process.paused():
        return _build(node_docs, existing_docs, workload_docs, semantics, input_unit, consume, held)


def _build(
    node_docs: list[Source],
    existing_docs: list[Source],
    workload_docs: list[Source],
    semantics: Semantics,
    input_unit: str | None,
    consume: bool,
    held: int = 0,
) -> Inventory:
    ratio = unit_ratio(input_unit or semantics.gpu_memory_unit, semantics)
    plugins = profile(semantics)
    # what the cluster holds besides pods (most documents are pods: the readers of the rest look at these only)
    state = [s for s in existing_docs + workload_docs if s.obj.get("kind") != "Pod"]
    everything = node_docs + state
    unhealthy = _unhealthy(everything)
    infos = [info for info in (read_node(s) for s in node_docs) if info is not None]
    facts = ClusterFacts(
        gpu_memory_unit=input_unit or semantics.gpu_memory_unit,
        scheduler_name=semantics.served_scheduler,
        semantics=semantics.name,
        nodes=infos,
    )
    findings = neverruns.of_nodes(infos, facts)
    nodes = [node_model(info, unhealthy, plugins, ratio) for info in infos]
    for i, node in enumerate(nodes):
        node.id = i
    _image_states(nodes, infos)
    owners = Owners()
    for src in state:  # what the cluster will hold: its Services and pod controllers
        owners.add(src)
    namespaces = {
        str(mapping(s.obj.get("metadata")).get("name", "")): {
            str(k): str(v) for k, v in mapping(mapping(s.obj.get("metadata")).get("labels")).items()
        }
        for s in everything
        if s.kind == "Namespace"
    }
    quotas = read_quotas(state, ratio)
    classes = priorities.read_classes(everything)
    budgets = priorities.read_budgets(state)
    del everything, state
    existing: list[Pod] = []
    alike = _Alike(plugins, ratio)
    for src in existing_docs:
        if src.obj.get("kind") != "Pod" or mapping(src.obj.get("status")).get("phase") in ("Succeeded", "Failed"):
            continue
        pod = alike.copy(src)
        if pod is None:
            view = read_workload(src)
            if view is None:
                continue
            pod = to_pod(view, plugins, ratio, namespaces=namespaces, classes=classes)
            alike.keep(src, pod)
        existing.append(pod)
    unknown: Counter[str] = Counter()
    new: list[Pod] = []
    kept: list[Pod] = []
    ignored = 0
    first_held = len(workload_docs) - held
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
        note = priorities.admitted(view.spec, classes, running=False).note
        if note:
            unknown[note] += 1
        if invalid_reason(view, plugins) is None:  # an invalid pod is reported as such
            findings += neverruns.of_workload(view, facts)
        pods = _pods(view, nodes, plugins, ratio, owners, namespaces, template, classes)
        (kept if template > first_held else new).extend(pods)
    notes = [
        f"{note} (named by {count} workloads): their pods are taken to have priority 0; give the PriorityClass "
        "(--existing) for the scheduling order and preemption to be modelled"
        for note, count in sorted(unknown.items())
    ]
    reading = Reading(plugins, ratio, owners, namespaces, classes, unhealthy, alike)
    return Inventory(nodes, existing, new, ignored, quotas, budgets, notes, findings, kept, reading)


def _taken(docs: list[Source], consume: bool) -> Iterator[Source]:
    """Each document in order; with `consume`, each is also dropped from the list as it is handed out."""
    if not consume:
        yield from docs
        return
    docs.reverse()
    while docs:
        yield docs.pop()


#: Kinds among the workloads that describe the cluster rather than pods to place (read, not counted as ignored).
_CLUSTER_STATE = (
    "Node",
    "ConfigMap",
    "Service",
    "Namespace",
    "ResourceQuota",
    priorities.PRIORITY_CLASS,
    priorities.DISRUPTION_BUDGET,
)


def _pods(
    view: Workload,
    nodes: list[Node],
    plugins: Profile,
    ratio: tuple[int, int],
    owners: Owners,
    namespaces: dict[str, dict[str, str]],
    template: int = 0,
    classes: Mapping[str, priorities.PriorityClass] | None = None,
) -> Iterator[Pod]:
    """The pods a Pod or controller stands for, in order, labelled and owned as their controller would make them."""
    template_labels = {str(k): str(v) for k, v in view.labels.items()}
    if view.kind == "Pod":
        yield to_pod(view, plugins, ratio, owners, namespaces=namespaces, template=template, classes=classes)
        return
    pod_labels, controller = dict(template_labels), None
    if view.kind == "Deployment":
        template_hash = owners.template_hash(view.namespace, view.name)
        pod_labels[TEMPLATE_HASH] = template_hash
        rs_name = f"{view.name}-{template_hash}"
        controller = ("apps/v1", "ReplicaSet", rs_name, "")
        key = (view.namespace, "ReplicaSet", rs_name)
        if key not in owners.controllers:
            try:
                selector = (
                    podspec.parse_selector(view.selector, "spec.selector")
                    if view.selector is not None
                    else (podspec.from_set(template_labels))
                )
            except SelectorError:
                selector = podspec.NOTHING
            owners.controllers[key] = selector.add(podspec.from_set({TEMPLATE_HASH: template_hash}).requirements)
    elif view.kind in ("ReplicaSet", "StatefulSet"):
        controller = ("apps/v1", view.kind, view.name, "")
    pod = to_pod(view, plugins, ratio, owners, pod_labels, controller, namespaces, template, classes)
    if view.kind == "DaemonSet" and not pod.invalid:
        yield from _daemon_pods(pod, nodes, plugins)
    elif view.replicas is None or pod.invalid:  # a controller that is invalid as a whole
        yield pod
    else:
        for i in range(view.replicas):
            yield replica(pod, f"{view.name}-{i}", view.kind)


STATEFULSET_POD_NAME = "statefulset.kubernetes.io/pod-name"


def replica(pod: Pod, name: str, kind: str) -> Pod:
    """Another replica of a controller's pod, named (and, a StatefulSet's, labelled: each names itself in a label)
    as its controller makes it."""
    if kind != "StatefulSet":
        return with_changes(pod, name=name)
    return with_changes(pod, name=name, labels=tuple(sorted({**dict(pod.labels), STATEFULSET_POD_NAME: name}.items())))


_DAEMON_TOLERATIONS = (Toleration(nodeunschedulable.TAINT.key, "Exists", None, "NoSchedule"),)


def _daemon_pods(template: Pod, nodes: list[Node], plugins: Profile) -> Iterator[Pod]:
    """A DaemonSet's pods: one per node its selector, affinity and tolerations admit, pinned there."""
    probe = with_changes(template, tolerations=template.tolerations + _DAEMON_TOLERATIONS)
    for node in nodes:
        if plugins.static_rejection(node, probe) is None:
            pin = (Requirement("metadata.name", "In", (node.name,), field=True),)
            terms = tuple(term + pin for term in template.affinity) or (pin,)
            yield with_changes(probe, name=f"{template.name}-{node.name}", affinity=terms, template=0)
