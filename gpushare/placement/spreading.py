"""Which pods a pod spreads away from, as kube-scheduler's PodTopologySpread decides it.

A pod with topology spread constraints of its own scores by its `ScheduleAnyway` ones. A pod without any gets the
system defaults (spread over hosts and zones) with the selector of what it belongs to: the Services that select it,
and its ReplicaSet, StatefulSet or ReplicationController (`helper/spread.go` DefaultSelector: from 1.22 the pod's
controller reference, before it every such controller whose selector matches the pod's labels). A pod that
belongs to none of them is not spread.

A Deployment in the inputs stands for its ReplicaSet: its pods carry a `pod-template-hash` label and the
ReplicaSet's selector is the Deployment's plus that hash. The hash is the newest ReplicaSet of the Deployment found
among the inputs (the template is taken as unchanged), else one made up for the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpushare.domain import kubescheduler
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.kube import selectors
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping, sequence
from gpushare.kube.selectors import LabelRequirement, LabelSelector, SelectorError
from gpushare.placement.model import SpreadConstraint

TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
#: The (apiVersion, kind) a controller reference must name for DefaultSelector to read it.
_OWNER_GVK = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}


@dataclass
class Owners:
    """The cluster's Services and pod controllers, by namespace: what the default spreading reads."""

    services: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: (namespace, kind, name) -> selector; ReplicationControllers hold an equality selector.
    controllers: dict[tuple[str, str, str], LabelSelector] = field(default_factory=dict)
    #: (namespace, Deployment name) -> (revision, pod-template-hash) of its newest ReplicaSet among the inputs.
    deployment_hashes: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    #: Controllers whose selector could not be read (their pods are not spread), for a warning.
    unreadable: list[str] = field(default_factory=list)

    def add(self, src: Source) -> None:
        """Take a Service, ReplicationController, ReplicaSet or StatefulSet; other kinds are ignored."""
        obj, kind = src.obj, src.kind
        meta, spec = mapping(obj.get("metadata")), mapping(obj.get("spec"))
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if kind == "Service":
            raw = spec.get("selector")
            if isinstance(raw, dict):  # a Service without a selector selects nothing
                self.services.setdefault(namespace, []).append({str(k): str(v) for k, v in raw.items()})
        elif kind == "ReplicationController":
            raw = spec.get("selector")
            if isinstance(raw, dict) and raw:
                self.controllers[(namespace, kind, name)] = selectors.from_set(raw)
        elif kind in ("ReplicaSet", "StatefulSet"):
            try:
                self.controllers[(namespace, kind, name)] = selectors.parse(spec.get("selector"), "spec.selector")
            except SelectorError as exc:
                self.unreadable.append(f"{kind} {namespace}/{name}: {exc}")
                return
            if kind == "ReplicaSet":
                self._note_revision(namespace, meta)

    def _note_revision(self, namespace: str, meta: dict[str, Any]) -> None:
        template_hash = mapping(meta.get("labels")).get(TEMPLATE_HASH)
        for ref in sequence(meta.get("ownerReferences")):
            ref = mapping(ref)
            if ref.get("kind") == "Deployment" and template_hash:
                try:
                    revision = int(str(mapping(meta.get("annotations")).get(REVISION, "0")))
                except ValueError:
                    revision = 0
                key = (namespace, str(ref.get("name", "")))
                if revision >= self.deployment_hashes.get(key, (-1, ""))[0]:
                    self.deployment_hashes[key] = (revision, str(template_hash))

    def template_hash(self, namespace: str, deployment: str) -> str:
        found = self.deployment_hashes.get((namespace, deployment))
        return found[1] if found else f"gpushare-{deployment}"

    def default_selector(
        self,
        namespace: str,
        labels: Mapping[str, str],
        controller: tuple[str, str, str, str] | None,
        profile: ScoringProfile,
    ) -> LabelSelector:
        """helper/spread.go DefaultSelector for this minor: Services merged, then the controller's selector."""
        merged: dict[str, str] = {}
        for selector in self.services.get(namespace, []):
            if selectors.from_set(selector).matches(labels):
                merged.update(selector)
        if profile.spread_selector_by_owner:
            result = selectors.from_set(merged)
            if controller is None or (controller[0], controller[1]) not in _OWNER_GVK:
                return result
            found = self.controllers.get((namespace, controller[1], controller[2]))
            if found is None:
                return result
            if controller[1] == "ReplicationController":
                merged.update({r.key: next(iter(r.values)) for r in found.requirements})
                return selectors.from_set(merged)
            return result.add(found.requirements) if not found.nothing else result
        # 1.20-1.21: every controller of the namespace whose selector matches the pod's labels
        if not labels:
            return selectors.from_set(merged)
        for (ns, kind, _), found in sorted(self.controllers.items()):
            if ns == namespace and kind == "ReplicationController" and found.matches(labels):
                merged.update({r.key: next(iter(r.values)) for r in found.requirements})
        result = selectors.from_set(merged)
        for (ns, kind, _), found in sorted(self.controllers.items()):
            if ns == namespace and kind != "ReplicationController" and not found.empty and found.matches(labels):
                result = result.add(found.requirements)
        return result


def own_constraints(
    spec: dict[str, Any], labels: Mapping[str, str], profile: ScoringProfile, action: str
) -> tuple[SpreadConstraint, ...]:
    """The pod's own constraints with `whenUnsatisfiable: action`, as filterTopologySpreadConstraints reads them for
    this minor (matchLabelKeys from 1.27, the node inclusion policies from 1.26). Raises SelectorError."""
    result = []
    for i, raw in enumerate(sequence(spec.get("topologySpreadConstraints"))):
        raw = mapping(raw)
        if raw.get("whenUnsatisfiable") != action:
            continue
        where = f"spec.topologySpreadConstraints[{i}]"
        selector = selectors.parse(raw.get("labelSelector"), f"{where}.labelSelector")
        keys = [str(k) for k in sequence(raw.get("matchLabelKeys"))]
        if profile.minor >= 27 and keys and not selector.nothing:
            selector = selector.add(LabelRequirement(k, "In", frozenset({labels[k]})) for k in keys if k in labels)
        max_skew = raw.get("maxSkew")
        if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew < 1:
            raise SelectorError(f"{where}.maxSkew: expected a whole number >= 1")
        honor_affinity, honor_taints = True, False
        if profile.minor >= 26:
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


def soft_constraints(
    spec: dict[str, Any],
    namespace: str,
    labels: Mapping[str, str],
    controller: tuple[str, str, str, str] | None,
    owners: Owners,
    profile: ScoringProfile,
) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """(constraints the pod is scored by, whether they are its own). Raises SelectorError."""
    if sequence(spec.get("topologySpreadConstraints")):
        return own_constraints(spec, labels, profile, "ScheduleAnyway"), True
    selector = owners.default_selector(namespace, labels, controller, profile)
    if selector.empty or selector.nothing:
        return (), False
    return tuple(SpreadConstraint(key, skew, selector) for key, skew in kubescheduler.SYSTEM_DEFAULT_SPREAD), False
