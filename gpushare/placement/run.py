"""Running a dry run: charge the pods already bound, then place the new ones with the chosen engine.

`place` takes plain Kubernetes objects (dicts, as `yaml.safe_load` gives them) and returns typed
results; `place_files` reads them from YAML files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from gpushare import collector
from gpushare.domain import labels, profiles
from gpushare.errors import InputError, listed
from gpushare.kube.documents import Objects, Source, from_objects, read_documents
from gpushare.kube.nodes import NodeInfo
from gpushare.placement import admission, reference
from gpushare.placement import engine as fast_engine
from gpushare.placement.inputs import Inventory, build
from gpushare.placement.model import Node, Pod, Semantics
from gpushare.placement.profiles import Profile, profile
from gpushare.placement.result import Invalid, NotServed, PlacementResult
from gpushare.policy.engine import ClusterFacts, Subject, evaluate
from gpushare.policy.rules import nodes as nodes_rules
from gpushare.progress import progress

EngineName = Literal["fast", "reference"]
#: The node rules read a modelled node's name and labels only: they need no document behind it.
_NO_SOURCE = Source({}, "nodes")


def charge_existing(nodes: list[Node], pods: Iterable[Pod], profile: Profile) -> list[str]:
    """Charge pods already bound to their nodes (`Profile.bound_gpus`); returns warnings (an invalid pod, an
    over-committed GPU)."""
    by_name = {n.name: n for n in nodes}
    warnings = []
    for pod in pods:
        node = by_name.get(pod.node or "")
        if node is None or pod.invalid:
            if pod.invalid:
                warnings.append(f"existing pod {pod.key}: {pod.invalid}")
            continue
        charged, gpus, warning = profile.bound_gpus(node, pod)
        if warning:
            warnings.append(f"existing {warning}")
        node.add_pod(charged, gpus)
    return warnings


def run(
    inventory: Inventory,
    semantics: Semantics,
    engine: EngineName = "fast",
    node_order: Mapping[str, str] | None = None,
    explain: bool = False,
    show_progress: bool = False,
    draws: bool = True,
) -> PlacementResult:
    """Place the inventory's new pods after charging its existing ones; invalid pods are reported, not placed.
    `show_progress` draws a bar on a terminal's stderr for runs longer than two seconds. Without `draws`, a pod
    placed where kube-scheduler's search stops early is tied only with the nodes sharing its best score among those
    searched, not with every node the real choice may be drawn from (`Sampler.draws`): answers that count pods and
    show no choice (the planner's) spare that scoring of the whole fleet."""
    refuse_unsupported_unit(inventory.nodes, semantics)
    plugins = profile(semantics)
    if plugins.pick is not None:  # the fast engine's indexes keep the repeatable tie-break: a sample goes node by node
        engine = "reference"
    with collector.paused():  # the charged copies hold no cycles: the collector would walk the fleet for nothing
        warnings = charge_existing(inventory.nodes, inventory.existing, plugins)
    runner = fast_engine.place if engine == "fast" else reference.place
    served = semantics.served_scheduler
    refused, quota_notes = admission.admit(
        inventory.quotas, inventory.existing, [p for p in inventory.new if not p.invalid]
    )
    never_created = {id(r.pod) for r in refused}
    # a pod that names its node is bound at creation, whichever scheduler it names
    valid = [
        p
        for p in inventory.new
        if not p.invalid
        and id(p) not in never_created
        and (p.scheduler_name == served or not p.wants_gpu or p.node is not None)
    ]
    with collector.paused(), progress(len(valid), "pods", show_progress) as tick:
        result = runner(
            inventory.nodes, valid, plugins, dict(node_order or {}), explain, tick, inventory.budgets, draws
        )
    result.invalid = [Invalid(p.namespace, p.name, p.invalid, p.source) for p in inventory.new if p.invalid]
    result.invalid += [Invalid(r.pod.namespace, r.pod.name, r.message, r.pod.source) for r in refused]
    result.not_served = [
        NotServed(p.namespace, p.name, p.scheduler_name, served, p.source)
        for p in inventory.new
        if not p.invalid
        and id(p) not in never_created
        and p.wants_gpu
        and p.scheduler_name != served
        and p.node is None
    ]
    result.warnings = [
        *warnings,
        *result.warnings,
        *inventory.notes,
        *quota_notes,
        *_preset(inventory, plugins),
        *_replay_gaps(inventory, node_order or {}),
        *_deviceless(inventory),
    ]
    return result


def _preset(inventory: Inventory, plugins: Profile) -> list[str]:
    """Pods to place that name their node (spec.nodeName): no scheduler sees them, so what the extender would have
    done for them is not done."""
    nodes = {n.name for n in inventory.nodes}
    notes = []
    for pod in inventory.new:
        if pod.node is None or pod.invalid:
            continue
        if pod.node not in nodes:
            notes.append(f"pod {pod.key} sets spec.nodeName {pod.node}: no such node in the fleet, it stays pending")
        elif pod.wants_gpu and not plugins.places_unannotated:
            notes.append(
                f"pod {pod.key} sets spec.nodeName {pod.node}: bound at creation, no scheduler sees it, so the "
                f"extender gives it no GPU device and no index annotation; its {labels.GPU_MEM} counts at node level "
                "only, and the device plugin, finding no pod the extender assumed, starts it with no GPU visible "
                "(NVIDIA_VISIBLE_DEVICES=no-gpu-has-...-to-run)"
            )
    return notes


def _replay_gaps(inventory: Inventory, order: Mapping[str, str]) -> list[str]:
    """--node-order lines that replay nothing: a node not in the fleet (its pod stays pending), a pod not placed."""
    if not order:
        return []
    nodes = {n.name for n in inventory.nodes}
    pods = {p.key for p in inventory.new}
    gaps = [
        f"--node-order: {pod} -> {node}: no node {node} in the fleet, the pod stays pending"
        for pod, node in order.items()
        if pod in pods and node not in nodes
    ]
    unknown = [pod for pod in order if pod not in pods]
    if unknown:
        gaps.append(f"--node-order: {len(unknown)} pods named are not among the pods to place: {listed(unknown)}")
    return gaps


def refuse_unsupported_unit(nodes: Iterable[Node], semantics: Semantics) -> None:
    """The dry run refuses what `validate` reports on the same nodes: the node rule on the unit (GN309), run by the
    rules engine with --gpu-memory-unit as the unit, so `place` cannot drift from the rule. One refusal names the
    nodes: the unit is the flag to change, not one node."""
    rule = nodes_rules.SMALL_UNIT_RULE
    facts = ClusterFacts(gpu_memory_unit=semantics.gpu_memory_unit)
    subjects = (Subject("node", n.name, None, NodeInfo(n.name, n.labels, _NO_SOURCE)) for n in nodes)
    refused = [finding.subject for finding in evaluate(subjects, facts, (rule,))]
    if refused:
        raise InputError(
            "--gpu-memory-unit",
            semantics.gpu_memory_unit,
            f"{profiles.UNIT_1GIB}: {rule.summary} ({listed(refused)}) [{rule.id}]",
        )


def _deviceless(inventory: Inventory) -> list[str]:
    """Nodes whose GPU memory no GPU pod can use: the extender makes no device without a GPU count."""
    names = [n.name for n in inventory.nodes if n.gpu_mem and not n.gpus]
    if not names:
        return []
    return [
        f"{listed(names)}: {labels.GPU_MEM} without {labels.GPU_COUNT}: the extender makes no device for such a "
        "node, so no GPU pod lands there (the device plugin reports both; check it runs there)"
    ]


def place(
    nodes: Objects,
    pods: Objects,
    *,
    existing: Objects = (),
    semantics: Semantics | None = None,
    engine: EngineName = "fast",
    node_order: Mapping[str, str] | None = None,
    input_unit: str | None = None,
    explain: bool = False,
) -> PlacementResult:
    """Where would `pods` (Pods and controllers) land on `nodes`, given the `existing` bound pods? Each takes
    dicts as `yaml.safe_load` gives them, or a `kubectl get -o yaml` List.

    `explain` adds, for each pending pod, every node and why the pod does not fit it (costs a scan per
    pending pod, so it is off by default for fleet-scale runs)."""
    semantics = semantics or Semantics()
    inventory = build(
        from_objects(nodes, "nodes"),
        from_objects(existing, "existing"),
        from_objects(pods, "pods"),
        semantics,
        input_unit,
    )
    return run(inventory, semantics, engine, node_order, explain)


def place_files(
    nodes: Iterable[str], pods: Iterable[str], existing: Iterable[str] = (), **kwargs: Any
) -> PlacementResult:
    """`place` over YAML files; unreadable YAML raises InputError naming the file and line."""
    docs = [[s for path in paths for s in read_documents(path)] for paths in (nodes, existing, pods)]
    semantics = kwargs.pop("semantics", None) or Semantics()
    inventory = build(docs[0], docs[1], docs[2], semantics, kwargs.pop("input_unit", None))
    return run(inventory, semantics, **kwargs)
