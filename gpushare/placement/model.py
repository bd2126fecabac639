"""The dry-run's view of a cluster: nodes with their GPUs, and pods with what they ask for.

Built once from plain Kubernetes objects (`gpushare.placement.inputs`); the engines and the simulation
(`gpushare.placement.simulation`) change only what a node holds, through `Node.add_pod` and `Node.remove_pod`
(kube-scheduler's NodeInfo.AddPod and RemovePod), which a journal may record for an undo. The pod spec's own
types (tolerations, requirements, spread constraints, pod affinity) are the reader's, `gpushare.kube.podspec`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from gpushare.domain import cgpu, products
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.domain.labels import Placement
from gpushare.domain.minors import scoring_profile
from gpushare.domain.versions import MINORS
from gpushare.kube.podspec import HostPort, PodAffinity, Requirement, SpreadConstraint, Taint, Toleration

SemanticsName = Literal["upstream", "ack"]


#: The product each semantics models: ACK's, or the open-source stack's.
@dataclass(frozen=True)
class Semantics:
    """Which allocation rules apply: the open-source extender's, or ACK's product rules."""

    name: SemanticsName = "ack"
    placement: Placement = "binpack"  # default node choice, and GPU choice where no node label says otherwise
    gpu_memory_unit: str = products.UNIT_1GIB
    cgpu_max_pods_per_gpu: int = cgpu.MAX_PODS_PER_GPU
    #: The kube-scheduler modelled: its minor and configuration API (upstream's node scoring, the filters' words).
    scheduler: ScoringProfile = field(default_factory=lambda: scoring_profile(MINORS[-1]))
    #: The spec.schedulerName whose GPU pods gpushare serves; None: what the semantics installs by default
    #: (ACK's managed scheduler is default-scheduler, the open-source stack a secondary gpushare-scheduler).
    scheduler_name: str | None = None
    #: Among nodes tied on the best score kube-scheduler picks one at random (selectHost). None: the dry run's
    #: repeatable choice (the most GPU memory free on one device, then the name); a number: a uniform random pick
    #: from that seed, node by node (the reference engine), to sample what the random choices give.
    tie_seed: int | None = None

    @property
    def served_scheduler(self) -> str:
        return self.scheduler_name or products.default_served(self.name)


@dataclass
class Gpu:
    """One GPU of a node as the extender counts it: its memory in units (the node's divided evenly over its
    `gpu-count`), what its pods hold, its compute in percent (compute-allocation nodes), and its health."""

    index: int
    total: int  # memory units
    healthy: bool = True
    used: int = 0
    core_total: int = 0  # percent (100 on compute-allocation nodes)
    core_used: int = 0
    pods: int = 0

    @property
    def free(self) -> int:
        """Memory units left; never below 0, though running pods may over-commit a GPU."""
        return max(0, self.total - self.used) if self.healthy else 0

    @property
    def core_free(self) -> int:
        return max(0, self.core_total - self.core_used) if self.healthy else 0


@dataclass
class Node:
    """A node as kube-scheduler's cache and the extender see it: what it can allocate and what its pods use, its
    GPUs, labels and taints. Changed only by `add_pod` and `remove_pod` (through a `Simulation` outside the
    engines)."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    cpu: int  # allocatable millicores
    memory: int  # allocatable bytes
    pods: int  # allocatable pods
    gpu_mem: int  # allocatable aliyun.com/gpu-mem units (node level)
    gpus: list[Gpu]
    mode: str  # ack.node.gpu.schedule (share when the node has GPU memory and no label)
    gpu_placement: Placement
    cpu_used: int = 0
    memory_used: int = 0
    pods_used: int = 0
    gpu_mem_used: int = 0  # node-level requests, as kube-scheduler counts them
    address: str = ""  # InternalIP, for the inspect view
    mem_only_pods: int = 0  # ack: GPU pods without compute on this node
    compute_pods: int = 0  # ack: GPU pods with compute on this node
    id: int = 0
    #: Allocatable amounts of the other resources pods may request (extended resources, ephemeral-storage).
    other: dict[str, int] = field(default_factory=dict)
    other_used: dict[str, int] = field(default_factory=dict)
    #: cpu and memory requested as kube-scheduler scores them: a container without a request counts 100m / 200 MiB.
    cpu_nz_used: int = 0
    memory_nz_used: int = 0
    #: ImageLocality: each image on the node (normalised name) and its size scaled by the share of nodes holding it.
    image_scores: dict[str, int] = field(default_factory=dict)
    #: NodePreferAvoidPods: controllers (kind, uid) the node's annotation asks to keep away.
    avoid: frozenset[tuple[str, str]] = frozenset()
    #: The pods bound here, which topology spreading and pod affinity count.
    bound: list[Pod] = field(default_factory=list)
    #: The host ports they hold (NodeInfo.UsedPorts), which NodePorts checks a pod's own against.
    ports: list[HostPort] = field(default_factory=list)
    #: The largest GPU memory request one device takes now, as the open-source extender and kube-scheduler see it:
    #: the most free on a healthy device, at most what the node has left at node level; kept by `add_pod`.
    room: int = 0
    #: The devices each bound pod holds, in `bound`'s order, so preemption can give them back (`remove_pod`): a
    #: list beside `bound` rather than a dict by pod, which cost a live fleet's model 73 bytes a pod.
    held: list[tuple[Gpu, ...]] = field(default_factory=list)
    #: Each GPU alone, the devices a one-GPU pod holds: shared by the node's pods (`_kept`). Typed as tuples of any
    #: length: compiled, a `tuple[Gpu]` is held unboxed, and each read of it made a new tuple (7 MB at 150,000 pods).
    alone: tuple[tuple[Gpu, ...], ...] = field(default=(), repr=False, compare=False)
    #: Pending pods preemption nominated to this node (status.nominatedNodeName): the filters count those of at
    #: least a pod's priority as if they ran here (RunFilterPluginsWithNominatedPods).
    nominated: list[Pod] = field(default_factory=list)
    #: Bumped by every pod added or removed, so what is counted over `bound` can be kept until it changes.
    changes: int = 0
    #: PodTopologySpread's count of bound pods a selector matches, by its number for the selector and namespace:
    #: (changes, count).
    matching: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: Where each pod added or removed is recorded, for an undo (`Simulation.mark`); None: nothing records.
    journal: list[Entry] | None = field(default=None, repr=False, compare=False)

    @property
    def gpu_total(self) -> int:
        return sum(g.total for g in self.gpus)

    @property
    def gpu_used(self) -> int:
        return sum(g.used for g in self.gpus)

    @property
    def allocated(self) -> float:
        """Share of GPU memory allocated: what binpack maximises and spread minimises."""
        total = self.gpu_total
        return self.gpu_used / total if total else 0.0

    def add_pod(self, pod: Pod, gpus: Sequence[Gpu]) -> None:
        """Bind: record a bound pod's usage on the node and the GPUs it got (NodeInfo.AddPod)."""
        self.cpu_used += pod.cpu
        self.memory_used += pod.memory
        self.cpu_nz_used += pod.nz_cpu
        self.memory_nz_used += pod.nz_memory
        self.bound.append(pod)
        self.held.append(self._kept(gpus) if gpus else ())
        self.changes += 1
        if pod.host_ports:
            self.ports.extend(pod.host_ports)
        self.pods_used += 1
        self.gpu_mem_used += pod.node_gpu_mem
        for name, amount in pod.other:
            self.other_used[name] = self.other_used.get(name, 0) + amount
        if pod.wants_gpu:
            if pod.core:
                self.compute_pods += 1
            else:
                self.mem_only_pods += 1
        shares = pod.per_device
        for i, gpu in enumerate(gpus):
            gpu.used += pod.per_gpu if shares is None else shares[i]
            gpu.core_used += pod.core
            gpu.pods += 1
        self.refresh_room()
        if self.journal is not None:
            self.journal.append((self, pod, gpus, True))

    def remove_pod(self, pod: Pod) -> None:
        """A bound pod deleted (preempted): `add_pod` undone (NodeInfo.RemovePod), its devices given back."""
        at = self._at(pod)
        del self.bound[at]
        gpus = self.held.pop(at)
        self.changes += 1
        self.cpu_used -= pod.cpu
        self.memory_used -= pod.memory
        self.cpu_nz_used -= pod.nz_cpu
        self.memory_nz_used -= pod.nz_memory
        for port in pod.host_ports:
            self.ports.remove(port)
        self.pods_used -= 1
        self.gpu_mem_used -= pod.node_gpu_mem
        for name, amount in pod.other:
            self.other_used[name] -= amount
        if pod.wants_gpu:
            if pod.core:
                self.compute_pods -= 1
            else:
                self.mem_only_pods -= 1
        shares = pod.per_device
        for i, gpu in enumerate(gpus):
            gpu.used -= pod.per_gpu if shares is None else shares[i]
            gpu.core_used -= pod.core
            gpu.pods -= 1
        self.refresh_room()
        if self.journal is not None:
            self.journal.append((self, pod, gpus, False))

    def devices_of(self, pod: Pod) -> tuple[Gpu, ...]:
        """The devices a pod bound here holds (none: it is not bound here)."""
        for p, gpus in zip(self.bound, self.held, strict=True):
            if p is pod:
                return gpus
        return ()

    def _at(self, pod: Pod) -> int:
        return next(i for i, p in enumerate(self.bound) if p is pod)

    def _kept(self, gpus: Sequence[Gpu]) -> tuple[Gpu, ...]:
        """The devices a pod holds as the node keeps them: one GPU's the node's own tuple of it, shared by the pods
        on that GPU (a live fleet's model binds hundreds of thousands of pods: a list each was 88 bytes)."""
        if len(gpus) != 1:
            return tuple(gpus)
        gpu = gpus[0]
        if len(self.alone) != len(self.gpus):
            self.alone = tuple((g,) for g in self.gpus)
        found = self.alone[gpu.index] if 0 <= gpu.index < len(self.alone) else None
        return found if found is not None and found[0] is gpu else (gpu,)

    def refresh_room(self) -> None:
        most = 0
        for g in self.gpus:
            if g.healthy and g.total - g.used > most:
                most = g.total - g.used
        self.room = max(0, min(most, self.gpu_mem - self.gpu_mem_used))


