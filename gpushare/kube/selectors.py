"""Label selectors as Kubernetes evaluates them (apimachinery `labels.Selector`, `metav1.LabelSelectorAsSelector`).

Topology spreading and pod affinity count the pods a selector matches; these rules decide which. A selector is a
conjunction of requirements; `matchLabels` are equalities; `NotIn` and `DoesNotExist` match a pod without the key.
A missing selector (None in a document) matches nothing, an empty one (`{}`) everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """A selector Kubernetes would refuse: the message says what is wrong."""


@dataclass(frozen=True)
class LabelRequirement:
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


@dataclass(frozen=True)
class LabelSelector:
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


def parse(raw: Any, field: str = "labelSelector") -> LabelSelector:
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
