"""A cluster as kube-scheduler sees it, with its plugins over it: the one way anything outside placement/ asks where
pods land. `place` and `inspect`, every planner answer (headroom, pool sizing, defragmentation, a change's impact)
and what comes next ask a `Simulation`; none runs a filter or changes a node itself, so no answer can drift from
what `place` does.

A simulation is built from Kubernetes objects or files (`Simulation.of`, `Simulation.read`, `Simulation.from_sources`):
the nodes, the pods running on them, the pods to place, and the semantics (which plugins, which minor). Then:

- `run` charges the running pods to their nodes and sends the pending ones through the scheduling queue (`queue`),
  as kube-scheduler would, one engine or the other (`fast`, `reference`; `auto` picks, `choose_engine`);
  `schedule` sends more pods through it on the state as it stands.
- `fits` runs one pod's filters on one node, each plugin's status and kube-scheduler's words; `eligible`, `devices`.
- `bind`, `unbind` and `evict` change one pod's place, through the profile's device choice; `mark` and `rollback`
  undo them (and whatever ran in between), `replay` rolls back and schedules again.
- `with_nodes` makes the same pods' simulation on nodes made afresh (a pool's nodes added), `apply` gives it the
  state a run elsewhere left, `displaced` names the running pods whose devices no longer take them.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, NewType

from gpushare import process
from gpushare.domain import kubescheduler as ks
from gpushare.domain import labels, products
from gpushare.errors import InputError, listed
from gpushare.kube.documents import Objects, Source, from_objects, read_documents
from gpushare.kube.nodes import NodeInfo
from gpushare.placement import admission, pluginsets, reference
from gpushare.placement.framework import Cycle, Rejection
from gpushare.placement.inputs import Inventory, Reading, build, replica
from gpushare.placement.model import Entry, Node, Pod, Semantics, with_changes
from gpushare.placement.pluginsets import Profile
from gpushare.placement.queue import QueueMode
from gpushare.placement.result import Assignment, Invalid, NotServed, PlacementResult
from gpushare.policy.engine import ClusterFacts, Subject, evaluate
from gpushare.policy.rules import nodes as nodes_rules
from gpushare.progress import progress

EngineName = Literal["auto", "fast", "reference"]
#: Pods x nodes a process hands the reference engine before `auto` turns to the fast one: about the work the
#: reference engine does (compiled build: 4-5 us per pod and node more than the fast one) in the time loading numpy
#: for the fast engine's indexes takes (80-100 ms). Below it a small fleet's answer loads no numpy at all.
SMALL_WORK = 16_384
#: The pods x nodes given to the reference engine so far (`choose_engine`).
_reference_work = [0]
#: A point in a simulation's history to roll back to (`Simulation.mark`).
Mark = NewType("Mark", int)
#: The node rules read a modelled node's name and labels only: they need no document behind it.
_NO_SOURCE = Source({}, "nodes")


@dataclass(frozen=True)
class Status:
    """One filter plugin's answer for a pod on a node: its reasons (none: it passed)."""

    plugin: str
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.reasons


@dataclass(frozen=True)
class Fit:
    """Whether a pod fits a node now: each filter plugin's status in the order kube-scheduler runs them, up to the
    first that rejects it (kube-scheduler stops there too)."""

    pod: str
    node: str
    statuses: tuple[Status, ...]

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.statuses)

    @property
    def rejection(self) -> Rejection | None:
        failed = next((s for s in self.statuses if not s.ok), None)
        return None if failed is None else Rejection(failed.plugin, failed.reasons)

    @property
    def reason(self) -> str:
        """kube-scheduler's words for the node ("" where the pod fits), as its FitError counts them per node."""
        rejected = self.rejection
        return "" if rejected is None else "; ".join(rejected.reasons)


@dataclass
class _Sources:
    """The documents a simulation was read from, kept to make its nodes afresh (`Simulation.with_nodes`): its nodes,
    and the documents among which are the ConfigMaps that mark GPUs unhealthy (found when first asked: a fleet's
    documents are mostly pods)."""

    nodes: list[Source]
    others: Sequence[Source] = ()
    input_unit: str | None = None
    _unhealthy: list[Source] | None = None

    @property
    def unhealthy(self) -> list[Source]:
        if self._unhealthy is None:
            self._unhealthy = [s for s in self.others if s.kind == "ConfigMap"]
            self.others = ()
        return self._unhealthy