@dataclass(slots=True, init=False, unsafe_hash=True)
class Ask:
    """What a pod asks of a node and of the scheduler beyond its GPU memory: equal for a workload's replicas, so
    they hold one (`Pod.ask`, shared by `with_changes` and by a fleet's reading). A live model of 150,000 pods held
    these 24 fields in every pod: 190 bytes a pod more than the one reference. Hashable, for that sharing; never
    changed once made."""

    core: int  # percent of one GPU
    cpu: int  # node-level requests, as kube-scheduler counts them: containers summed, the largest init
    memory: int  # container if larger, overhead added
    node_gpu_mem: int  # node-level aliyun.com/gpu-mem (NodeResourcesFit), counted like cpu
    node_core: int  # node-level aliyun.com/gpu-core.percentage
    #: Other resources the pod requests at node level (extended resources, ephemeral-storage), name-sorted.
    other: tuple[tuple[str, int], ...]
    node_selector: tuple[tuple[str, str], ...]
    affinity: tuple[tuple[Requirement, ...], ...]  # OR of ANDs; empty = no constraint
    tolerations: tuple[Toleration, ...]
    #: cpu and memory as kube-scheduler scores them (a container without a request counts 100m / 200 MiB).
    nz_cpu: int
    nz_memory: int
    images: tuple[str, ...]  # the containers' images, normalised as ImageLocality looks them up
    #: Preferred node affinity: (weight, requirements ANDed); terms of weight 0 or without requirements dropped.
    preferred: tuple[tuple[int, tuple[Requirement, ...]], ...]
    #: Soft spreading (ScheduleAnyway): the pod's own constraints, or the system defaults with its controller's
    #: selector; `spread_own` says they are the pod's own (nodes without every topology key are then not scored).
    spread: tuple[SpreadConstraint, ...]
    spread_own: bool
    #: Hard spreading (DoNotSchedule), the pod's own constraints: a filter.
    hard_spread: tuple[SpreadConstraint, ...]
    owner: tuple[str, str] | None  # controller (kind, uid), for NodePreferAvoidPods
    pod_affinity: PodAffinity | None  # podAffinity and podAntiAffinity
    ns_labels: tuple[tuple[str, str], ...]  # its namespace's labels (namespaceSelector of affinity terms)
    scheduler_name: str
    host_ports: tuple[HostPort, ...]  # NodePorts: the ports its containers bind on the node
    priority: int  # spec.priority (0 when unset), for the scheduling queue and preemption
    #: spec.preemptionPolicy is not Never: the pod may preempt lower-priority pods (DefaultPreemption).
    preempts: bool
    #: kube-scheduler's condition for the pod where its bind fails whatever the node (the extender finds no device
    #: for a pod whose gpu-mem is 0 over its containers, as when only an init container asks it); "" where none.
    bind_error: str

    def __init__(
        self,
        core: int,
        cpu: int,
        memory: int,
        node_gpu_mem: int,
        node_core: int,
        other: tuple[tuple[str, int], ...],
        node_selector: tuple[tuple[str, str], ...],
        affinity: tuple[tuple[Requirement, ...], ...],
        tolerations: tuple[Toleration, ...],
        nz_cpu: int,
        nz_memory: int,
        images: tuple[str, ...],
        preferred: tuple[tuple[int, tuple[Requirement, ...]], ...],
        spread: tuple[SpreadConstraint, ...],
        spread_own: bool,
        hard_spread: tuple[SpreadConstraint, ...],
        owner: tuple[str, str] | None,
        pod_affinity: PodAffinity | None,
        ns_labels: tuple[tuple[str, str], ...],
        scheduler_name: str,
        host_ports: tuple[HostPort, ...],
        priority: int,
        preempts: bool,
        bind_error: str,
    ) -> None:
        self.core = core
        self.cpu = cpu
        self.memory = memory
        self.node_gpu_mem = node_gpu_mem
        self.node_core = node_core
        self.other = other
        self.node_selector = node_selector
        self.affinity = affinity
        self.tolerations = tolerations
        self.nz_cpu = nz_cpu
        self.nz_memory = nz_memory
        self.images = images
        self.preferred = preferred
        self.spread = spread
        self.spread_own = spread_own
        self.hard_spread = hard_spread
        self.owner = owner
        self.pod_affinity = pod_affinity
        self.ns_labels = ns_labels
        self.scheduler_name = scheduler_name
        self.host_ports = host_ports
        self.priority = priority
        self.preempts = preempts
        self.bind_error = bind_error


