"""Placement results for people (tables, the `kubectl inspect gpushare` view) and for pipelines (JSON)."""

from __future__ import annotations

from typing import Any, TextIO

from gpushare import output
from gpushare.domain import kinds, kubescheduler, labels
from gpushare.domain.products import MIB_PER_UNIT, UNIT_GIB
from gpushare.placement.framework import GPU_SHORT, TOO_MANY_PODS, Rejection
from gpushare.placement.model import Node, Semantics
from gpushare.placement.result import Pending, PlacementResult, Preempted
from gpushare.policy.report import finding_dict, finding_lines

#: The heading of the inputs' errors (`PlacementResult.findings`) in place's and capacity's text.
NEVER_RUNS = "ERRORS IN THE INPUTS (as validate reports them: pods that never run or bind, nodes no real one reports)"


def amount(resource: str, value: int) -> str:
    """A request or a free amount as a person reads it: cpu in cores (or millicores), memory in Gi/Mi/Ki."""
    if resource == "cpu":
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if resource == "memory":
        for suffix, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if value >= size:
                return f"{value / size:.3g}{suffix}"
    return str(value)


def shortfall(p: Pending, node: Node, reason: str) -> str:
    """A resource reason's numbers on a node as the run left it: what the pod asks, what is free ('' for a reason
    that is no amount: taints, affinity, labels)."""
    if reason == TOO_MANY_PODS:
        return f"it holds {node.pods_used} of {node.pods} pods"
    if reason.startswith(GPU_SHORT):
        gpus = [str(g.free) if g.healthy else "unhealthy" for g in node.gpus]
        return f"asks {p.per_gpu} on one GPU; free per GPU: {', '.join(gpus) or 'no GPU'}"
    if not reason.startswith("Insufficient "):
        return ""
    name = reason.removeprefix("Insufficient ")
    asked = dict(p.requests).get(name)
    if asked is None:
        return ""
    return f"asks {amount(name, asked)}, {amount(name, max(_free(node, name), 0))} free"


def binding(p: Pending, nodes: list[Node]) -> str:
    """What keeps a pending pod out, named as it is: the reason most nodes give, with its numbers on the node that
    comes closest (its state at the end of the run): `Insufficient cpu on 8 nodes: asks 12, 8 free (the most on
    one node)`."""
    if not p.reasons:
        return p.message
    reason, count = max(p.reasons, key=lambda rc: (rc[1], rc[0]))
    said = f"{reason} on {count} of {p.nodes} nodes"
    if reason == TOO_MANY_PODS:
        return f"{said}: each holds its most pods"
    if reason.startswith(GPU_SHORT):
        best = max(nodes, key=lambda n: max((g.free for g in n.gpus if g.healthy), default=0), default=None)
    elif reason.startswith("Insufficient "):
        name = reason.removeprefix("Insufficient ")
        best = max(nodes, key=lambda n: _free(n, name), default=None)
    else:
        return said
    numbers = shortfall(p, best, reason) if best is not None else ""
    return f"{said}: {numbers} (the most on one node: {best.name})" if numbers and best is not None else said


def _free(node: Node, name: str) -> int:
    """What a node has free of a resource NodeResourcesFit counts."""
    if name == "cpu":
        return node.cpu - node.cpu_used
    if name == "memory":
        return node.memory - node.memory_used
    if name == labels.GPU_MEM:
        return node.gpu_mem - node.gpu_mem_used
    return node.other.get(name, 0) - node.other_used.get(name, 0)


def fragmentation(result: PlacementResult) -> int:
    """Free GPU memory (units) no pending GPU pod can use: what is left on partly used GPUs, below the smallest
    per-GPU request pending (an untouched GPU too small for every request is small, not fragmented)."""
    requests = [p.per_gpu for p in result.pending if p.per_gpu]
    smallest = min(requests, default=0)
    if not smallest:
        return 0
    return sum(g.free for n in result.nodes for g in n.gpus if g.used and 0 < g.free < smallest)