class Simulation:
    """The nodes, the running and the pending pods of one cluster under one semantics, and the profile's plugins
    over them. Its nodes and pods are the model's (`Node`, `Pod`): read them, never change them; every change goes
    through a method here, which an undo can take back."""

    def __init__(
        self,
        inventory: Inventory,
        semantics: Semantics,
        profile: Profile | None = None,
        sources: _Sources | None = None,
    ) -> None:
        self.semantics = semantics
        #: The plugins that run, their order and weights (`pluginsets.profile`; another for a library's own plugins).
        self.profile = profile or pluginsets.profile(semantics)
        self.inventory = inventory
        self._sources = sources
        self._by_name = {n.name: n for n in inventory.nodes}
        self._charged: list[str] | None = None
        self._journal: list[Entry] | None = None
        #: Bumped by every change made here: what a pod's PreFilter counted holds while it stands.
        self._version = 0
        self._cycles: dict[int, Cycle | None] = {}
        self._cycles_at = -1
        self._anti: int | None = None
        self._ran = False
        #: Nodes made from a document once, copied for each node `add_node` adds of it.
        self._made: dict[int, Node] = {}

    # --- building one ------------------------------------------------------------------------------------------

    @classmethod
    def from_sources(
        cls,
        nodes: Sequence[Source],
        existing: Sequence[Source] = (),
        pending: Sequence[Source] = (),
        semantics: Semantics | None = None,
        input_unit: str | None = None,
        *,
        templates: Sequence[Source] = (),
        consume: bool = False,
        profile: Profile | None = None,
    ) -> Simulation:
        """From documents as read (`gpushare.kube.documents`), each with its file and line. `templates`: workloads
        read as the pending ones are, but held out of the queue (`templates`): a planner adds their replicas.
        With `consume`, `pending` is emptied as it is modelled (its last use)."""
        semantics = semantics or Semantics()
        others = [*existing, *pending] if not consume else []
        # with `consume`, the caller's list itself, emptied as it is modelled
        workloads = pending if consume and isinstance(pending, list) and not templates else [*pending, *templates]
        inventory = build(
            list(nodes), list(existing), workloads, semantics, input_unit, consume=consume, held=len(templates)
        )
        # a consumed input is the caller's last use of it: the nodes' documents are let go too (no `with_nodes`)
        return cls(inventory, semantics, profile, None if consume else _Sources(list(nodes), others, input_unit))

    @classmethod
    def of(
        cls,
        nodes: Objects,
        pods: Objects = (),
        *,
        existing: Objects = (),
        semantics: Semantics | None = None,
        input_unit: str | None = None,
        profile: Profile | None = None,
    ) -> Simulation:
        """From plain Kubernetes objects (dicts, as `yaml.safe_load` gives them, or a `kubectl get -o yaml` List):
        the Nodes, the workloads to place (Pods and controllers), the pods running."""
        return cls.from_sources(
            from_objects(nodes, "nodes"),
            from_objects(existing, "existing"),
            from_objects(pods, "pods"),
            semantics,
            input_unit,
            profile=profile,
        )

    @classmethod
    def read(
        cls,
        nodes: Iterable[str],
        pods: Iterable[str] = (),
        existing: Iterable[str] = (),
        *,
        semantics: Semantics | None = None,
        input_unit: str | None = None,
        profile: Profile | None = None,
    ) -> Simulation:
        """From YAML or JSON files; unreadable YAML raises InputError naming the file and line."""
        docs = [[s for path in paths for s in read_documents(path)] for paths in (nodes, existing, pods)]
        return cls.from_sources(docs[0], docs[1], docs[2], semantics, input_unit, profile=profile)

    def with_nodes(self, extra: Sequence[Source] = ()) -> Simulation:
        """The same pods (read once) on the nodes made afresh from their documents, `extra` nodes added after them:
        a replay of the fleet with a node pool's nodes added, or a second run from the same inputs."""
        if self._sources is None:
            raise ValueError("a simulation built from a model has no documents to make its nodes again")
        return self._on([*self._sources.nodes, *extra], self.inventory)

    def alone(self, extra: Sequence[Source]) -> Simulation:
        """A simulation of `extra` nodes only, empty, the same pods read: what a node of a pool takes by itself."""
        return self._on(list(extra), Inventory([], [], list(self.inventory.new), budgets=self.inventory.budgets))

    def _on(self, node_docs: list[Source], inventory: Inventory) -> Simulation:
        """The inventory's pods on nodes made from `node_docs` (the GPUs this simulation's ConfigMaps mark unhealthy
        marked again)."""
        docs = self._sources or _Sources([])
        nodes = build(node_docs, docs.unhealthy, [], self.semantics, docs.input_unit).nodes
        sources = _Sources(node_docs, docs.unhealthy, docs.input_unit)
        return Simulation(replace(inventory, nodes=nodes), self.semantics, self.profile, sources)

    # --- what it holds -------------------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Node]:
        """The nodes, in input order (read, never change)."""
        return self.inventory.nodes

    @property
    def running(self) -> list[Pod]:
        """The pods bound before the run (`--existing`), as read."""
        return self.inventory.existing

    @property
    def pending(self) -> list[Pod]:
        """The pods to place, in the order they arrive."""
        return self.inventory.new

    @property
    def templates(self) -> list[Pod]:
        """The pods of the `templates` workloads, held out of the queue."""
        return self.inventory.held

    @property
    def notes(self) -> list[str]:
        """What the inputs leave the run to assume."""
        return self.inventory.notes

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def has_node(self, name: str) -> bool:
        return name in self._by_name

    def replicas(self, pod: Pod, names: Sequence[str], kind: str) -> list[Pod]:
        """More replicas of a pod of a `kind` controller, named (and, a StatefulSet's, labelled) as it would."""
        return [replica(pod, name, kind) for name in names]

    @staticmethod
    def recreated(pod: Pod) -> Pod:
        """A bound pod as its controller creates it again: its spec, no node, no device."""
        return with_changes(pod, node=None, gpu_indices=None)

    # --- the queue -----------------------------------------------------------------------------------------------

    def charge(self) -> list[str]:
        """Charge the running pods to their nodes (once): their devices as the extender's annotations name them
        (`Profile.bound_gpus`). Returns the warnings (an invalid pod, an over-committed GPU)."""
        if self._charged is None:
            with process.paused():  # the charged copies hold no cycles: the collector would walk the fleet
                self._charged = charge_existing(self.nodes, self.running, self.profile)
            self._changed()
        return list(self._charged)

    def run(
        self,
        *,
        engine: EngineName = "auto",
        node_order: Mapping[str, str] | None = None,
        explain: bool = False,
        show_progress: bool = False,
        draws: bool = True,
        queue: QueueMode = "auto",
    ) -> PlacementResult:
        """Place the pending pods after charging the running ones; invalid pods are reported, not placed.
        `queue` says which pods wait in kube-scheduler's active queue together (`gpushare.placement.queue`: by
        default those with a creationTimestamp, which exist already; the others arrive one by one, in order).
        `show_progress` draws a bar on a terminal's stderr for runs longer than two seconds. Without `draws`, a pod
        placed where kube-scheduler's search stops early is tied only with the nodes sharing its best score among
        those searched, not with every node the real choice may be drawn from (`Sampler.draws`): answers that count
        pods and show no choice (the planner's) spare that scoring of the whole fleet."""
        if self._ran:
            raise RuntimeError(
                "a simulation runs its pending pods once: `schedule` sends more, `with_nodes` starts again"
            )
        self._ran = True
        refuse_unsupported_unit(self.nodes, self.semantics)
        warnings = self.charge()
        pending, quotas = self.pending, self.inventory.quotas
        result = self._queue(pending, quotas, engine, node_order, explain, show_progress, draws, self.notes, queue)
        result.warnings[:0] = warnings
        result.findings = list(self.inventory.findings)
        return result

    def schedule(
        self, pods: Sequence[Pod], *, engine: EngineName = "auto", explain: bool = False, draws: bool = True
    ) -> PlacementResult:
        """More pods through the queue, on the state as it stands (the running pods charged first): a template's
        replicas after the fleet's own pods."""
        self.charge()
        return self._queue(list(pods), [], engine, None, explain, False, draws, [])

    def replay(self, mark: Mark, pods: Sequence[Pod], *, draws: bool = True) -> PlacementResult:
        """Roll back to `mark`, then send `pods` through the queue again."""
        self.rollback(mark)
        return self.schedule(pods, draws=draws)

    def _queue(
        self,
        new: list[Pod],
        quotas: list[admission.Quota],
        engine: EngineName,
        node_order: Mapping[str, str] | None,
        explain: bool,
        show_progress: bool,
        draws: bool,
        notes: Sequence[str],
        queue: QueueMode = "auto",
    ) -> PlacementResult:
        profile = self.profile
        served = self.semantics.served_scheduler
        refused, quota_notes = admission.admit(quotas, self.running, [p for p in new if not p.invalid])
        never_created = {id(r.pod) for r in refused}
        valid = [p for p in new if not p.invalid and id(p) not in never_created and self.serves(p)]
        if profile.pick is not None:  # the fast engine's indexes keep the repeatable tie-break: a sample goes node
            engine = "reference"  # by node
        elif engine == "auto":
            engine = choose_engine(len(valid), len(self.nodes))
        if engine == "fast":
            with process.paused():  # numpy, loaded only for the fast engine: its many objects are no garbage
                from gpushare.placement.fast import engine as fast_engine

            runner = fast_engine.place
        else:
            runner = reference.place
        with process.paused(), progress(len(valid), "pods", show_progress) as tick:
            result = runner(
                self.nodes, valid, profile, dict(node_order or {}), explain, tick, self.inventory.budgets, draws, queue
            )
        self._changed(recount=True)
        if result.pending:  # what each pending pod asks, for the reports' numbers (no cycles: nothing to collect)
            asks = {p.key: p for p in valid}
            with process.paused():
                result.pending = [
                    replace(p, requests=_requests(asks[p.key])) if p.key in asks else p for p in result.pending
                ]
        result.scored = profile.scored
        result.invalid = [Invalid(p.namespace, p.name, p.invalid, p.source) for p in new if p.invalid]
        result.invalid += [Invalid(r.pod.namespace, r.pod.name, r.message, r.pod.source) for r in refused]
        result.not_served = [
            NotServed(p.namespace, p.name, p.scheduler_name, served, p.source)
            for p in new
            if not p.invalid and id(p) not in never_created and not self.serves(p)
        ]
        unindexed = profile.unindexed(valid, self.nodes) if explain and engine == "fast" else []
        result.warnings = [
            *result.warnings,
            *notes,
            *quota_notes,
            *_preset(new, self.nodes, profile),
            *_unknown_order(self.nodes, profile, bool(valid)),
            *_replay_gaps(new, self.nodes, node_order or {}),
            *_deviceless(self.nodes),
            *[
                f"score plugin {name} declares no hook for the fast path's score index: every pod was scored node by "
                "node (as the reference engine does)"
                for name in unindexed
            ],
        ]
        return result

    # --- one pod -------------------------------------------------------------------------------------------------

    def serves(self, pod: Pod) -> bool:
        """Whether the modelled scheduler takes the pod: it names the scheduler the extender serves, asks no GPU
        (any scheduler places it alike), or names its node (bound at creation, whichever scheduler it names)."""
        return pod.scheduler_name == self.semantics.served_scheduler or not pod.wants_gpu or pod.node is not None

    def fits(self, pod: Pod, node: Node, *, prefilter: bool = True) -> Fit:
        """Each filter plugin's status for `pod` on `node` as it stands, in kube-scheduler's order, up to the first
        that rejects (the pods nominated there of at least the pod's priority counted, as kube-scheduler counts
        them). Without `prefilter` the rules between pods (affinity, spreading) are not counted: they pass (an
        estimate, for packings that place pods on empty nodes)."""
        profile, cycle = self.profile, self._cycle(pod) if prefilter else None
        statuses: list[Status] = []
        for plugin in profile.static_filters:
            reasons = plugin.filter(node, pod, cycle)
            statuses.append(Status(plugin.name, tuple(reasons)))
            if reasons:
                return Fit(pod.key, node.name, tuple(statuses))
        rejected = profile.dynamic_rejection(node, pod, cycle)
        for plugin in profile.dynamic_filters:
            if rejected is not None and plugin.name == rejected.plugin:
                statuses.append(Status(plugin.name, rejected.reasons))
                break
            statuses.append(Status(plugin.name))
        return Fit(pod.key, node.name, tuple(statuses))

    def admits(self, pod: Pod, node: Node, *, prefilter: bool = True) -> bool:
        """`fits(...).ok`, without the statuses (for loops over many nodes)."""
        return self.profile.rejection(node, pod, self._cycle(pod) if prefilter else None) is None

    def explain(self, pod: Pod) -> list[Fit]:
        """`fits` on every node, in input order."""
        return [self.fits(pod, node) for node in self.nodes]

    def eligible(self, pod: Pod) -> list[Node]:
        """The nodes whose labels, taints and spec let the pod in (the static filters: no bind changes them)."""
        return [n for n in self.nodes if self.profile.static_rejection(n, pod) is None]

    def devices(self, pod: Pod, node: Node) -> tuple[int, ...]:
        """The GPUs a bind of `pod` to `node` gives it now (the extender's device choice), by index."""
        return tuple(g.index for g in self.profile.gpus.choose_gpus(node, pod))

    def bind(self, pod: Pod, node: Node, gpus: Sequence[int] | None = None) -> Assignment:
        """Bind `pod` to `node` on the GPUs `gpus` names, or those the device choice gives it (a pod that names its
        node is charged as a running pod is: `Profile.bound_gpus`). No filter is asked: ask `fits` first."""
        if gpus is None and pod.node is not None:
            charged, held, _ = self.profile.bound_gpus(node, pod)
            node.add_pod(charged, held)
            chosen = held
        else:
            by_index = {g.index: g for g in node.gpus}
            chosen = self.profile.gpus.choose_gpus(node, pod) if gpus is None else [by_index[i] for i in gpus]
            node.add_pod(pod, chosen)
        self._changed(bound=pod)
        return Assignment(
            pod.namespace, pod.name, node.name, tuple((g.index, pod.per_gpu) for g in chosen), pod.core, 1
        )

    def unbind(self, pod: Pod, node: Node | None = None) -> Node:
        """Take a bound pod off its node (`node`, else the one it names, else any), giving back its devices; the pod
        is found there by identity, else by name. Returns the node."""
        where = node or self._by_name.get(pod.node or "")
        for candidate in [where] if where is not None else self.nodes:
            found = next((p for p in candidate.bound if p is pod), None)
            if found is None:
                found = next((p for p in candidate.bound if p.key == pod.key), None)
            if found is not None:
                candidate.remove_pod(found)
                self._changed(unbound=found)
                return candidate
        raise KeyError(pod.key)

    def evict(self, key: str, node: str) -> Pod | None:
        """Delete the pod named `key` from `node` (preemption's victim, a planner's move): None if it is not there."""
        where = self._by_name.get(node)
        victim = None if where is None else next((p for p in where.bound if p.key == key), None)
        if where is not None and victim is not None:
            where.remove_pod(victim)
            self._changed(unbound=victim)
        return victim

    def add_node(self, source: Source) -> Node:
        """A node added, made from its document (what a node pool adds): modelled by itself (its filters read only
        itself), once per document, copied for each node added of it."""
        made = self._made.get(id(source))
        if made is None:
            docs = self._sources or _Sources([])
            made = build([source], docs.unhealthy, [], self.semantics, docs.input_unit).nodes[0]
            self._made[id(source)] = made
        node = copy.deepcopy(made)
        node.id = len(self.nodes)
        node.journal = self._journal
        self.nodes.append(node)
        self._by_name[node.name] = node
        if self._journal is not None:
            self._journal.append((node, None, [], True))
        self._changed()
        return node

    # --- a live cluster's changes (`gpushare watch`) ---------------------------------------------------------------

    def read_pod(self, source: Source) -> Pod | None:
        """A Pod that arrived after the simulation was built, read as its pods were (`Reading.pod`): bound, a
        running pod to `bind`; unbound, one to `enqueue`. None for what is no Pod."""
        return self._reading().pod(source)

    def enqueue(self, pod: Pod) -> None:
        """A pod created unbound joins the pending ones, at the end of the queue."""
        self.pending.append(pod)

    def dequeue(self, pod: Pod) -> None:
        """A pending pod gone (bound by the real scheduler, or deleted): it leaves the queue."""
        pending = self.pending
        del pending[next(i for i in range(len(pending) - 1, -1, -1) if pending[i] is pod)]

    def put_node(self, source: Source) -> Node | None:
        """A Node added or changed, made from its document as the others were (an invalid one raises InputError):
        a new name is added last; a changed node keeps its place, and its running pods move to it, charged again by
        their annotations. None for what is no Node. Not undoable: never while a mark is open."""
        self._refuse_open_mark("a node put")
        node = self._reading().node(source)
        if node is None:
            return None
        old = self._by_name.get(node.name)
        node.journal = self._journal
        moved = [] if old is None else list(old.bound)
        if old is None:
            node.id = len(self.nodes)
            self.nodes.append(node)
        else:
            node.id = old.id
            self.nodes[old.id] = node
        self._by_name[node.name] = node
        for pod in moved:
            self.bind(pod, node)
        self._changed(recount=True)
        return node

    def remove_node(self, name: str) -> list[Pod]:
        """A Node deleted: it leaves the model, with the pods bound to it (returned: the garbage collector deletes
        them in a cluster). Not undoable: never while a mark is open."""
        self._refuse_open_mark("a node removed")
        node = self._by_name.pop(name)
        del self.nodes[node.id]
        for i in range(node.id, len(self.nodes)):
            self.nodes[i].id = i
        self._changed(recount=True)
        return list(node.bound)

    def trial(self, *, engine: EngineName = "auto", explain: bool = False, draws: bool = False) -> PlacementResult:
        """The pending pods sent through the queue on the state as it stands, then rolled back: what would bind and
        what stays pending now, asked as often as the state changes (`run` runs once)."""
        self.charge()
        mark = self.mark()
        try:
            return self._queue(list(self.pending), self.inventory.quotas, engine, None, explain, False, draws, [])
        finally:
            self.rollback(mark)

    def settle(self) -> None:
        """Every change so far is for good and nothing records from here on (until the next `mark`): a live model
        between its questions, whose changes are the cluster's and are never undone. Refused while a mark holds
        changes still to roll back."""
        if self._journal is None:
            return
        self._refuse_open_mark("settling")
        self._journal = None
        for node in self.nodes:
            node.journal = None

    def _reading(self) -> Reading:
        if self.inventory.reading is None:
            raise ValueError("this simulation was not read from documents: it cannot read one more")
        return self.inventory.reading

    def _refuse_open_mark(self, what: str) -> None:
        if self._journal:
            raise RuntimeError(f"{what} cannot be undone: roll back to the open mark first")

    # --- undo ----------------------------------------------------------------------------------------------------

    def mark(self) -> Mark:
        """A point to roll back to: every change from here on is recorded."""
        if self._journal is None:
            self._journal = []
            for node in self.nodes:
                node.journal = self._journal
        return Mark(len(self._journal))

    def rollback(self, mark: Mark) -> None:
        """Undo every change since `mark`, in reverse: binds, deletions, nodes added, and what runs placed."""
        journal = self._journal
        if journal is None or mark > len(journal):
            raise ValueError(f"no such mark: {mark}")
        undo = journal[mark:]
        anti = 0  # bound pods with required anti-affinity the undo takes off (or puts back, negative)
        for node, pod, gpus, added in reversed(undo):
            if pod is None:  # a node added: the last of them first, by identity
                del self.nodes[next(i for i in range(len(self.nodes) - 1, -1, -1) if self.nodes[i] is node)]
                self._by_name.pop(node.name, None)
            elif added:
                node.remove_pod(pod)
                anti += _anti(pod)
            else:
                node.add_pod(pod, gpus)
                anti -= _anti(pod)
        del journal[mark:]  # the undo's own entries too: nothing since the mark is left to undo
        self._version += 1
        if self._anti is not None:  # kept as it was counted: a recount would walk every bound pod
            self._anti -= anti

    # --- state made elsewhere -----------------------------------------------------------------------------------

    def apply(self, result: PlacementResult) -> PlacementResult:
        """The state a run of these pods left (a run made in another process), from its answers, without placing
        anything again: the running pods charged, those it preempted taken off, the pods it placed bound in its
        order on the GPUs it gave them (a pod naming its node charged as the run charged it). Returns `result` with
        this simulation's nodes. Pods sharing a name make the answers ambiguous: then the pods are placed again."""
        pods = {pod.key: pod for pod in self.pending}
        if len(pods) < len(self.pending):
            return self.run(draws=False)
        self.charge()
        for gone in result.preempted:  # a victim the run itself placed left its placements: not charged here
            self.evict(gone.key, gone.node)
        for placed in result.placements:
            pod, node = pods[placed.key], self._by_name[placed.node]
            self.bind(pod, node, None if pod.node is not None else [index for index, _ in placed.gpus])
        return replace(result, nodes=self.nodes)

    def displaced(self) -> dict[str, tuple[str, str]]:
        """The running GPU pods whose place no longer holds under this simulation's semantics (after a change of
        unit, label mode or GPU memory): each node's GPU pods taken off, then put back in their order on the GPUs
        they hold, each checked first by the device rules (`GpuShare.holds`); those that no longer hold stay off.
        Pod key -> (node, why). Placement filters such as node affinity are not asked again: a running pod is not
        scheduled again."""
        self.charge()
        lost: dict[str, tuple[str, str]] = {}
        gpus_of = self.profile.gpus
        for node in self.nodes:
            pods = [p for p in node.bound if p.wants_gpu]
            held = {id(p): list(gpus) for p, gpus in zip(node.bound, node.held, strict=True) if p.wants_gpu}
            for pod in pods:
                node.remove_pod(pod)
            for pod in pods:
                why = gpus_of.holds(node, pod, held[id(pod)], self.semantics.gpu_memory_unit)
                if why:
                    lost[pod.key] = (node.name, why)
                else:
                    node.add_pod(pod, held[id(pod)])
        self._changed(recount=True)
        return lost

    # --- bookkeeping ---------------------------------------------------------------------------------------------

    def _changed(self, bound: Pod | None = None, unbound: Pod | None = None, recount: bool = False) -> None:
        self._version += 1
        if recount:
            self._anti = None
        elif self._anti is not None:
            self._anti += _anti(bound) - _anti(unbound)

    def _cycle(self, pod: Pod) -> Cycle | None:
        """The pod's PreFilter counts on the state as it stands, where a rule between pods applies to it; kept until
        the state changes (a search asks for one pod on many nodes)."""
        if self._cycles_at != self._version:
            self._cycles, self._cycles_at = {}, self._version
        key = id(pod)
        if key in self._cycles:
            return self._cycles[key]
        if self._anti is None:
            self._anti = sum(1 for n in self.nodes for p in n.bound if _anti(p))
        cycle = self.profile.prefilter(pod, self.nodes) if self.profile.needs_cycle(pod, self._anti > 0) else None
        self._cycles[key] = cycle
        return cycle


