"""One pod spec, read once for every command: what it asks for and where it may run.

`place`, `validate` and `preflight` read a pod's containers here (`read`), so a pod means the same to each and a
malformed quantity is reported with the same rule ID everywhere; `place` also reads the pod's scheduling
constraints here (`constraints`): node selector, node affinity, tolerations, pod (anti-)affinity, topology spread
constraints, host ports, priority. The types are the Kubernetes API's, as kube-scheduler reads them, with the
helpers the API gives them (`tolerates`).

Requests are counted the way kube-scheduler counts them for node-level fit (containers summed, the largest init
container if larger, plus overhead), and the GPU memory also the way the gpushare extender counts it (containers
only). Reading requests is lenient: a bad value becomes a `Problem`, never an exception. Reading constraints raises
(ValueError, KeyError, TypeError, AttributeError, `SelectorError`), and `place` reports the pod invalid
with the message: validate, which never read them, reports the same pods as before.

Fields the API server drops while their feature is off are read only from the minor that serves them (the
`ScoringProfile` flags), as the scheduler of that minor would see them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpushare.domain import labels
from gpushare.domain.kubescheduler import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, ScoringProfile
from gpushare.domain.quantity import QuantityError, count, milli, whole
from gpushare.kube.fields import Problem, mapping, sequence

#: The rule ID of a pod spec that cannot be read as it is (its entry is in gpushare.policy.rules.workloads).
MALFORMED = "GW201"


# --- label selectors (apimachinery labels.Selector, metav1.LabelSelectorAsSelector) ------------------------------
#
# Topology spreading and pod affinity count the pods a selector matches; these rules decide which. A selector is a
# conjunction of requirements; `matchLabels` are equalities; `NotIn` and `DoesNotExist` match a pod without the key.
# A missing selector (None in a document) matches nothing, an empty one (`{}`) everything.

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """A selector Kubernetes would refuse: the message says what is wrong."""


class LabelRequirement(NamedTuple):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


class LabelSelector(NamedTuple):
    """A conjunction of requirements; `nothing` marks the selector that matches no object (a nil selector)."""

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """No requirement at all (it matches every object): kube-scheduler's `selector.Empty()`."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def add(self, requirements: Iterable[LabelRequirement]) -> LabelSelector:
        """This selector and more requirements (`selector.Add`), kept sorted as apimachinery keeps them."""
        merged = tuple(sorted({*self.requirements, *requirements}, key=lambda r: (r.key, r.operator, sorted(r.values))))
        return LabelSelector(merged, self.nothing)

    @property
    def anchor(self) -> tuple[str, str] | None:
        """A label every matching object carries (key, value), for indexing; None when no single value is implied."""
        for r in self.requirements:
            if r.operator == "In" and len(r.values) == 1:
                return r.key, next(iter(r.values))
        return None


NOTHING = LabelSelector(nothing=True)
EVERYTHING = LabelSelector()


def from_set(labels: Mapping[str, Any]) -> LabelSelector:
    """`labels.Set(m).AsSelector()`: one equality per entry (a Service's or ReplicationController's selector)."""
    if not labels:  # most pods' default spreading, with no Service or controller that selects them
        return EVERYTHING
    return LabelSelector().add(LabelRequirement(str(k), "In", frozenset({str(v)})) for k, v in labels.items())