@dataclass(slots=True, init=False)
class Pod:
    """A pod to place, or one already bound (`node` set). Slotted: a fleet holds hundreds of thousands, and a dict
    of thirty fields each cost 1.5 KB more than the slots; what it asks beyond its GPU memory is one `Ask`, which
    the pods of a workload share (read as properties of the pod).

    Its `__init__` is written out rather than made by dataclasses (which still give it equality and repr), and it
    is not frozen: compiled by mypyc, the written one fills the slots in 0.06 us where the frozen dataclass's took
    3 us, and every pod read is made once or twice. It takes what the `Ask` holds, or an `Ask` (and then none of
    that: `dataclasses.replace` can change only the pod's own fields, `with_changes` any). Nothing changes a Pod
    once made."""

    namespace: str
    name: str
    gpu_mem: int  # total units over its containers: what the extender places on GPUs
    gpu_count: int  # GPUs it spans (ack multi-GPU label)
    node: str | None
    #: A bound pod's GPUs and the units it holds on each, as the scheduler's annotations say (`kube.ledger.held`,
    #: in the model's unit); None: they name no GPU.
    gpu_held: tuple[tuple[int, int], ...] | None
    invalid: str | None
    source: str
    labels: tuple[tuple[str, str], ...]
    #: The workload the pod came from (1, 2... in input order; 0: none to share): pods of one template are alike
    #: but for their names and the labels a StatefulSet gives each, so the fast engine looks their kind up once.
    template: int
    #: A charged running pod holding unequal units on its GPUs (in `add_pod`'s order): those, not `per_gpu` each.
    per_device: tuple[int, ...] | None
    #: status.startTime of a running pod, RFC 3339 ("" when unknown: kube-scheduler then takes the time of asking,
    #: later than any known start); among victims of one priority the earliest started is the most important.
    started: str
    #: metadata.creationTimestamp of a pod to place, RFC 3339 ("" when the input gives none: a pod still to be
    #: created). Pods that already exist wait in the scheduling queue together (`gpushare.placement.queue`).
    created: str
    ask: Ask
    #: label_map and ns_label_map, made on first use (None until then: most running pods are never asked, and an
    #: empty dict each is 64 bytes a pod of a live fleet's model)
    _maps: dict[str, dict[str, str]] | None = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        namespace: str,
        name: str,
        gpu_mem: int = 0,
        gpu_count: int = 1,
        core: int = 0,
        cpu: int = 0,
        memory: int = 0,
        node_gpu_mem: int = 0,
        node_core: int = 0,
        other: tuple[tuple[str, int], ...] = (),
        node_selector: tuple[tuple[str, str], ...] = (),
        affinity: tuple[tuple[Requirement, ...], ...] = (),
        tolerations: tuple[Toleration, ...] = (),
        node: str | None = None,
        gpu_held: tuple[tuple[int, int], ...] | None = None,
        invalid: str | None = None,
        source: str = "",
        labels: tuple[tuple[str, str], ...] = (),
        nz_cpu: int = 0,
        nz_memory: int = 0,
        images: tuple[str, ...] = (),
        preferred: tuple[tuple[int, tuple[Requirement, ...]], ...] = (),
        spread: tuple[SpreadConstraint, ...] = (),
        spread_own: bool = False,
        hard_spread: tuple[SpreadConstraint, ...] = (),
        owner: tuple[str, str] | None = None,
        pod_affinity: PodAffinity | None = None,
        ns_labels: tuple[tuple[str, str], ...] = (),
        template: int = 0,
        scheduler_name: str = products.DEFAULT_SCHEDULER_NAME,
        host_ports: tuple[HostPort, ...] = (),
        priority: int = 0,
        per_device: tuple[int, ...] | None = None,
        preempts: bool = True,
        started: str = "",
        created: str = "",
        bind_error: str = "",
        ask: Ask | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.gpu_mem = gpu_mem
        self.gpu_count = gpu_count
        self.node = node
        self.gpu_held = gpu_held
        self.invalid = invalid
        self.source = source
        self.labels = labels
        self.template = template
        self.per_device = per_device
        self.started = started
        self.created = created
        asked = (
            core, cpu, memory, node_gpu_mem, node_core, other, node_selector, affinity, tolerations, nz_cpu,
            nz_memory, images, preferred, spread, spread_own, hard_spread, owner, pod_affinity, ns_labels,
            scheduler_name, host_ports, priority, preempts, bind_error,
        )  # fmt: skip
        if ask is None:
            ask = Ask(*asked)
        elif asked != _ASK_DEFAULTS:
            raise TypeError(
                "Pod: give either `ask` or what it holds (dataclasses.replace cannot change it: with_changes)"
            )
        self.ask = ask
        self._maps = None

    @property
    def core(self) -> int:
        return self.ask.core

    @property
    def cpu(self) -> int:
        return self.ask.cpu

    @property
    def memory(self) -> int:
        return self.ask.memory

    @property
    def node_gpu_mem(self) -> int:
        return self.ask.node_gpu_mem

    @property
    def node_core(self) -> int:
        return self.ask.node_core

    @property
    def other(self) -> tuple[tuple[str, int], ...]:
        return self.ask.other

    @property
    def node_selector(self) -> tuple[tuple[str, str], ...]:
        return self.ask.node_selector

    @property
    def affinity(self) -> tuple[tuple[Requirement, ...], ...]:
        return self.ask.affinity

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        return self.ask.tolerations

    @property
    def nz_cpu(self) -> int:
        return self.ask.nz_cpu

    @property
    def nz_memory(self) -> int:
        return self.ask.nz_memory

    @property
    def images(self) -> tuple[str, ...]:
        return self.ask.images

    @property
    def preferred(self) -> tuple[tuple[int, tuple[Requirement, ...]], ...]:
        return self.ask.preferred

    @property
    def spread(self) -> tuple[SpreadConstraint, ...]:
        return self.ask.spread

    @property
    def spread_own(self) -> bool:
        return self.ask.spread_own

    @property
    def hard_spread(self) -> tuple[SpreadConstraint, ...]:
        return self.ask.hard_spread

    @property
    def owner(self) -> tuple[str, str] | None:
        return self.ask.owner

    @property
    def pod_affinity(self) -> PodAffinity | None:
        return self.ask.pod_affinity

    @property
    def ns_labels(self) -> tuple[tuple[str, str], ...]:
        return self.ask.ns_labels

    @property
    def scheduler_name(self) -> str:
        return self.ask.scheduler_name

    @property
    def host_ports(self) -> tuple[HostPort, ...]:
        return self.ask.host_ports

    @property
    def priority(self) -> int:
        return self.ask.priority

    @property
    def preempts(self) -> bool:
        return self.ask.preempts

    @property
    def bind_error(self) -> str:
        return self.ask.bind_error

    @property
    def label_map(self) -> dict[str, str]:
        return self._map("labels", self.labels)

    @property
    def ns_label_map(self) -> dict[str, str]:
        return self._map("namespace", self.ns_labels)

    def _map(self, name: str, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
        maps = self._maps
        if maps is None:
            maps = self._maps = {}
        found = maps.get(name)
        if found is None:
            found = maps[name] = dict(pairs)
        return found

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def per_gpu(self) -> int:
        return self.gpu_mem // self.gpu_count if self.gpu_count else self.gpu_mem

    @property
    def wants_gpu(self) -> bool:
        return self.gpu_mem > 0

    @property
    def gpu_kind(self) -> str:
        """What the pod asks of GPUs: none, memory only, or memory and compute (ACK's node modes keep the two
        apart; the fast engine classes nodes by it)."""
        return "none" if not self.wants_gpu else ("compute" if self.core else "mem")

    @property
    def static_signature(self) -> tuple[Any, ...]:
        """What decides which nodes are eligible before usage counts: pods alike here share one node class."""
        return (self.node_selector, self.affinity, self.tolerations, self.gpu_kind)

    @property
    def fit_key(self) -> tuple[Any, ...]:
        """What decides where a pod fits and why not (its class, its requests, its host ports): pods alike here
        share the answers, and a node that refused one refuses the next while it only fills."""
        return (self.static_signature, self.shape, self.host_ports)

    @property
    def shape(self) -> tuple[Any, ...]:
        """What decides fit once a node is eligible."""
        return (
            self.gpu_mem,
            self.gpu_count,
            self.core,
            self.cpu,
            self.memory,
            self.node_gpu_mem,
            self.node_core,
            self.other,
        )


#: A journal's entry: a pod added to (True) or removed from (False) a node, with the GPUs it held there; a node
#: added to a simulation is (node, None, [], True).
Entry = tuple[Node, Pod | None, Sequence[Gpu], bool]


def with_changes(pod: Pod, **changes: Any) -> Pod:
    """`dataclasses.replace` for the hot paths (each replica of a controller): the fields passed positionally (0.9 us,
    where replace's keywords take 4.2 us compiled), the pod's `Ask` shared unless a change is to what it holds; its
    label maps are made again."""
    ask = pod.ask
    if not ASKED.isdisjoint(changes):
        ask = Ask(*[changes[name] if name in changes else getattr(ask, name) for name in _ASK_FIELDS])
    own = [
        default if asked else changes[name] if name in changes else getattr(pod, name)
        for name, asked, default in _SLOTS
    ]
    own.append(ask)
    return Pod(*own)


#: The constructor's parameters, in its order (`ask` last): what a pod is made of.
POD_FIELDS = (
    "namespace", "name", "gpu_mem", "gpu_count", "core", "cpu", "memory", "node_gpu_mem", "node_core", "other",
    "node_selector", "affinity", "tolerations", "node", "gpu_held", "invalid", "source", "labels", "nz_cpu",
    "nz_memory", "images", "preferred", "spread", "spread_own", "hard_spread", "owner", "pod_affinity", "ns_labels",
    "template", "scheduler_name", "host_ports", "priority", "per_device", "preempts", "started", "created",
    "bind_error",
)  # fmt: skip
_ASK_FIELDS = tuple(f.name for f in fields(Ask))
#: What a pod's `Ask` holds (read through the pod's properties of the same names).
ASKED = frozenset(_ASK_FIELDS)
#: What an `Ask` made of the constructor's defaults holds, in `_ASK_FIELDS`' order.
_DEFAULT = Pod("", "").ask
_ASK_DEFAULTS = tuple(getattr(_DEFAULT, name) for name in _ASK_FIELDS)
#: Each constructor parameter, whether the `Ask` holds it, and its default (what `with_changes` passes for it).
_SLOTS: tuple[tuple[str, bool, Any], ...] = tuple((n, n in ASKED, getattr(_DEFAULT, n, None)) for n in POD_FIELDS)