def _anti(pod: Pod | None) -> int:
    return int(pod is not None and pod.pod_affinity is not None and bool(pod.pod_affinity.required_anti))


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


def _preset(new: Sequence[Pod], nodes: Sequence[Node], plugins: Profile) -> list[str]:
    """Pods to place that name their node (spec.nodeName): no scheduler sees them, so what the extender would have
    done for them is not done."""
    names = {n.name for n in nodes}
    notes = []
    for pod in new:
        if pod.node is None or pod.invalid:
            continue
        if pod.node not in names:
            notes.append(f"pod {pod.key} sets spec.nodeName {pod.node}: no such node in the fleet, it stays pending")
        elif pod.wants_gpu and not plugins.places_unannotated:
            notes.append(
                f"pod {pod.key} sets spec.nodeName {pod.node}: bound at creation, no scheduler sees it, so the "
                f"extender gives it no GPU device and no index annotation; its {labels.GPU_MEM} counts at node level "
                "only, and the device plugin, finding no pod the extender assumed, starts it with no GPU visible "
                "(NVIDIA_VISIBLE_DEVICES=no-gpu-has-...-to-run)"
            )
    return notes


def _unknown_order(nodes: Sequence[Node], profile: Profile, placing: bool) -> list[str]:
    """Where kube-scheduler's search stops early and the minor lists nodes in an order no one can know: say so."""
    scheduler = profile.scheduler
    searched = ks.num_feasible_nodes_to_find(len(nodes), scheduler.percentage_of_nodes_to_score)
    if not placing or not profile.scored or scheduler.lists_nodes_by_name or searched >= len(nodes):
        return []
    return [
        f"kube-scheduler 1.{scheduler.minor} lists the {len(nodes)} nodes in an order that changes at every start of "
        f"it (1.27-1.34 list them by name), and each search stops once {searched} nodes pass its filters: which "
        "nodes a pod's search sees cannot be known. The dry run takes the input's order (TIED ~N: the nodes the "
        "choice may be drawn from); --runs K samples other orders and says how often each pod lands as shown"
    ]


