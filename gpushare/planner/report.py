"""The planner's answers as a table for people and as JSON (kind CapacityReport) for pipelines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from gpushare import output
from gpushare.domain import kinds
from gpushare.placement import NEVER_RUNS, binding, pending_dict, preempted_dict
from gpushare.policy.engine import Finding
from gpushare.policy.report import finding_dict, finding_lines

if TYPE_CHECKING:  # the answers' types: their modules load when a question asks them
    from gpushare.planner.defrag import Defrag, Fragmentation, Move, Where
    from gpushare.planner.headroom import Headroom
    from gpushare.planner.pools import Blend, Sizing


def headroom_dict(h: Headroom) -> dict[str, Any]:
    return {
        "name": h.name,
        "more": h.more,
        "more_min": h.more_min,
        "more_max": h.more_max,
        "runs": h.runs,
        "per_gpu": h.per_gpu,
        "landed": [{"node": x.node, "gpus": list(x.gpus), "replicas": x.replicas} for x in h.landed],
        "blocked_by": pending_dict(h.blocked_by) if h.blocked_by is not None else None,
        "stranded": h.stranded,
        "largest_free": h.largest_free,
        "preempts": [preempted_dict(v) for v in h.preempted],
        "short_nodes": h.short_nodes,
    }


def sizing_dict(s: Sizing) -> dict[str, Any]:
    return {
        "pool": s.pool,
        "nodes": s.nodes,
        "cost": s.cost,
        "one_fewer_leaves": [pending_dict(p) for p in s.one_fewer.pending] if s.one_fewer is not None else [],
        "unservable": [pending_dict(p) for p in s.unservable],
        "preempts": [preempted_dict(v) for v in s.result.preempted],
    }


def mix_dict(m: Blend) -> dict[str, Any]:
    return {
        "pools": [{"pool": pool, "nodes": n} for pool, n in m.counts],
        "cost": m.cost,
        "one_fewer_leaves": [
            {"pool": pool, "pending": [pending_dict(p) for p in result.pending]} for pool, result in m.one_fewer
        ],
        "unservable": [pending_dict(p) for p in m.unservable],
        "searched": m.searched,
        "replays": m.replays,
    }


def _where(w: Where) -> dict[str, Any]:
    return {"node": w.node, "gpu": w.gpus[0] if w.gpus else 0, "gpus": list(w.gpus)}


def move_dict(m: Move) -> dict[str, Any]:
    return {"pod": m.pod, "for": m.reason, "from": _where(m.source), "to": _where(m.target)}


def fragmentation_dict(f: Fragmentation) -> dict[str, Any]:
    return {
        "namespace": f.namespace,
        "name": f.name,
        "per_gpu": f.per_gpu,
        "gpu_count": f.gpu_count,
        "free": f.free,
        "largest_free": f.largest_free,
        "largest_on_node": f.largest_on_node,
        "fits_after_moves": f.moves is not None,
        "moves": [move_dict(m) for m in f.moves or ()],
        "why": f.why,
        "pool": f.pool,
    }


def defrag_dict(d: Defrag | None) -> dict[str, Any]:
    if d is None:
        return {"steps": [], "still_pending": [], "confirmed": True}
    steps = [
        {
            "move": move_dict(s.move),
            "bound": [{"pod": pod, "node": node} for pod, node in s.bound],
            "contested": list(s.contested),
        }
        for s in d.plan.steps
    ]
    return {"steps": steps, "still_pending": list(d.plan.still_pending), "confirmed": d.plan.confirmed}


def write(
    answers: list[Headroom],
    sizings: list[Sizing],
    mix: Blend | None,
    defrag: Defrag | None,
    unit: str,
    form: str,
    out: TextIO,
    findings: Sequence[Finding] = (),
) -> None:
    """The answers; `findings`, validate's errors in the inputs (`PlacementResult.findings`), after them."""
    if form == "json":
        doc: dict[str, Any] = {"apiVersion": kinds.API_VERSION, "kind": kinds.CAPACITY_REPORT, "unit": unit}
        doc["templates"] = [headroom_dict(h) for h in answers]
        doc["add"] = [sizing_dict(s) for s in sizings]
        doc["mix"] = mix_dict(mix) if mix is not None else None
        doc["pending"] = [fragmentation_dict(f) for f in defrag.pending] if defrag is not None else []
        doc["defrag"] = defrag_dict(defrag)
        doc["findings"] = [finding_dict(f) for f in findings]
        out.write(output.dumps(doc) + "\n")
        return
    sections = []
    if answers:
        sections.append(_headroom_lines(answers, unit))
    if sizings:
        sections.append(_sizing_lines(sizings, mix))
    if defrag is not None and defrag.pending:
        sections.append(_defrag_lines(defrag, unit))
    if defrag is not None and not defrag.pending:  # (capacity always asks one of the three)
        sections.append(["everything fits: every pending pod schedules, nothing to make room for"])
    if findings:
        sections.append([NEVER_RUNS, *finding_lines(findings)])
    out.write("\n\n".join("\n".join(lines) for lines in sections) + "\n")