def summary(result: PlacementResult) -> dict[str, Any]:
    """The run's counts (nodes, GPUs, pods placed, pending...) and GPU memory used, as the JSON report's summary."""
    gpus = [g for n in result.nodes for g in n.gpus]
    return {
        "nodes": len(result.nodes),
        "gpuNodes": sum(1 for n in result.nodes if n.gpus),
        "gpus": len(gpus),
        "placed": len(result.placements),
        "pending": len(result.pending),
        "invalid": len(result.invalid),
        "notServed": len(result.not_served),
        "preempted": len(result.preempted),
        "gpusTouched": sum(1 for g in gpus if g.used),
        "gpuMemory": {"used": sum(g.used for g in gpus), "total": sum(g.total for g in gpus)},
        "fragmentation": fragmentation(result),
    }


def to_dict(result: PlacementResult) -> dict[str, Any]:
    """The versioned JSON document (schemas/placement-report.schema.json)."""
    sem = result.semantics
    return {
        "apiVersion": kinds.API_VERSION,
        "kind": kinds.PLACEMENT_REPORT,
        "semantics": {
            "name": sem.name,
            "placement": sem.placement,
            "gpuMemoryUnit": sem.gpu_memory_unit,
            "cgpuMaxPodsPerGpu": sem.cgpu_max_pods_per_gpu,
            "schedulerName": sem.served_scheduler,
            "scheduler": {
                "kubernetesMinor": f"1.{sem.scheduler.minor}",
                "configApi": sem.scheduler.api,
                "percentageOfNodesToScore": sem.scheduler.percentage_of_nodes_to_score,
            },
        },
        "summary": summary(result),
        "placements": [
            {
                "namespace": a.namespace,
                "name": a.name,
                "node": a.node,
                "gpus": [{"index": i, "units": u} for i, u in a.gpus],
                "core": a.core,
                "tiedWith": a.tied_with,
            }
            for a in result.placements
        ],
        "pending": [pending_dict(p) for p in result.pending],
        "preempted": [preempted_dict(v) for v in result.preempted],
        "invalid": [
            {"namespace": i.namespace, "name": i.name, "reason": i.reason, "source": i.source} for i in result.invalid
        ],
        "notServed": [
            {
                "namespace": n.namespace,
                "name": n.name,
                "schedulerName": n.scheduler_name,
                "reason": n.reason,
                "source": n.source,
            }
            for n in result.not_served
        ],
        "nodes": [node_dict(n) for n in result.nodes if n.gpus],
        "warnings": list(result.warnings),
        "findings": [finding_dict(f) for f in result.findings],
        **(
            {
                "sampled": {
                    "runs": result.sampled_runs,
                    "pods": [
                        {
                            "namespace": s.namespace,
                            "name": s.name,
                            "node": s.node,
                            "same": s.same,
                            "elsewhere": s.elsewhere,
                            "pending": s.pending,
                            "likely": s.likely,
                            "likelyRuns": s.likely_runs,
                        }
                        for s in result.sampled
                    ],
                }
            }
            if result.sampled_runs
            else {}
        ),
    }


def preempted_dict(v: Preempted) -> dict[str, Any]:
    """A pod preemption deleted, as the JSON reports write it (place's and the planner's)."""
    return {
        "namespace": v.namespace,
        "name": v.name,
        "node": v.node,
        "by": v.by,
        "priority": v.priority,
        "tiedWith": v.tied_with,
    }


def pending_dict(p: Pending) -> dict[str, Any]:
    """A pending pod with kube-scheduler's message, its reasons per node and what preemption said, as the JSON
    reports write it."""
    doc: dict[str, Any] = {
        "namespace": p.namespace,
        "name": p.name,
        "message": p.message,
        "reasons": [{"reason": r, "nodes": c} for r, c in p.reasons],
    }
    if p.nominated:
        doc["nominatedNode"] = p.nominated
    if p.unfiltered:
        doc["unfiltered"] = p.unfiltered
    if p.by_node:
        doc["byNode"] = [{"node": n, "plugin": r.plugin, "reason": "; ".join(r.reasons)} for n, r in p.by_node]
    if p.preemption:
        doc["preemption"] = [{"node": n, "answer": a} for n, a in p.preemption]
    return doc


