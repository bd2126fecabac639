"""The planner's answers as a table for people and as JSON (kind CapacityReport) for pipelines."""

from __future__ import annotations

from typing import Any, TextIO

from gpushare import jsontext
from gpushare.domain import kinds
from gpushare.placement.report import _table, pending_dict
from gpushare.planner.headroom import Headroom
from gpushare.planner.pools import Sizing


def headroom_dict(h: Headroom) -> dict[str, Any]:
    return {
        "name": h.name,
        "more": h.more,
        "more_min": h.more_min,
        "more_max": h.more_max,
        "per_gpu": h.per_gpu,
        "landed": [{"node": x.node, "gpus": list(x.gpus), "replicas": x.replicas} for x in h.landed],
        "blocked_by": pending_dict(h.blocked_by) if h.blocked_by is not None else None,
        "stranded": h.stranded,
        "largest_free": h.largest_free,
    }


def sizing_dict(s: Sizing) -> dict[str, Any]:
    return {
        "pool": s.pool,
        "nodes": s.nodes,
        "cost": s.cost,
        "one_fewer_leaves": [pending_dict(p) for p in s.one_fewer.pending] if s.one_fewer is not None else [],
        "unservable": [pending_dict(p) for p in s.unservable],
    }


def write(answers: list[Headroom], sizings: list[Sizing], unit: str, output: str, out: TextIO) -> None:
    if output == "json":
        doc: dict[str, Any] = {"apiVersion": kinds.API_VERSION, "kind": kinds.CAPACITY_REPORT, "unit": unit}
        doc["templates"] = [headroom_dict(h) for h in answers]
        doc["add"] = [sizing_dict(s) for s in sizings]
        out.write(jsontext.dumps(doc) + "\n")
        return
    lines = _headroom_lines(answers, unit) if answers else []
    if sizings:
        lines += ["", *_sizing_lines(sizings)] if lines else _sizing_lines(sizings)
    out.write("\n".join(lines) + "\n")


def _sizing_lines(sizings: list[Sizing]) -> list[str]:
    rows = [["POOL", "ADD NODES", "COST", "UNSERVABLE PODS"]]
    rows += [[s.pool, str(s.nodes), f"{s.cost:g}", str(len(s.unservable))] for s in sizings]
    lines = _table(rows)
    for s in sizings:
        if s.one_fewer is not None and s.one_fewer.pending:
            first = s.one_fewer.pending[0]
            lines.append(f"{s.pool}: with {s.nodes - 1}, {first.key} stays pending: {first.message}")
        for p in s.unservable[:5]:
            lines.append(f"{s.pool}: {p.key} pending however many are added: {p.message}")
    if len(sizings) > 1:
        lines.append("each pool sized alone, cheapest first (mixes of pools are not searched)")
    return lines


def _headroom_lines(answers: list[Headroom], unit: str) -> list[str]:
    rows = [["TEMPLATE", "MORE", "PER GPU", "LARGEST FREE", "STRANDED", "NEXT ONE"]]
    for h in answers:
        why = h.blocked_by.message if h.blocked_by is not None else "-"
        rows.append([h.name, str(h.more), str(h.per_gpu), str(h.largest_free), str(h.stranded), why])
    lines = _table(rows)
    for h in answers:
        if h.landed:
            lines += ["", f"{h.name}: where the {h.more} land (node, GPUs, replicas)"]
            lines += _table([[x.node, ",".join(map(str, x.gpus)), str(x.replicas)] for x in h.landed])
    lines += ["", f"GPU memory in units of {unit}; stranded: free on GPUs with less than one replica's share"]
    return lines