def _replay_gaps(new: Sequence[Pod], nodes: Sequence[Node], order: Mapping[str, str]) -> list[str]:
    """--node-order lines that replay nothing: a node not in the fleet (its pod stays pending), a pod not placed."""
    if not order:
        return []
    names = {n.name for n in nodes}
    pods = {p.key for p in new}
    gaps = [
        f"--node-order: {pod} -> {node}: no node {node} in the fleet, the pod stays pending"
        for pod, node in order.items()
        if pod in pods and node not in names
    ]
    unknown = [pod for pod in order if pod not in pods]
    if unknown:
        gaps.append(f"--node-order: {len(unknown)} pods named are not among the pods to place: {listed(unknown)}")
    return gaps


def _requests(pod: Pod) -> tuple[tuple[str, int], ...]:
    """What a pod asks of a node, by resource name (`Pending.requests`)."""
    asked = (("cpu", pod.cpu), ("memory", pod.memory), (labels.GPU_MEM, pod.node_gpu_mem), *pod.other)
    return tuple((name, amount) for name, amount in asked if amount)


def choose_engine(pods: int, nodes: int) -> EngineName:
    """The engine `auto` runs: both give the same answer (tests/test_placement_properties.py holds it), so only
    time decides. The fast engine's indexes need numpy, whose loading costs more than a small fleet's whole answer
    node by node; so the reference engine takes runs while the process has not loaded numpy and their pods x nodes,
    added up, stay within SMALL_WORK. Past that, or once numpy is in (a larger run, or the caller's own), the fast
    one: a process of many small runs (a planner's) pays at most about twice what knowing its future would."""
    work = pods * nodes
    if "numpy" in sys.modules or _reference_work[0] + work > SMALL_WORK:
        return "fast"
    _reference_work[0] += work
    return "reference"


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
            f"{products.UNIT_1GIB}: {rule.summary} ({listed(refused)}) [{rule.id}]",
        )