def node_dict(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "mode": node.mode,
        "placement": node.gpu_placement,
        "gpus": [
            {
                "index": g.index,
                "used": g.used,
                "total": g.total,
                "healthy": g.healthy,
                "coreUsed": g.core_used,
                "coreTotal": g.core_total,
                "pods": g.pods,
            }
            for g in node.gpus
        ],
    }


def to_text(result: PlacementResult, limit: int = 50) -> str:
    """The human view: placed pods, pending pods with the scheduler's message, invalid pods, a summary."""
    lines: list[str] = []
    tied = any(a.tied_with > 1 for a in result.placements)
    victims: dict[str, list[str]] = {}
    for v in result.preempted:
        victims.setdefault(v.by, []).append(v.key)
    rows = [["POD", "NODE", "GPU:UNITS", "CORE%", *(["TIED"] if tied else []), *(["PREEMPTED"] if victims else [])]]
    for a in result.placements[:limit]:
        row = [a.key, a.node, ",".join(f"{i}:{u}" for i, u in a.gpus) or "no GPU", str(a.core or "-")]
        row += [f"~{a.tied_with}" if a.tied_with > 1 else ""] if tied else []
        rows.append(row + ([",".join(victims.get(a.key, []))] if victims else []))
    lines += output.table(rows)
    if len(result.placements) > limit:
        lines.append(f"... {len(result.placements) - limit} more placed (-o json for all)")
    if result.pending:
        lines += ["", "PENDING"]
        by_name = {n.name: n for n in result.nodes}
        runs = _alike(result.pending)
        for p, alike in runs[:limit]:
            lines += output.table([[output.counted_key(p.key, alike), p.message]])
            if p.nominated:
                lines.append(f"    nominated to {p.nominated} (status.nominatedNodeName)")
            lines += [_rejected(p, node, rejected, by_name) for node, rejected in p.by_node]
            lines += [f"    {node}: PostFilter DefaultPreemption: {answer}" for node, answer in p.preemption]
        if len(runs) > limit:
            lines.append(f"... {sum(n for _, n in runs[limit:])} more pending (-o json for all)")
    if result.preempted:
        lines += ["", "PREEMPTED (deleted by kube-scheduler to make room)"]
        rows = [["POD", "NODE", "PRIORITY", "BY"]]
        rows += [
            [v.key, v.node, str(v.priority), v.by + (f" (~{v.tied_with})" if v.tied_with > 1 else "")]
            for v in result.preempted[:limit]
        ]
        lines += output.table(rows)
        if len(result.preempted) > limit:
            lines.append(f"... {len(result.preempted) - limit} more preempted")
    if result.invalid:
        lines += ["", "INVALID"]
        lines += output.table([[i.key, i.reason, i.source] for i in result.invalid])
    if result.findings:
        lines += ["", NEVER_RUNS, *finding_lines(result.findings)]
    if result.not_served:
        lines += ["", f"NOT SERVED BY GPUSHARE (spec.schedulerName is not {result.semantics.served_scheduler})"]
        lines += output.table([[n.key, n.scheduler_name, n.source] for n in result.not_served[:limit]])
        if len(result.not_served) > limit:
            lines.append(f"... {len(result.not_served) - limit} more not served")
    s = summary(result)
    unit = result.semantics.gpu_memory_unit
    lines += [
        "",
        f"placed {s['placed']}, pending {s['pending']}, invalid {s['invalid']}"
        + (f", not served {s['notServed']}" if s["notServed"] else "")
        + (f", preempted {s['preempted']}" if s["preempted"] else "")
        + "; "
        f"GPUs touched {s['gpusTouched']}/{s['gpus']}; GPU memory {s['gpuMemory']['used']}/"
        f"{s['gpuMemory']['total']} x {unit}; fragmented {s['fragmentation']} x {unit}",
    ]
    if result.placements and not (result.pending or result.invalid or result.not_served or result.findings):
        lines.append("everything fits: every pod placed")
    if result.scored:
        lines.append(f"nodes chosen as {result.semantics.scheduler.label} scores them")
        total = len(result.nodes)
        percentage = result.semantics.scheduler.percentage_of_nodes_to_score
        searched = kubescheduler.num_feasible_nodes_to_find(total, percentage)
        if searched < total:
            lines.append(
                f"{total} nodes: kube-scheduler stops filtering once {searched} nodes fit (percentageOfNodesToScore "
                f"{percentage or 'unset'}), starting where the previous pod's search ended, and scores those only; "
                "the dry run searches the same way"
            )
    if tied:
        count = sum(1 for a in result.placements if a.tied_with > 1)
        lines.append(
            f"TIED ~N: {count} pods may go to any of N nodes: tied on the best score, or, where the search stopped "
            "early, the best of whichever nodes kube-scheduler's parallel filters found first; the dry run takes "
            "the one with the most GPU memory free on a device, then by name"
        )
    lines += _sampled_lines(result, limit)
    lines += [f"warning: {w}" for w in result.warnings]
    return "\n".join(lines) + "\n"