def parse_selector(raw: Any, field: str = "labelSelector") -> LabelSelector:
    """A `metav1.LabelSelector` document; None is the nil selector (matches nothing). Raises SelectorError."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, dict):
        raise SelectorError(f"{field}: expected a mapping with matchLabels and/or matchExpressions")
    requirements = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        raise SelectorError(f"{field}.matchLabels: expected a mapping")
    for key, value in match_labels.items():
        requirements.append(LabelRequirement(str(key), "In", frozenset({str(value)})))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"{field}.matchExpressions: expected a list")
    for i, expr in enumerate(expressions):
        where = f"{field}.matchExpressions[{i}]"
        if not isinstance(expr, dict) or "key" not in expr:
            raise SelectorError(f"{where}: expected key, operator and values")
        operator = str(expr.get("operator", ""))
        values = expr.get("values") or []
        if operator not in OPERATORS:
            raise SelectorError(f"{where}.operator: {operator!r} is not one of {', '.join(OPERATORS)}")
        if not isinstance(values, list):
            raise SelectorError(f"{where}.values: expected a list")
        if operator in ("In", "NotIn") and not values:
            raise SelectorError(f"{where}.values: {operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"{where}.values: {operator} takes no values")
        requirements.append(LabelRequirement(str(expr["key"]), operator, frozenset(str(v) for v in values)))
    return LabelSelector().add(requirements)


# --- the API's types ---------------------------------------------------------------------------------------------


class Toleration(NamedTuple):
    """A tuple, hashed and compared in C: every pod's node-class lookup hashes its tolerations (two on most pods)."""

    key: str | None
    operator: str
    value: str | None
    effect: str | None


class Taint(NamedTuple):
    """A tuple, as `Toleration`: a node model holding its taints is copied whole for each node a pool adds, and a
    frozen dataclass compiled by mypyc cannot be deep-copied (its fields are set again, and refused)."""

    key: str
    value: str
    effect: str


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """v1 Toleration.ToleratesTaint for any of them: an empty effect or key matches every one; Exists ignores the
    value, Equal (or no operator) compares it."""
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key and t.key != taint.key:
            continue
        if t.operator == "Exists" or (t.operator in ("", "Equal") and (t.value or "") == taint.value):
            return True
    return False


class Requirement(NamedTuple):
    """One node-selector requirement (matchExpressions or matchFields)."""

    key: str
    operator: str
    values: tuple[str, ...]
    field: bool = False


#: Required node affinity no node satisfies (every term empty).
NO_NODE: tuple[tuple[Requirement, ...], ...] = ((Requirement("metadata.name", "In", (), field=True),),)


class SpreadConstraint(NamedTuple):
    """One topology spread constraint: pods matching `selector` in the pod's namespace, counted per topology domain."""

    topology_key: str
    max_skew: int
    selector: LabelSelector
    honor_affinity: bool = True  # nodeAffinityPolicy: only nodes the pod's node selector/affinity admits count
    honor_taints: bool = False  # nodeTaintsPolicy: only nodes whose NoSchedule/NoExecute taints the pod tolerates
    min_domains: int = 1  # a hard constraint with fewer eligible domains counts the missing ones as empty


class AffinityTerm(NamedTuple):
    """A pod (anti-)affinity term: pods its selector matches, in its namespaces, share a topology domain."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector  # NOTHING when the term names none
    topology_key: str

    def matches(self, namespace: str, namespace_labels: Mapping[str, str], pod_labels: Mapping[str, str]) -> bool:
        """framework.AffinityTerm.Matches: a pod in one of the term's namespaces (by name or by the namespace's
        labels) whose labels the selector matches."""
        in_namespace = namespace in self.namespaces or self.namespace_selector.matches(namespace_labels)
        return in_namespace and self.selector.matches(pod_labels)


class PodAffinity(NamedTuple):
    required: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred: tuple[tuple[int, AffinityTerm], ...] = ()
    preferred_anti: tuple[tuple[int, AffinityTerm], ...] = ()


#: The address a host port without hostIP binds: every one (NodeInfo's port table, DefaultBindAllHostIP).
ANY_ADDRESS = "0.0.0.0"


class HostPort(NamedTuple):
    """A container port bound on the node (hostPort set): NodePorts' unit of conflict."""

    protocol: str
    ip: str
    port: int


# --- what the pod asks for ---------------------------------------------------------------------------------------


