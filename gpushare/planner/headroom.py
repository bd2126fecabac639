"""How many more replicas of a pod template schedule, where they land, and why the next one does not.

The replicas are added after the pending workloads, as the scheduler would meet them, and placed one by one by the
placement engine; the first replica left pending ends the count: the replicas are identical, so while the fleet
does not change the next one would fail the same way (`blocked_by` is that replica's message, with each reason's
node count). The fleet is read and charged once: the running and pending pods are placed, then the replicas on the
state they leave, as many as the GPU memory left could hold and one more.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, replace

from gpushare import process
from gpushare.domain import labels
from gpushare.errors import InputError
from gpushare.kube.documents import Objects, Source, from_objects
from gpushare.kube.fields import mapping
from gpushare.kube.workloads import WORKLOAD_KINDS, read_workload
from gpushare.placement import MAX_PODS, Pending, PlacementResult, Pod, Preempted, Semantics, Simulation

#: Controllers whose replicas a template adds (DaemonSets and CronJobs have no replica count to raise).
TEMPLATE_KINDS = ("Pod", "Deployment", "StatefulSet", "ReplicaSet", "Job")


@dataclass(frozen=True)
class Landing:
    """Where replicas of the template landed: a node, the GPU indices of one replica, and how many landed so."""

    node: str
    gpus: tuple[int, ...]
    replicas: int


@dataclass(frozen=True)
class Headroom:
    """The answer for one template: `more` replicas schedule; the next is blocked as `blocked_by` says.

    `more_min`/`more_max` bound the answer over the `runs` tie-breaks sampled as well (kube-scheduler picks at
    random among nodes tied on score; `more` is the dry run's repeatable choice; without samples all three agree).
    `stranded` is the free GPU memory (units) left that no further replica can use: free memory on GPUs with less
    than one replica's share, after the last replica landed."""

    name: str
    more: int
    more_min: int
    more_max: int
    per_gpu: int
    landed: tuple[Landing, ...]
    blocked_by: Pending | None
    stranded: int
    #: The most GPU memory (units) free on any one GPU after the last replica: below `per_gpu` where memory blocks.
    largest_free: int
    #: The run the answer is read from. Its placements' `tied_with` counts ties among the nodes each search looked
    #: at only, not every node the real choice may be drawn from (`run(draws=False)`, as in every planner run).
    result: PlacementResult
    #: Runs with random tie-breaks sampled (0: none).
    runs: int = 0
    #: Pods of lower priority the replicas preempt to fit (DefaultPreemption), each with the replica it made room for.
    preempted: tuple[Preempted, ...] = ()
    #: GPU nodes where no GPU has a replica's share free after the last replica (the per-GPU words for the next one).
    short_nodes: int = 0


def _template(src: Source) -> tuple[str, str, str]:
    """(kind, namespace, name) of a template, refused when it is no kind whose replicas can be added."""
    view = read_workload(src)
    if view is None or view.kind not in TEMPLATE_KINDS:
        raise InputError(
            "--template kind",
            src.kind,
            f"a Pod or the pod template of a {', '.join(TEMPLATE_KINDS[1:])}",
            src.where,
        )
    if view.problems:  # a template that never runs has no headroom to count: validate's error, refused
        problem = view.problems[0]
        field = view.located(problem.field)
        raise InputError(
            f"--template {view.kind} {view.key} {field}",
            problem.value,
            f"{problem.allowed} [{problem.rule}]",
            src.where,
        )
    return view.kind, view.namespace, view.name


def _replicas(src: Source, kind: str, name: str, count: int) -> tuple[list[Source], list[str]]:
    """`count` replicas of the template as documents, and the names their pods get when placed."""
    if kind == "Pod":
        copies = []
        for i in range(count):
            obj = copy.deepcopy(src.obj)
            obj["metadata"] = {**mapping(obj.get("metadata")), "name": _name(name, i)}
            obj.pop("status", None)
            obj.get("spec", {}).pop("nodeName", None)
            copies.append(Source(obj, src.file, src.line))
        return copies, [_name(name, i) for i in range(count)]
    obj = copy.deepcopy(src.obj)
    spec = obj.setdefault("spec", {})
    spec["parallelism" if kind == "Job" else "replicas"] = count
    return [Source(obj, src.file, src.line)], [_name(name, i) for i in range(count)]


def _bound(after: PlacementResult, pod: Pod, preempts: bool) -> int:
    """One more replica than the room left after the pending pods could hold: on each node, what its free pod
    slots and node-level resources (cpu, memory, gpu-mem, extended resources) hold of the replica, and for a GPU
    pod what its GPUs hold, counted per GPU as the extender fits identical replicas (each GPU takes free // share;
    a multi-GPU replica needs that many GPUs of one node). The run stops failing replicas after the first, whatever
    else binds them. Where replicas may preempt, what pods of lower priority hold counts as free (preemption may
    take it back)."""
    share = max(pod.gpu_mem // max(pod.gpu_count, 1), 1)
    asks = {"cpu": pod.cpu, "memory": pod.memory, labels.GPU_MEM: pod.node_gpu_mem, **dict(pod.other)}
    fits = 0
    for node in after.nodes:
        held = zip(node.bound, node.held, strict=True)
        lower = [(o, gpus) for o, gpus in held if o.priority < pod.priority] if preempts else []
        free = {
            "cpu": node.cpu - node.cpu_used,
            "memory": node.memory - node.memory_used,
            labels.GPU_MEM: node.gpu_mem - node.gpu_mem_used,
            **{name: node.other.get(name, 0) - node.other_used.get(name, 0) for name in dict(pod.other)},
        }
        for other, _ in lower:
            free["cpu"] += other.cpu
            free["memory"] += other.memory
            free[labels.GPU_MEM] += other.node_gpu_mem
            for name, amount in other.other:
                if name in free:
                    free[name] += amount
        here = min(
            [node.pods - node.pods_used + len(lower)]
            + [max(free[name], 0) // amount for name, amount in asks.items() if amount > 0]
        )
        if pod.wants_gpu:
            freed: dict[int, int] = {}
            for other, gpus in lower:
                for gpu in gpus:
                    freed[gpu.index] = freed.get(gpu.index, 0) + other.per_gpu
            room = sum((g.total - g.used + freed.get(g.index, 0)) // share for g in node.gpus if g.healthy)
            here = min(here, room // max(pod.gpu_count, 1))
        fits += max(here, 0)
    return min(fits + 1, MAX_PODS)


def _stranded(result: PlacementResult, per_gpu: int) -> int:
    return sum(
        free
        for node in result.nodes
        for gpu in node.gpus
        if gpu.healthy and 0 < (free := gpu.total - gpu.used) < per_gpu
    )


def headroom_of(
    nodes: list[Source],
    existing: list[Source],
    pending: list[Source],
    template: Source,
    semantics: Semantics,
    input_unit: str | None = None,
    runs: int = 0,
) -> Headroom:
    """The headroom of one template (Sources as read, with their files and lines); with `runs`, that many more
    placements with random tie-breaks (seeds 1..runs) bound it (upstream: ACK's node order has no ties). The
    cyclic collector is paused throughout (`process`): the models and replicas hold no cycles."""
    with process.paused():
        return _headroom_of(nodes, existing, pending, template, semantics, input_unit, runs)


def _headroom_of(
    nodes: list[Source],
    existing: list[Source],
    pending: list[Source],
    template: Source,
    semantics: Semantics,
    input_unit: str | None,
    runs: int,
) -> Headroom:
    kind, namespace, name = _template(template)
    taken = {(s.kind, *_key(s)) for s in pending}
    if (kind, namespace, name) in taken:
        raise InputError(
            f"--template {kind} {namespace}/{name}",
            template.where,
            "a template that is not also among the pending workloads (give it once, as the template)",
        )
    # the replica read as the pending pods are (its controller counts for spreading), held out of their queue
    fleet = Simulation.from_sources(nodes, existing, pending, semantics, input_unit, templates=[probe(template)])
    replica = fleet.templates[-1]
    if not fleet.serves(replica):
        raise InputError(
            f"--template {kind} {namespace}/{name} spec.schedulerName",
            replica.scheduler_name,
            f"{fleet.semantics.served_scheduler}, the scheduler whose pods reach the gpushare extender "
            "(--scheduler-name names another)",
            template.where,
        )
    preempts = replica.preempts and fleet.profile.post_filter is not None
    # ResourceQuotas admit the replicas among the other new pods, and a sampled run draws its tie-breaks from one
    # stream as `place` would: one run of them all
    if fleet.inventory.quotas or semantics.tie_seed is not None:
        first = fleet.run(draws=False)
        bound = _bound(first, replica, preempts)
        replicas, names = _replicas(template, kind, name, bound)
        again = Simulation.from_sources(nodes, existing, pending + replicas, semantics, input_unit)
        result = again.run(draws=False)
        result.findings = first.findings  # the template's findings once, not once per replica
    else:  # the replicas placed on the fleet the first run left, read and charged once
        before = fleet.run(draws=False)
        result, names = _more(fleet, before, replica, kind, name, preempts)
    sampled = [0]
    if fleet.profile.scored:  # kube-scheduler's scores may tie (ACK's node order never does)
        for seed in range(1, runs + 1):
            sample = headroom_of(nodes, existing, pending, template, replace(semantics, tie_seed=seed), input_unit)
            sampled.append(sample.more)
    return _answer(result, f"{kind}/{namespace}/{name}", {f"{namespace}/{n}" for n in names}, sampled)


def _more(
    fleet: Simulation, before: PlacementResult, replica: Pod, kind: str, name: str, preempts: bool
) -> tuple[PlacementResult, list[str]]:
    """The replicas placed on the state `before` left: as many as the room left could hold, and one more."""
    bound = _bound(before, replica, preempts)
    names = [_name(name, i) for i in range(bound)]
    result = fleet.schedule(fleet.replicas(replica, names, kind), draws=False)
    result.warnings[:0] = before.warnings
    result.findings = before.findings
    return result, names


def _answer(result: PlacementResult, label: str, mine: set[str], sampled: list[int]) -> Headroom:
    """The answer read from the run that placed the replicas (`mine`, their keys); `sampled`: the other runs'
    counts (their first entry stands for this run's)."""
    placed = [a for a in result.placements if a.key in mine]
    victims = tuple(v for v in result.preempted if v.by in mine)
    blocked = next((p for p in result.pending if p.key in mine), None)
    landings = Counter((a.node, tuple(i for i, _ in a.gpus)) for a in placed)
    per_gpu = max((units for a in placed for _, units in a.gpus), default=0) or (blocked.per_gpu if blocked else 0)
    counts = [len(placed), *sampled[1:]]
    return Headroom(
        name=label,
        more=len(placed),
        more_min=min(counts),
        more_max=max(counts),
        per_gpu=per_gpu,
        landed=tuple(Landing(node, gpus, n) for (node, gpus), n in sorted(landings.items())),
        blocked_by=blocked,
        stranded=_stranded(result, per_gpu),
        largest_free=max((g.total - g.used for n in result.nodes for g in n.gpus if g.healthy), default=0),
        result=result,
        runs=len(counts) - 1,
        preempted=victims,
        short_nodes=sum(1 for n in result.nodes if n.gpus and max((g.free for g in n.gpus), default=0) < per_gpu),
    )


def probe(template: Source) -> Source:
    """A template checked (a kind whose replicas can be added, valid) as the one replica a simulation holds out of
    its queue (`Simulation.from_sources`' `templates`), to count its headroom on that simulation later
    (`headroom_now`)."""
    kind, _, name = _template(template)
    return _replicas(template, kind, name, 1)[0][0]


def headroom_now(fleet: Simulation, template: Source, replica: Pod) -> Headroom:
    """The headroom of a template on a simulation kept current (`gpushare watch`): its pending pods placed, then
    the replicas, then all of it rolled back; `replica` is the template's pod the simulation holds
    (`Simulation.templates`, in the order `probe`'s were given). The answer's `result` holds the live nodes, rolled
    back: read its numbers, not its nodes."""
    kind, namespace, name = _template(template)
    preempts = replica.preempts and fleet.profile.post_filter is not None
    mark = fleet.mark()
    try:
        before = fleet.schedule(list(fleet.pending), draws=False)
        result, names = _more(fleet, before, replica, kind, name, preempts)
        return _answer(result, f"{kind}/{namespace}/{name}", {f"{namespace}/{n}" for n in names}, [0])
    finally:
        fleet.rollback(mark)


def _name(name: str, i: int) -> str:
    return f"{name}-{i}"


def _key(src: Source) -> tuple[str, str]:
    meta = mapping(src.obj.get("metadata"))
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def headroom(
    nodes: Objects,
    templates: Objects,
    *,
    pods: Objects = (),
    existing: Objects = (),
    semantics: Semantics | None = None,
    input_unit: str | None = None,
    runs: int = 0,
) -> list[Headroom]:
    """For each template (a Pod, or a Deployment, StatefulSet, ReplicaSet or Job), how many more of its replicas
    schedule on `nodes` after the `existing` pods and the pending `pods`, each template asked alone; `runs`
    samples random tie-breaks for `more_min`/`more_max`."""
    semantics = semantics or Semantics()
    node_sources, existing_sources = from_objects(nodes, "nodes"), from_objects(existing, "existing")
    pending = [s for s in from_objects(pods, "pods") if s.kind in WORKLOAD_KINDS]
    chosen = from_objects(templates, "templates")
    if not chosen:
        raise InputError("templates", None, "at least one pod template")
    return [headroom_of(node_sources, existing_sources, pending, t, semantics, input_unit, runs) for t in chosen]