def _alike(pending: list[Pending]) -> list[tuple[Pending, int]]:
    """Pending pods in order, a run of one workload's replicas with one message and nothing of their own to say
    (no nomination, no per-node reasons) told once, with their count."""

    def same(first: Pending, p: Pending) -> bool:
        alone = p.nominated or p.by_node or p.preemption or first.by_node or first.preemption
        stems = output.replica_stem(first.namespace, first.name) == output.replica_stem(p.namespace, p.name)
        return stems and first.message == p.message and not alone

    return output.alike(pending, same)


def _rejected(p: Pending, name: str, rejected: Rejection, nodes: dict[str, Node]) -> str:
    """One node's `--explain` line, with the numbers of each resource reason."""
    node = nodes.get(name)
    numbers = [said for r in rejected.reasons if node is not None and (said := shortfall(p, node, r))]
    return f"    {name}: {rejected.text}" + (f" ({'; '.join(numbers)})" if numbers else "")


def _sampled_lines(result: PlacementResult, limit: int) -> list[str]:
    """`--runs`: the pods whose outcome changed in some run, and how often each outcome came."""
    runs = result.sampled_runs
    if not runs:
        return []
    varied = [s for s in result.sampled if s.same < runs]
    lines = [
        "",
        f"SAMPLED over {runs} runs (nodes listed in random orders, ties broken at random): "
        f"{len(result.sampled) - len(varied)} of {len(result.sampled)} pods as above in every run",
    ]
    if varied:
        rows = [["POD", "DRY RUN", "SAME", "ELSEWHERE", "PENDING", "LIKELIEST (RUNS)"]]
        rows += [
            [
                s.key,
                s.node or "pending",
                str(s.same),
                str(s.elsewhere),
                str(s.pending),
                f"{s.likely or 'pending'} ({s.likely_runs})",
            ]
            for s in varied[:limit]
        ]
        lines += output.table(rows)
        if len(varied) > limit:
            lines.append(f"... {len(varied) - limit} more (-o json for all)")
    return lines


