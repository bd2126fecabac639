"""Builders for the plugin tables: Kubernetes objects as upstream's tests write them (st.MakePod / st.MakeNode), read
by the model build as a real run reads them, then handed to one plugin's filter or score.

Going through `inputs.build` (not building `Node` and `Pod` by hand) means a ported case checks the pod-spec reader
and the node reader as well as the plugin: a toleration, an affinity term or an image name reaches the plugin as it
would from a cluster's YAML.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare.domain.minors import scoring_profile
from gpushare.kube.documents import Source
from gpushare.placement import Semantics, framework
from gpushare.placement.framework import Plugin
from gpushare.placement.inputs import build
from gpushare.placement.model import Node, Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.pluginsets import profile as profile_of
from gpushare.placement.simulation import charge_existing

Obj = dict[str, Any]

#: Every minor gpushare models, for the tables whose result does not depend on it.
ALL_MINORS = tuple(range(20, 37))


def node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    taints: Sequence[Obj] = (),
    unschedulable: bool = False,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    gpus: int = 0,
    per_gpu: int = 0,
    images: Sequence[tuple[Sequence[str], int]] = (),
    annotations: dict[str, str] | None = None,
    **extra: str,
) -> Obj:
    """A Node: allocatable = capacity; `gpus` devices of `per_gpu` GiB (aliyun.com/gpu-mem, gpu-count)."""
    capacity: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": pods, **extra}
    if gpus:
        capacity |= {"aliyun.com/gpu-mem": str(gpus * per_gpu), "aliyun.com/gpu-count": str(gpus)}
    meta: Obj = {"name": name, "labels": dict(labels or {})}
    if annotations:
        meta["annotations"] = annotations
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }
    if images:
        obj["status"]["images"] = [{"names": list(names), "sizeBytes": size} for names, size in images]
    return obj


def container(
    requests: dict[str, str] | None = None, image: str = "pause", limits: dict[str, str] | None = None
) -> Obj:
    resources: Obj = {}
    # an extended resource requested needs its limit, or the API server refuses the pod (upstream's st.MakePod
    # writes requests only: its tests never meet the API server)
    limits = {**{k: v for k, v in (requests or {}).items() if "/" in k}, **(limits or {})}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    return {"name": "c", "image": image, "resources": resources}


def pod(
    name: str = "p",
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    containers: Sequence[Obj] | None = None,
    init: Sequence[Obj] = (),
    on: str | None = None,
    annotations: dict[str, str] | None = None,
    owner: tuple[str, str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A Pod; `on` binds it (spec.nodeName); `owner` is its controller (apiVersion, kind, name); `spec` adds fields
    (tolerations, nodeSelector, affinity, topologySpreadConstraints...)."""
    chosen = [container()] if containers is None else containers
    body: Obj = {"containers": [dict(c, name=f"c{i}") for i, c in enumerate(chosen)], **spec}
    if init:
        body["initContainers"] = [dict(c, name=f"i{i}") for i, c in enumerate(init)]
    if on:
        body["nodeName"] = on
    meta: Obj = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        api, kind, owner_name = owner
        meta["ownerReferences"] = [
            {"apiVersion": api, "kind": kind, "name": owner_name, "uid": f"uid-{owner_name}", "controller": True}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str = "", value: str = "", effect: str = "", operator: str = "") -> Obj:
    found: Obj = {"key": key, "value": value, "effect": effect}
    if operator:
        found["operator"] = operator
    return {k: v for k, v in found.items() if v}


@dataclass
class Cluster:
    """The model of a case: its nodes (bound pods charged), the pod to place, and the profile of the run."""

    nodes: list[Node]
    pod: Pod
    profile: Profile

    def by_name(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def filter(self, plugin: Plugin, node: str) -> list[str]:
        """The plugin's reasons for `node`, after its PreFilter over every node (as the framework runs them)."""
        cycle = framework.prefilter([plugin], self.pod, self.nodes)
        return plugin.filter(self.by_name(node), self.pod, cycle)

    def scores(self, plugin: Plugin, feasible: Iterable[str] | None = None) -> list[int] | None:
        """The plugin's normalised scores of the feasible nodes (default: every node), in their order."""
        chosen = self.nodes if feasible is None else [self.by_name(n) for n in feasible]
        return plugin.score(self.pod, chosen, self.nodes)


def cluster(
    nodes: Sequence[Obj],
    new: Obj,
    existing: Sequence[Obj] = (),
    minor: int = 28,
    semantics: str = "upstream",
    extra: Sequence[Obj] = (),
    **options: Any,
) -> Cluster:
    """Build the model of nodes, pods bound to them (`existing`), other objects (Services, controllers, Namespaces:
    `extra`) and the one pod to place."""
    chosen = Semantics(
        semantics,  # type: ignore[arg-type]
        scheduler=scoring_profile(minor),
        scheduler_name="default-scheduler",
        **options,
    )
    src = (
        [Source(o, "case") for o in nodes],
        [Source(o, "case") for o in [*extra, *existing]],
        [Source(new, "case")],
    )
    inventory = build(*src, chosen)
    plugins = profile_of(chosen)
    warnings = charge_existing(inventory.nodes, inventory.existing, plugins)
    assert not [w for w in warnings if "invalid" in w], warnings
    (placed,) = inventory.new
    assert placed.invalid is None, placed.invalid
    return Cluster(inventory.nodes, placed, plugins)