def _at(w: Where) -> str:
    return f"{w.node} GPU {','.join(map(str, w.gpus))}"


def _move_text(m: Move) -> str:
    return f"move {m.pod} from {_at(m.source)} to {_at(m.target)}"


def _defrag_lines(d: Defrag, unit: str) -> list[str]:
    rows = [["PENDING POD", "PER GPU", "FREE", "LARGEST FREE", "MOVES", "WHAT WOULD MAKE IT FIT"]]
    cells = []
    for f in d.pending:
        if f.moves is not None:
            what = "; ".join(_move_text(m) for m in f.moves)
        else:
            what = f.why + (f" (add a node of pool {f.pool})" if f.pool else "")
        share = f"{f.per_gpu}x{f.gpu_count}" if f.gpu_count > 1 else str(f.per_gpu)
        largest = f.largest_on_node if f.gpu_count > 1 else f.largest_free
        moves = str(len(f.moves)) if f.moves is not None else "-"
        cells.append((f, [share, str(f.free), str(largest), moves, what]))

    def same(a: tuple[Fragmentation, list[str]], b: tuple[Fragmentation, list[str]]) -> bool:
        stem = output.replica_stem(a[0].namespace, a[0].name) == output.replica_stem(b[0].namespace, b[0].name)
        return stem and a[1] == b[1]

    rows += [[output.counted_key(f.key, n), *row] for (f, row), n in output.alike(cells, same)]
    lines = output.table(rows)
    lines += [
        "",
        f"GPU memory in units of {unit} on the nodes each pod may use; LARGEST FREE on one GPU; each pod alone",
    ]
    if any(f.gpu_count > 1 for f in d.pending):
        lines.append("PER GPU AxN: A on each of N GPUs of one node; LARGEST FREE then what each of N could get there")
    if d.plan.steps:
        lines += ["", "defragmentation plan for the whole pending set (replayed from the inputs, in this order):"]
        for i, step in enumerate(d.plan.steps, start=1):
            then = "; ".join(f"{pod} binds on {node}" for pod, node in step.bound)
            lines.append(f"{i:>3}. {_move_text(step.move)} (for {step.move.reason})" + (f": {then}" if then else ""))
            if step.contested:
                lines.append(
                    f"     or {', '.join(step.contested)} may take that room first (the scheduler's retry order)"
                )
        lines.append("each move: create the pod again on its new node, then delete the original")
        lines.append("(pinned there by a required node affinity on kubernetes.io/hostname)")
    elif d.pending:
        lines += ["", "no moves of running pods make room for any pending pod"]
    if d.plan.still_pending:
        lines.append(f"still pending after the plan: {len(d.plan.still_pending)}")
    if any(step.contested for step in d.plan.steps):
        lines.append("where another pod may take the room first, the steps after it may differ: run capacity again")
    if not d.plan.confirmed:
        lines.append("the replay stopped at a move the search had found: the steps shown are those that replayed")
    return lines