def inspect_text(result: PlacementResult) -> str:
    """`kubectl inspect gpushare`'s summary: per node each GPU's allocated/total, then the cluster total. Where
    nodes allocate compute (core_mem), each GPU's compute allocated/total in percent follows, as `kubectl inspect
    cgpu` shows it. The last column is fragmentation: the GPU memory free on the node, and in brackets the most
    free on one of its GPUs (a pod asking more on one GPU fits nowhere there, however much is free in all)."""
    unit = result.semantics.gpu_memory_unit
    label = UNIT_GIB if MIB_PER_UNIT[unit] == MIB_PER_UNIT[UNIT_GIB] else unit
    nodes = [n for n in result.nodes if n.gpus]
    width = max((len(n.gpus) for n in nodes), default=1)
    compute = any(g.core_total for n in nodes for g in n.gpus)
    header = ["NAME", "IPADDRESS"] + [f"GPU{i}(Allocated/Total)" for i in range(width)] + [f"GPU Memory({label})"]
    if compute:
        header += [f"GPU{i} Compute(%)" for i in range(width)] + ["GPU Compute(%)"]
    rows = [[*header, "Free(Largest)"]]
    for n in nodes:
        cells = [f"{g.used}/{g.total}" if g.healthy else f"{g.used}/{g.total}(unhealthy)" for g in n.gpus]
        cells += [""] * (width - len(cells))
        row = [n.name, n.address, *cells, f"{n.gpu_used}/{n.gpu_total}"]
        if compute:
            cores = [f"{g.core_used}/{g.core_total}" if g.core_total else "-" for g in n.gpus]
            used, total = sum(g.core_used for g in n.gpus), sum(g.core_total for g in n.gpus)
            row += [*cores, *[""] * (width - len(cores)), f"{used}/{total}" if total else "-"]
        rows.append([*row, f"{sum(g.free for g in n.gpus)}({max((g.free for g in n.gpus), default=0)})"])
    lines = output.table(rows)
    used = sum(n.gpu_used for n in nodes)
    total = sum(n.gpu_total for n in nodes)
    lines.append("-" * max(len(lines[0]), 66))
    lines.append("Allocated/Total GPU Memory In Cluster:")
    percent = int(used * 100 / total) if total else 0
    lines.append(f"{used}/{total} ({percent}%)")
    free, largest = sum(g.free for n in nodes for g in n.gpus), max((g.free for n in nodes for g in n.gpus), default=0)
    lines.append(f"Free GPU Memory In Cluster: {free}, at most {largest} on one GPU")
    left = [
        f"{len(pods)} {what}"
        for pods, what in ((result.pending, "pending"), (result.invalid, "invalid"), (result.not_served, "not served"))
        if pods
    ]
    if left:  # `place -o inspect` shows where pods landed; the pods that did not land are not silently dropped
        lines.append(f"Not placed: {', '.join(left)} (-o table lists each with its reason)")
    return "\n".join(lines) + "\n"


def write(result: PlacementResult, form: str, out: TextIO) -> None:
    """One run in the form asked for: `json`, `inspect` or the table."""
    if form == "json":
        out.write(output.dumps(to_dict(result)) + "\n")
    elif form == "inspect":
        out.write(inspect_text(result))
    else:
        out.write(to_text(result))


def write_comparison(
    rows: list[tuple[str, Semantics, PlacementResult]],
    form: str,
    out: TextIO,
    converted_from: str | None = None,
    note: str = "",
) -> None:
    """The variants of `--compare` side by side; with `converted_from`, the unit the files' numbers were converted
    from into each scheduling unit compared (JSON), and the `note` that says so (text)."""
    if form == "json":
        doc = {
            "apiVersion": kinds.API_VERSION,
            "kind": kinds.PLACEMENT_COMPARISON,
            **({"convertedFrom": converted_from} if converted_from else {}),
            "variants": [
                {"variant": name, "semantics": to_dict(r)["semantics"], "summary": summary(r)} for name, _, r in rows
            ],
        }
        out.write(output.dumps(doc) + "\n")
        return
    summaries = [(name, semantics, summary(result)) for name, semantics, result in rows]
    # pods a variant leaves to another scheduler (a compared scheduler name) are a count of their own, shown when any
    not_served = any(s["notServed"] for _, _, s in summaries)
    table = [["VARIANT", "PLACED", "PENDING", "INVALID", *(["NOT SERVED"] * not_served), "GPUS TOUCHED", "FRAGMENTED"]]
    for name, semantics, s in summaries:
        gpus = f"{s['gpusTouched']}/{s['gpus']}"
        fragmented = f"{s['fragmentation']} x {semantics.gpu_memory_unit}"
        counts = [str(s[key]) for key in ("placed", "pending", "invalid", *(["notServed"] * not_served))]
        table.append([name, *counts, gpus, fragmented])
    out.write("\n".join(output.table(table)) + "\n")
    if note:
        out.write(f"\n{note}\n")
