"""What a change of settings does to a fleet: the running pods whose place no longer holds, where they would go,
and the pending pods whose fate changes.

Both sides read the same files. Their numbers of `aliyun.com/gpu-mem` are in the unit before the change; the side
after converts them into its unit as the device plugin (capacity) and the pods' authors (requests) would, so a
change of unit shows the requests that round up. A running pod holds its place after the change when the GPUs its
annotation names still take it there (the node's label mode, the cGPU pod cap, the memory left by the pods
before it on the node, in their order): placement filters such as node affinity are not asked again, since a
running pod is not scheduled again. Pods that held before and no longer do are placed as the side after would
place them, beside the pending pods.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpushare.domain.labels import ACK_PREFIX, ANN_PREFIX
from gpushare.kube.documents import Source
from gpushare.kube.nodes import NodeInfo, read_node
from gpushare.placement import PlacementResult, Semantics, Simulation


@dataclass(frozen=True)
class Displaced:
    """A running pod whose place no longer holds after the change, and where the side after would put it."""

    key: str
    node: str
    why: str
    #: The node the side after places it on (None: it stays pending, `pending_why` says why).
    lands: str | None
    pending_why: str = ""


@dataclass(frozen=True)
class Outcome:
    """A pending pod before and after the change: the node it lands on (None: pending) and why not."""

    key: str
    before: str | None
    after: str | None
    why_before: str = ""
    why_after: str = ""

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Impact:
    #: Running pods that ask aliyun.com/gpu-mem (namespace/name): a change of unit must see none of them run.
    holding: tuple[str, ...]
    displaced: tuple[Displaced, ...]
    pending: tuple[Outcome, ...]
    #: The running GPU pods on each node (namespace/name), before the change.
    on_node: dict[str, list[str]]
    #: Pending pods (and displaced ones) placed by each side.
    before: PlacementResult
    after: PlacementResult


def gpu_node(src: Source) -> NodeInfo | None:
    """The node, if it reports GPU memory: the nodes a change of GPU labels concerns."""
    info = read_node(src)
    return info if info is not None and info.gpu_mem > 0 else None


def relabelled(nodes: Iterable[Source], labels: Sequence[tuple[str, str | None]]) -> list[Source]:
    """The nodes as the change leaves them: each node that reports GPU memory labelled as `kubectl label
    --overwrite` would (a None value removes the label)."""
    changed = []
    for src in nodes:
        if not labels or gpu_node(src) is None:
            changed.append(src)
            continue
        obj = copy.deepcopy(src.obj)
        meta = obj.setdefault("metadata", {})
        current = meta.setdefault("labels", {}) or {}
        meta["labels"] = current
        for key, value in labels:
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        changed.append(Source(obj, src.file, src.line))
    return changed


def _unplaced(src: Source) -> Source:
    """A running pod as its controller would create it again: no node, no status, no GPU the extender chose."""
    obj = copy.deepcopy(src.obj)
    obj.pop("status", None)
    spec = obj.setdefault("spec", {})
    spec.pop("nodeName", None)
    meta = obj.setdefault("metadata", {})
    notes = meta.get("annotations") or {}
    meta["annotations"] = {k: v for k, v in notes.items() if not k.startswith((ANN_PREFIX, ACK_PREFIX))}
    return Source(obj, src.file, src.line)


def _key(src: Source) -> str:
    meta = src.obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _placed(result: PlacementResult) -> tuple[dict[str, str], dict[str, str]]:
    """Each pod's node, and why each other pod has none (pending, another scheduler's, or invalid)."""
    nodes = {p.key: p.node for p in result.placements}
    why = {p.key: p.message for p in result.pending}
    why.update({p.key: p.reason for p in result.not_served})
    why.update({p.key: p.reason for p in result.invalid})
    return nodes, why


def impact(
    nodes: list[Source],
    existing: list[Source],
    pending: list[Source],
    before: Semantics,
    after: Semantics,
    input_unit: str,
    nodes_after: list[Source] | None = None,
) -> Impact:
    """The fleet under the settings before and after (`nodes_after`: the nodes as the change leaves them, `relabelled`;
    default the same): running pods that lose their place (and where they would go), and each pending pod's node on
    both sides. The side before reads its pods once: they hold their places on nodes made afresh, then are placed."""
    nodes_after = nodes if nodes_after is None else nodes_after
    fleet = Simulation.from_sources(nodes, existing, pending, before, input_unit)
    held = fleet.with_nodes()
    held.charge()
    on_node = {n.name: [p.key for p in n.bound if p.wants_gpu] for n in held.nodes}
    lost_before = held.displaced()
    held_after = Simulation.from_sources(nodes_after, existing, [], after, input_unit)
    holding = tuple(p.key for p in held_after.running if p.wants_gpu and p.scheduler_name == after.served_scheduler)
    lost = {k: v for k, v in held_after.displaced().items() if k not in lost_before}
    staying = [s for s in existing if not (s.kind == "Pod" and _key(s) in lost)]
    moving = [_unplaced(s) for s in existing if s.kind == "Pod" and _key(s) in lost]
    result_before = fleet.run(draws=False)
    result_after = Simulation.from_sources(nodes_after, staying, moving + pending, after, input_unit).run(draws=False)
    on_before, why_before = _placed(result_before)
    on_after, why_after = _placed(result_after)
    displaced = tuple(
        Displaced(key, node, why, on_after.get(key), why_after.get(key, "")) for key, (node, why) in lost.items()
    )
    outcomes = tuple(
        Outcome(key, on_before.get(key), on_after.get(key), why_before.get(key, ""), why_after.get(key, ""))
        for key in dict.fromkeys(
            [p.key for p in fleet.pending]
            + [p.key for p in result_before.not_served]
            + [p.key for p in result_before.invalid]
        )
    )
    return Impact(holding, displaced, outcomes, on_node, result_before, result_after)
