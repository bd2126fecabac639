"""`gpushare place` and `gpushare inspect`: reading the inputs, running, printing. The CLI only parses flags."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from gpushare import jsontext
from gpushare.domain import kinds
from gpushare.domain.kubescheduler import ScoringProfile, scoring_profile
from gpushare.domain.profiles import MIB_PER_UNIT
from gpushare.domain.versions import MINORS, choose_api, default_api, parse_kube_version
from gpushare.errors import InputError
from gpushare.kube.documents import Source, read_paths
from gpushare.kube.workloads import WORKLOAD_KINDS, unnamed
from gpushare.placement import compare as comparing
from gpushare.placement.inputs import build
from gpushare.placement.model import Semantics
from gpushare.placement.plot import plot_target, write_plot
from gpushare.placement.report import inspect_text, summary, to_dict, to_text
from gpushare.placement.run import run
from gpushare.progress import wanted


def read_node_order(path: str) -> dict[str, str]:
    """`namespace/name node` per line (# comments): the node a real scheduler chose for each pod."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError("--node-order", path, f"a readable file ({exc.strerror})") from None
    order: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        words = text.split()
        if len(words) != 2 or "/" not in words[0]:
            raise InputError("--node-order", line, f"'namespace/name node' ({path}:{number})")
        order[words[0]] = words[1]
    return order


@dataclass
class PlaceRequest:
    nodes: list[str]
    existing: list[str] = field(default_factory=list)
    workloads: list[str] = field(default_factory=list)
    semantics: Semantics = field(default_factory=Semantics)
    input_unit: str | None = None
    engine: str = "fast"
    node_order: str | None = None
    compare: list[str] = field(default_factory=list)
    output: str = "table"
    plot: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    explain: bool = False
    #: The kube-scheduler modelled: a minor or version (default: the live cluster's, else the newest modelled) and
    #: its configuration API (default: the one gpushare renders for that minor).
    kube_version: str | None = None
    scheduler_config_api: str | None = None
    quiet: bool = False  # no progress bar on a terminal


@dataclass
class Inputs:
    nodes: list[Source]
    existing: list[Source]
    workloads: list[Source]
    version: str | None = None  # the live cluster's
    notes: list[str] = field(default_factory=list)


def _inputs(req: PlaceRequest) -> Inputs:
    def read(paths: list[str]) -> list[Source]:
        return read_paths(paths, show_progress=wanted(req.quiet))

    if req.kubeconfig is not None:
        from gpushare.kube.cluster import read_cluster

        live = read_cluster(req.kubeconfig or None, req.context)
        inputs = Inputs(live.nodes, live.existing, read(req.workloads), live.version, live.skipped)
    elif not req.nodes:
        raise InputError("--nodes", None, "at least one file of Node objects (or --kubeconfig)")
    else:
        inputs = Inputs(read(req.nodes), read(req.existing), read(req.workloads))
    check_inputs(inputs, req)
    return inputs


def _counted(sources: list[Source]) -> str:
    kinds: dict[str, int] = {}
    for src in sources:
        kinds[src.kind or "(no kind)"] = kinds.get(src.kind or "(no kind)", 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "nothing"


def check_inputs(inputs: Inputs, req: PlaceRequest) -> None:
    """Inputs that cannot mean what the user meant are refused, naming the flag and what it was given: no Node in
    --nodes (swapped flags?), no workload to place, a workload without a name, two of one kind and name."""
    flag = "--kubeconfig" if req.kubeconfig is not None else "--nodes"
    if not any(s.kind == "Node" for s in inputs.nodes):
        where = ", ".join(req.nodes) or "the cluster"
        raise InputError(flag, where, f"Node objects (kubectl get nodes -o yaml); it holds {_counted(inputs.nodes)}")
    if req.workloads and not any(s.kind in WORKLOAD_KINDS for s in inputs.workloads):
        raise InputError(
            "workloads",
            ", ".join(req.workloads),
            f"Pods or controllers to place ({', '.join(WORKLOAD_KINDS)}); they hold {_counted(inputs.workloads)}",
        )
    for found in unnamed(inputs.workloads):
        raise InputError(found.field, found.value, found.allowed, None if found.first else found.source.where)


def scheduler_profile(
    kube_version: str | None, api: str | None, live: str | None = None
) -> tuple[ScoringProfile, list[str]]:
    """The kube-scheduler to model, and notes on how it was chosen. An explicit version must be one gpushare models; a
    live cluster's newer minor is modelled as the newest gpushare knows, and says so."""
    notes = []
    if kube_version is not None:
        minor = parse_kube_version(kube_version, "--kube-version").minor
    elif live is not None:
        found = re.match(r"^v?1\.(\d+)", live.strip())
        minor = int(found.group(1)) if found else MINORS[-1]
        if minor not in MINORS:
            nearest = MINORS[-1] if minor > MINORS[-1] else MINORS[0]
            notes.append(
                f"the cluster runs {live}: kube-scheduler is modelled as 1.{nearest}, the nearest gpushare knows"
            )
            minor = nearest
    else:
        minor = MINORS[-1]
    chosen = choose_api(api, minor, "--scheduler-config-api") if api else default_api(minor)
    return scoring_profile(minor, chosen), notes


def place_command(req: PlaceRequest, out: TextIO) -> int:
    """Run, print in the chosen form; exit 1 when any pod was invalid."""
    if req.input_unit is not None and req.input_unit not in MIB_PER_UNIT:
        raise InputError("--gpu-memory-unit", req.input_unit, f"one of {', '.join(MIB_PER_UNIT)}")
    specs = comparing.parse(req.compare)
    if req.plot:
        plot_target(req.plot)  # a name it cannot take, or a file of the user's there: refused before any work
    inputs = _inputs(req)
    profile, notes = scheduler_profile(req.kube_version, req.scheduler_config_api, inputs.version)
    base = replace(req.semantics, scheduler=profile)
    order = read_node_order(req.node_order) if req.node_order else None
    input_unit = req.input_unit or req.semantics.gpu_memory_unit

    def once(semantics: Semantics, last: bool = False) -> Any:
        # the last run lets go of the objects read as they are modelled: memory for one of them, not for both
        inventory = build(inputs.nodes, inputs.existing, inputs.workloads, semantics, input_unit, consume=last)
        if last:
            inputs.nodes, inputs.existing = [], []
        result = run(inventory, semantics, req.engine, order, req.explain, wanted(req.quiet))  # type: ignore[arg-type]
        result.warnings[:0] = [*notes, *inputs.notes]
        return result

    if specs:
        rows = []
        for name, semantics in comparing.variants(base, specs):
            result = once(semantics)
            rows.append((name, semantics, result))
        converted = input_unit if any(key == comparing.SCHEDULING_UNIT for key, _ in specs) else None
        _print_comparison(rows, req.output, out, converted)
        return 1 if any(r.invalid for _, _, r in rows) else 0
    result = once(base, last=True)
    if req.plot:
        write_plot(result, req.plot)
    if req.output == "json":
        out.write(jsontext.dumps(to_dict(result)) + "\n")
    elif req.output == "inspect":
        out.write(inspect_text(result))
    else:
        out.write(to_text(result))
    return 1 if result.invalid else 0


def _print_comparison(
    rows: list[tuple[str, Semantics, Any]], output: str, out: TextIO, converted_from: str | None = None
) -> None:
    """The variants side by side; with `converted_from`, say that the files' numbers were converted from that unit
    into each scheduling unit compared."""
    if output == "json":
        doc = {
            "apiVersion": kinds.API_VERSION,
            "kind": kinds.PLACEMENT_COMPARISON,
            **({"convertedFrom": converted_from} if converted_from else {}),
            "variants": [
                {"variant": name, "semantics": to_dict(r)["semantics"], "summary": summary(r)} for name, _, r in rows
            ],
        }
        out.write(jsontext.dumps(doc) + "\n")
        return
    header = ["VARIANT", "PLACED", "PENDING", "INVALID", "GPUS TOUCHED", "FRAGMENTED"]
    table = [header]
    for name, semantics, result in rows:
        s = summary(result)
        table.append(
            [
                name,
                str(s["placed"]),
                str(s["pending"]),
                str(s["invalid"]),
                f"{s['gpusTouched']}/{s['gpus']}",
                f"{s['fragmentation']} x {semantics.gpu_memory_unit}",
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    if converted_from:
        out.write(
            f"\n{comparing.SCHEDULING_UNIT}: the files' numbers are in {converted_from} (--gpu-memory-unit); each "
            "variant converts them into its unit\n"
        )
