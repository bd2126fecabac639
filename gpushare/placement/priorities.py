"""Pod priority as the API server's Priority admission plugin sets it (plugin/pkg/admission/priority), and the
PodDisruptionBudgets preemption weighs (the budgets' status, as the disruption controller writes it).

A pod's spec.priority and spec.preemptionPolicy come from its PriorityClass when it is created: the class it names,
or, naming none, the global default class with the highest value, or priority 0. The two system classes exist in
every cluster. A pod read from a cluster (`kubectl get pods -o yaml`) already carries the value; a manifest naming a
class the inputs do not hold keeps priority 0 and the run says so, since the dry run cannot know the class's value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.kube.podspec import LabelSelector, SelectorError, parse_selector

PRIORITY_CLASS = "PriorityClass"
DISRUPTION_BUDGET = "PodDisruptionBudget"
NEVER = "Never"
#: The classes the API server creates itself (pkg/apis/scheduling SystemPriorityClasses).
SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


class PriorityClass(NamedTuple):
    name: str
    value: int
    global_default: bool = False
    preempts: bool = True  # preemptionPolicy is not Never


class Priority(NamedTuple):
    """What admission gives a pod, and a note when the class it names is not among the inputs."""

    value: int
    preempts: bool
    note: str = ""


SYSTEM = {name: PriorityClass(name, value) for name, value in SYSTEM_CLASSES.items()}


def read_classes(sources: Iterable[Source]) -> dict[str, PriorityClass]:
    """The PriorityClass objects among the documents, with the system classes."""
    classes = dict(SYSTEM)
    for src in sources:
        if src.kind != PRIORITY_CLASS:
            continue
        name = str(mapping(src.obj.get("metadata")).get("name") or "")
        value = src.obj.get("value")
        if not name or not isinstance(value, int) or isinstance(value, bool):
            continue
        policy = str(src.obj.get("preemptionPolicy") or "")
        classes[name] = PriorityClass(name, value, src.obj.get("globalDefault") is True, policy != NEVER)
    return classes


def admitted(spec: Mapping[str, Any], classes: Mapping[str, PriorityClass], running: bool) -> Priority:
    """The pod's priority and preemption policy once created. A running pod's spec already holds them."""
    value = spec.get("priority")
    given = value if isinstance(value, int) and not isinstance(value, bool) else None
    own_policy = spec.get("preemptionPolicy")
    name = str(spec.get("priorityClassName") or "")
    if running and given is not None:
        return Priority(given, own_policy != NEVER)
    if name:
        found = classes.get(name)
        if found is None:
            if given is not None:
                return Priority(given, own_policy != NEVER)
            return Priority(
                0, own_policy != NEVER, f"PriorityClass {name} is not among the inputs (or has no integer value)"
            )
        return Priority(found.value, found.preempts if own_policy is None else own_policy != NEVER)
    defaults = [c for c in classes.values() if c.global_default]
    if defaults:
        chosen = max(defaults, key=lambda c: c.value)
        return Priority(chosen.value, chosen.preempts if own_policy is None else own_policy != NEVER)
    return Priority(given or 0, own_policy != NEVER)


class DisruptionBudget(NamedTuple):
    """A PodDisruptionBudget as preemption reads it (filterPodsWithPDBViolation): its selector, how many more pods
    it allows to go (status.disruptionsAllowed), and the pods already counted as going (status.disruptedPods)."""

    namespace: str
    name: str
    selector: LabelSelector | None  # None: empty or unreadable, matches no pod
    allowed: int
    disrupted: frozenset[str]

    def covers(self, namespace: str, labels: Mapping[str, str], name: str) -> bool:
        if self.selector is None or namespace != self.namespace or not labels or name in self.disrupted:
            return False
        return self.selector.matches(labels)


def read_budgets(sources: Iterable[Source]) -> list[DisruptionBudget]:
    """The PodDisruptionBudgets among the documents. Without a status (a manifest, not read from a cluster) a budget
    allows no disruption: that is what the scheduler reads until the disruption controller has counted its pods."""
    budgets = []
    for src in sources:
        if src.kind != DISRUPTION_BUDGET:
            continue
        meta, spec, status = (mapping(src.obj.get(k)) for k in ("metadata", "spec", "status"))
        selector: LabelSelector | None
        try:
            raw = spec.get("selector")
            selector = parse_selector(raw, "spec.selector") if raw else None
            if selector is not None and selector.empty:
                selector = None
        except SelectorError:
            selector = None
        allowed = status.get("disruptionsAllowed")
        budgets.append(
            DisruptionBudget(
                str(meta.get("namespace") or "default"),
                str(meta.get("name") or ""),
                selector,
                allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
                frozenset(str(k) for k in mapping(status.get("disruptedPods"))),
            )
        )
    return budgets
