"""The planner's answers as a table for people and as JSON (kind CapacityReport) for pipelines."""

from __future__ import annotations

from typing import Any, TextIO

from gpushare import jsontext
from gpushare.domain import kinds
from gpushare.placement.report import _table, pending_dict
from gpushare.planner.headroom import Headroom


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


def write(answers: list[Headroom], unit: str, output: str, out: TextIO) -> None:
    if output == "json":
        doc: dict[str, Any] = {"apiVersion": kinds.API_VERSION, "kind": kinds.CAPACITY_REPORT, "unit": unit}
        doc["templates"] = [headroom_dict(h) for h in answers]
        out.write(jsontext.dumps(doc) + "\n")
        return
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
    out.write("\n".join(lines) + "\n")