@dataclass
class Requests:
    """What a pod spec asks of a node, summed over its containers, with what could not be read."""

    gpu_mem: int = 0  # aliyun.com/gpu-mem over the containers: what the extender counts
    #: aliyun.com/gpu-mem named by any container or init container, requests or limits, whatever its amount: what
    #: makes kube-scheduler ask the extender about the pod (HTTPExtender.IsInterested).
    names_gpu_mem: bool = False
    core: int = 0  # aliyun.com/gpu-core.percentage over the containers
    #: (container, its gpu-core.percentage) of each container that asks compute: the product checks each one
    core_by_container: list[tuple[str, int]] = field(default_factory=list)
    #: Every resource of the pod, node-level (containers summed, largest init container, overhead).
    requests: dict[str, int] = field(default_factory=dict)
    #: cpu (millicores) and memory (bytes) as kube-scheduler scores nodes: a container that requests none counts
    #: 100m and 200 MiB (pkg/scheduler/util GetNonzeroRequests), summed and maxed like the requests.
    nz_cpu: int = 0
    nz_memory: int = 0
    #: With sidecars (init containers with restartPolicy Always) and a minor that runs them beside the containers
    #: (1.29 on): (requests, nz_cpu, nz_memory) with each sidecar added to the containers' sum and to what every later
    #: init container asks (PodRequests); None when the pod has no sidecar.
    with_sidecars: tuple[dict[str, int], int, int] | None = None
    images: list[str] = field(default_factory=list)  # spec.containers[*].image, in order
    init_images: list[str] = field(default_factory=list)  # spec.initContainers[*].image, in order
    env: list[tuple[str, str, Any]] = field(default_factory=list)  # (container, name, value)
    #: (field, value as written, amount) of each GPU memory quantity written with a suffix or an exponent (`4Gi`): valid
    #: to the API server, but it counts units, not bytes.
    suffixed: list[tuple[str, Any, int]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def as_scheduled(self, sidecars: bool) -> tuple[dict[str, int], int, int]:
        """(requests, nz_cpu, nz_memory) as the minor counts them: `sidecars` where it runs sidecars beside the
        containers, else every init container alone."""
        if sidecars and self.with_sidecars is not None:
            return self.with_sidecars
        return self.requests, self.nz_cpu, self.nz_memory

    @property
    def cpu(self) -> int:
        return self.requests.get("cpu", 0)

    @property
    def memory(self) -> int:
        return self.requests.get("memory", 0)


def normalized_image(name: str) -> str:
    """An image as kube-scheduler's ImageLocality looks it up: `:latest` added when the reference names no tag."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


def _resources(container: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = mapping(container.get("resources"))
    return mapping(res.get("requests")), mapping(res.get("limits"))


#: A quantity written as a plain number (no suffix, no exponent).
#: A number without a byte suffix: digits, a fraction, a decimal exponent (`1e3` is a thousand units, not bytes).
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")


def _plain(value: Any) -> bool:
    return isinstance(value, int) or _PLAIN_NUMBER.fullmatch(str(value).strip()) is not None


def _quantity(resource: str) -> Any:
    if resource == "cpu":
        return milli
    if resource in (labels.GPU_MEM, labels.GPU_CORE, labels.GPU_COUNT) or "/" in resource:
        return count
    return whole


def read(spec: dict[str, Any]) -> Requests:
    """Sum the requests; every quantity that does not parse is a problem, never an exception."""
    found = Requests()
    summed: dict[str, int] = {}
    init_max: dict[str, int] = {}
    nz_sum, nz_init = [0, 0], [0, 0]
    inits: list[tuple[bool, dict[str, int], list[int]]] = []  # (a sidecar?, what it asks, its nz) in order
    for kind in ("containers", "initContainers"):
        for i, raw in enumerate(sequence(spec.get(kind))):
            if not isinstance(raw, dict):
                found.problems.append(Problem(MALFORMED, f"spec.{kind}[{i}]", raw, "a container (a mapping)"))
                continue
            cname = str(raw.get("name", i))
            requests, limits = _resources(raw)
            found.names_gpu_mem = found.names_gpu_mem or labels.GPU_MEM in requests or labels.GPU_MEM in limits
            nz = [DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST]  # replaced below by what the container asks
            asks: dict[str, int] = {}
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
                    found.problems.append(
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
                if resource == labels.GPU_MEM and not _plain(value):
                    found.suffixed.append((f"{kind}[{cname}].resources.{where}.{resource}", value, amount))
                if "/" in str(resource) and resource in requests and resource not in limits:
                    found.problems.append(
                        Problem(
                            MALFORMED,
                            f"{kind}[{cname}].resources.limits.{resource}",
                            None,
                            f"a limit for the request {requests[resource]!r}: the API server refuses a request "
                            "without one for an extended resource (Limit must be set for non overcommitable "
                            "resources)",
                        )
                    )
                if (
                    "/" in str(resource)
                    and resource in limits
                    and resource in requests
                    and str(limits[resource]) != str(requests[resource])
                ):
                    found.problems.append(
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
                    if resource == labels.GPU_CORE and amount:
                        found.core_by_container.append((cname, amount))
                else:
                    init_max[resource] = max(init_max.get(resource, 0), amount)
                    asks[resource] = amount
            if kind == "initContainers":
                inits.append((raw.get("restartPolicy") == "Always", asks, list(nz)))
            for j in (0, 1):
                if kind == "containers":
                    nz_sum[j] += nz[j]
                else:
                    nz_init[j] = max(nz_init[j], nz[j])
            (found.images if kind == "containers" else found.init_images).append(str(raw.get("image") or ""))
            if kind == "containers":
                for entry in sequence(raw.get("env")):
                    entry = mapping(entry)
                    if "name" in entry:
                        found.env.append((cname, str(entry["name"]), entry.get("value")))
    found.gpu_mem = summed.get(labels.GPU_MEM, 0)
    found.core = summed.get(labels.GPU_CORE, 0)
    requests = {r: max(summed.get(r, 0), init_max.get(r, 0)) for r in {*summed, *init_max}}
    nz = [max(nz_sum[j], nz_init[j]) for j in (0, 1)]
    overhead: dict[str, int] = {}
    for resource, value in mapping(spec.get("overhead")).items():
        try:
            overhead[resource] = _quantity(str(resource))(value)
        except QuantityError as exc:
            found.problems.append(Problem(MALFORMED, f"spec.overhead.{resource}", value, f"a quantity ({exc})"))
    found.requests, found.nz_cpu, found.nz_memory = _with_overhead(requests, nz, overhead)
    if any(sidecar for sidecar, _, _ in inits):
        found.with_sidecars = _with_overhead(*_sidecars(summed, nz_sum, inits), overhead)
    return found


def _sidecars(
    summed: dict[str, int], nz_sum: list[int], inits: list[tuple[bool, dict[str, int], list[int]]]
) -> tuple[dict[str, int], list[int]]:
    """PodRequests with sidecars: each adds to the containers' sum and to what every init container after it asks
    (it is still running then); the pod asks the larger of that sum and the largest init-time total."""
    total, nz_total = dict(summed), list(nz_sum)
    running: dict[str, int] = {}
    nz_running = [0, 0]
    peak: dict[str, int] = {}
    nz_peak = [0, 0]
    for sidecar, asks, nz in inits:
        if sidecar:
            for resource, amount in asks.items():
                total[resource] = total.get(resource, 0) + amount
                running[resource] = running.get(resource, 0) + amount
            nz_total = [nz_total[j] + nz[j] for j in (0, 1)]
            nz_running = [nz_running[j] + nz[j] for j in (0, 1)]
            now, nz_now = dict(running), list(nz_running)
        else:
            now = {r: asks.get(r, 0) + running.get(r, 0) for r in {*asks, *running}}
            nz_now = [nz[j] + nz_running[j] for j in (0, 1)]
        for resource, amount in now.items():
            peak[resource] = max(peak.get(resource, 0), amount)
        nz_peak = [max(nz_peak[j], nz_now[j]) for j in (0, 1)]
    requests = {r: max(total.get(r, 0), peak.get(r, 0)) for r in {*total, *peak}}
    return requests, [max(nz_total[j], nz_peak[j]) for j in (0, 1)]


def _with_overhead(
    requests: dict[str, int], nz: list[int], overhead: dict[str, int]
) -> tuple[dict[str, int], int, int]:
    """The pod's overhead (its RuntimeClass's) on top of what its containers ask, counted for scoring too."""
    requests = dict(requests) if overhead else requests
    nz = list(nz)
    for resource, amount in overhead.items():
        requests[resource] = requests.get(resource, 0) + amount
        if resource in ("cpu", "memory"):
            nz[resource == "memory"] += amount
    return requests, nz[0], nz[1]


# --- where it may run --------------------------------------------------------------------------------------------


class Constraints(NamedTuple):
    """The pod's scheduling constraints as the modelled kube-scheduler reads them."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[Requirement, ...], ...] = ()  # required node affinity: OR of ANDs; empty = none
    #: Preferred node affinity: (weight, requirements ANDed); terms of weight 0 or without requirements dropped.
    preferred: tuple[tuple[int, tuple[Requirement, ...]], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    pod_affinity: PodAffinity | None = None
    #: The pod's own topology spread constraints: ScheduleAnyway (scored) and DoNotSchedule (a filter); `spreads`
    #: says it has any at all (then no system default applies, even with none of one kind).
    soft_spread: tuple[SpreadConstraint, ...] = ()
    hard_spread: tuple[SpreadConstraint, ...] = ()
    spreads: bool = False
    host_ports: tuple[HostPort, ...] = ()
    priority: int | None = None
    priority_class: str = ""


def constraints(
    spec: dict[str, Any],
    namespace: str,
    pod_labels: Mapping[str, str],
    profile: ScoringProfile,
    spreading: bool = True,
) -> Constraints:
    """Read the pod's constraints; without `spreading` (a pod already bound, which nothing spreads again) its
    topology spread constraints are left unread. Raises ValueError, KeyError, TypeError, AttributeError or
    SelectorError (a ValueError) on a spec the API server would refuse."""
    selector = spec.get("nodeSelector") or {}
    spreads = spreading and bool(sequence(spec.get("topologySpreadConstraints")))
    priority = spec.get("priority")
    return Constraints(
        node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        affinity=_required(spec),
        preferred=_preferred(spec),
        tolerations=_tolerations(spec),
        pod_affinity=_pod_affinity(spec, namespace, profile),
        soft_spread=_spread(spec, pod_labels, profile, "ScheduleAnyway") if spreads else (),
        hard_spread=_spread(spec, pod_labels, profile, "DoNotSchedule") if spreads else (),
        spreads=spreads,
        host_ports=_host_ports(spec, profile),
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        priority_class=str(spec.get("priorityClassName") or ""),
    )


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


def _required(spec: dict[str, Any]) -> tuple[tuple[Requirement, ...], ...]:
    """Required node affinity: terms ORed. A term without requirements matches no node (component-helpers
    nodeaffinity), so it is left out; a selector left with no term matches nothing (`NO_NODE`)."""
    required = _node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return ()
    terms = tuple(t for t in (_term(term) for term in required.get("nodeSelectorTerms") or []) if t)
    return terms or NO_NODE


def _preferred(spec: dict[str, Any]) -> tuple[tuple[int, tuple[Requirement, ...]], ...]:
    """Preferred node affinity: (weight, requirements), terms of weight 0 or without requirements left out."""
    result = []
    for entry in _node_affinity(spec).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        weight, term = int(entry.get("weight") or 0), _term(entry.get("preference") or {})
        if weight and term:
            result.append((weight, term))
    return tuple(result)


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


def _affinity_term(raw: Any, namespace: str, profile: ScoringProfile, where: str) -> AffinityTerm:
    raw = mapping(raw)
    names = frozenset(str(n) for n in sequence(raw.get("namespaces")))
    ns_raw = raw.get("namespaceSelector") if profile.reads_namespace_selector else None
    if not names and ns_raw is None:
        names = frozenset({namespace})
    return AffinityTerm(
        parse_selector(raw.get("labelSelector"), f"{where}.labelSelector"),
        names,
        parse_selector(ns_raw, f"{where}.namespaceSelector"),
        str(raw.get("topologyKey", "")),
    )


def _pod_affinity(spec: dict[str, Any], namespace: str, profile: ScoringProfile) -> PodAffinity | None:
    """The pod's podAffinity and podAntiAffinity (None when it has neither)."""
    affinity = mapping(spec.get("affinity"))
    if affinity.get("podAffinity") is None and affinity.get("podAntiAffinity") is None:
        return None
    parts: list[Any] = []
    for kind in ("podAffinity", "podAntiAffinity"):
        section = mapping(affinity.get(kind))
        where = f"spec.affinity.{kind}"
        required = sequence(section.get("requiredDuringSchedulingIgnoredDuringExecution"))
        preferred = sequence(section.get("preferredDuringSchedulingIgnoredDuringExecution"))
        parts.append(
            tuple(_affinity_term(t, namespace, profile, f"{where}.required[{i}]") for i, t in enumerate(required))
        )
        parts.append(
            tuple(
                (
                    int(mapping(t).get("weight") or 0),
                    _affinity_term(mapping(t).get("podAffinityTerm"), namespace, profile, f"{where}.preferred[{i}]"),
                )
                for i, t in enumerate(preferred)
            )
        )
    return PodAffinity(parts[0], parts[2], parts[1], parts[3])


def _spread(
    spec: dict[str, Any], pod_labels: Mapping[str, str], profile: ScoringProfile, action: str
) -> tuple[SpreadConstraint, ...]:
    """The pod's own constraints with `whenUnsatisfiable: action`, as filterTopologySpreadConstraints reads them for
    this minor (matchLabelKeys, the node inclusion policies)."""
    result = []
    for i, raw in enumerate(sequence(spec.get("topologySpreadConstraints"))):
        raw = mapping(raw)
        if raw.get("whenUnsatisfiable") != action:
            continue
        where = f"spec.topologySpreadConstraints[{i}]"
        selector = parse_selector(raw.get("labelSelector"), f"{where}.labelSelector")
        keys = [str(k) for k in sequence(raw.get("matchLabelKeys"))]
        if profile.reads_match_label_keys and keys and not selector.nothing:
            selector = selector.add(
                LabelRequirement(k, "In", frozenset({pod_labels[k]})) for k in keys if k in pod_labels
            )
        max_skew = raw.get("maxSkew")
        if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew < 1:
            raise SelectorError(f"{where}.maxSkew: expected a whole number >= 1")
        honor_affinity, honor_taints = True, False
        if profile.reads_inclusion_policies:
            honor_affinity = raw.get("nodeAffinityPolicy", "Honor") != "Ignore"
            honor_taints = raw.get("nodeTaintsPolicy", "Ignore") == "Honor"
        min_domains = raw.get("minDomains", 1)
        if not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1:
            raise SelectorError(f"{where}.minDomains: expected a whole number >= 1")
        result.append(
            SpreadConstraint(
                str(raw.get("topologyKey", "")), max_skew, selector, honor_affinity, honor_taints, min_domains
            )
        )
    return tuple(result)


def _host_ports(spec: dict[str, Any], profile: ScoringProfile) -> tuple[HostPort, ...]:
    """The ports the pod binds on its node (hostPort set), as NodePorts reads them: the containers', and, where the
    minor counts them, those of init containers that run beside them (sidecars, restartPolicy Always). An address or
    protocol left out is every address and TCP, as the scheduler's port table fills them in."""
    containers = sequence(spec.get("containers"))
    if profile.sidecar_host_ports:
        sidecars = [c for c in sequence(spec.get("initContainers")) if mapping(c).get("restartPolicy") == "Always"]
        containers = [*sidecars, *containers]
    found = []
    for container in containers:
        for port in sequence(mapping(container).get("ports")):
            port = mapping(port)
            number = port.get("hostPort")
            if isinstance(number, int) and not isinstance(number, bool) and number > 0:
                address = str(port.get("hostIP") or ANY_ADDRESS)
                found.append(HostPort(str(port.get("protocol") or "TCP"), address, number))
    return tuple(found)