def _deviceless(nodes: Sequence[Node]) -> list[str]:
    """Nodes whose GPU memory no GPU pod can use: the extender makes no device without a GPU count."""
    names = [n.name for n in nodes if n.gpu_mem and not n.gpus]
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
    engine: EngineName = "auto",
    node_order: Mapping[str, str] | None = None,
    input_unit: str | None = None,
    explain: bool = False,
    queue: QueueMode = "auto",
) -> PlacementResult:
    """Where would `pods` (Pods and controllers) land on `nodes`, given the `existing` bound pods? Each takes
    dicts as `yaml.safe_load` gives them, or a `kubectl get -o yaml` List.

    `explain` adds, for each pending pod, every node and why the pod does not fit it (costs a scan per
    pending pod, so it is off by default for fleet-scale runs). `queue`: which pods wait together
    (`Simulation.run`)."""
    simulation = Simulation.of(nodes, pods, existing=existing, semantics=semantics, input_unit=input_unit)
    return simulation.run(engine=engine, node_order=node_order, explain=explain, queue=queue)


def place_files(
    nodes: Iterable[str],
    pods: Iterable[str],
    existing: Iterable[str] = (),
    *,
    semantics: Semantics | None = None,
    input_unit: str | None = None,
    engine: EngineName = "auto",
    node_order: Mapping[str, str] | None = None,
    explain: bool = False,
    show_progress: bool = False,
    draws: bool = True,
    queue: QueueMode = "auto",
) -> PlacementResult:
    """`place` over YAML files; unreadable YAML raises InputError naming the file and line."""
    simulation = Simulation.read(nodes, pods, existing, semantics=semantics, input_unit=input_unit)
    return simulation.run(
        engine=engine, node_order=node_order, explain=explain, show_progress=show_progress, draws=draws, queue=queue
    )