def _sizing_lines(sizings: list[Sizing], mix: Blend | None) -> list[str]:
    rows = [["POOL", "ADD NODES", "COST", "PENDING AT ITS MAX"]]
    rows += [[s.pool, str(s.nodes), f"{s.cost:g}", str(len(s.unservable))] for s in sizings]
    lines = output.table(rows)
    for s in sizings:
        if s.one_fewer is not None and s.one_fewer.pending:
            first = s.one_fewer.pending[0]
            lines.append(f"{s.pool}: with {s.nodes - 1}, {first.key} stays pending: {first.message}")
        for p in s.unservable[:5]:
            lines.append(f"{s.pool}: {p.key} stays pending with {s.nodes} added: {p.message}")
        if s.result.preempted:
            victims = ", ".join(f"{v.key} (by {v.by})" for v in s.result.preempted[:5])
            more = f" and {len(s.result.preempted) - 5} more" if len(s.result.preempted) > 5 else ""
            lines.append(f"{s.pool}: with {s.nodes} added, pending pods still preempt {victims}{more}")
    lines.append("PENDING AT ITS MAX: pods still pending with the pool grown to its gpushare.io/pool-max nodes")
    if len(sizings) > 1:
        lines.append("each pool sized alone, cheapest first")
    if mix is not None:
        added = " + ".join(f"{n} of {pool}" for pool, n in mix.counts) or "no node"
        replays = f"{mix.replays} dry run{'s' if mix.replays != 1 else ''}"
        lines += ["", f"cheapest mix found: {added}, costing {mix.cost:g} (after {replays} of candidate mixes)"]
        for pool, result in mix.one_fewer:
            if result.pending:
                first = result.pending[0]
                lines.append(f"mix: with one {pool} fewer, {first.key} stays pending: {first.message}")
        for p in mix.unservable[:5]:
            lines.append(f"mix: {p.key} stays pending: {p.message}")
        lines.append(f"searched: {mix.searched}")
    return lines


#: Rows of where a template's replicas land, printed before the rest is summed up (-o json lists all).
LANDED = 20


def _headroom_lines(answers: list[Headroom], unit: str) -> list[str]:
    rows = [["TEMPLATE", "MORE", "PER GPU", "LARGEST FREE", "STRANDED", "NEXT ONE"]]
    for h in answers:
        why = h.blocked_by.message if h.blocked_by is not None else "-"
        more = f"{h.more} ({h.more_min}-{h.more_max})" if h.runs else str(h.more)
        gpu = [str(h.per_gpu), str(h.largest_free), str(h.stranded)] if h.per_gpu else ["-", "-", "-"]  # no GPU
        rows.append([h.name, more, *gpu, why])
    lines = output.table(rows)
    for h in answers:
        if h.blocked_by is not None:
            lines += ["", f"{h.name}: the next replica: {binding(h.blocked_by, h.result.nodes)}"]
        if h.landed:
            lines += ["", f"{h.name}: where the {h.more} land (node, GPUs, replicas)"]
            lines += output.table([[x.node, ",".join(map(str, x.gpus)), str(x.replicas)] for x in h.landed[:LANDED]])
            if len(h.landed) > LANDED:
                rest = h.landed[LANDED:]
                lines.append(f"... {sum(x.replicas for x in rest)} more on {len(rest)} more GPUs (-o json for all)")
        if h.preempted:
            lines += ["", f"{h.name}: its replicas preempt {len(h.preempted)} pods of lower priority (pod, node, by)"]
            lines += output.table([[v.key, v.node, v.by] for v in h.preempted])
    lines += ["", f"GPU memory in units of {unit}; stranded: free on GPUs with less than one replica's share"]
    sampled = max((h.runs for h in answers), default=0)
    if sampled:
        lines.append(
            f"MORE: the dry run's count (least-most over {sampled} runs with random tie-breaks as well as the dry run's"
            " own; one number twice when every run agrees)"
        )
    return lines
