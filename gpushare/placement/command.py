"""`gpushare place` and `gpushare inspect`: their flags, their own checks (made before any input is read), reading
the inputs, running, and handing the result to `report` in the form asked for."""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from gpushare.arguments import scheduler_name, whole
from gpushare.domain import cgpu, profiles
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.domain.labels import PLACEMENTS
from gpushare.domain.profiles import MIB_PER_UNIT
from gpushare.domain.scoringprofiles import scoring_profile
from gpushare.domain.versions import CONFIG_APIS, MINORS, choose_api, default_api, parse_kube_version
from gpushare.errors import InputError, counted
from gpushare.kube.documents import Source, read_paths
from gpushare.kube.workloads import WORKLOAD_KINDS, unnamed
from gpushare.placement import report
from gpushare.placement.inputs import build
from gpushare.placement.model import Semantics
from gpushare.placement.plot import MAX_NODES, plot_target, write_plot
from gpushare.placement.result import PlacementResult
from gpushare.placement.run import run
from gpushare.progress import wanted

#: The unit the cluster schedules GPU memory in. Unlike `--gpu-memory-unit` (the unit the files' numbers are in),
#: comparing it converts every request and capacity from the files' unit into each one, rounding as the device
#: plugin and the pods' authors would (a 16 GiB request asks 128 units of 128 MiB).
SCHEDULING_UNIT = "scheduling-unit"
#: `--compare` key -> (Semantics field, allowed values)
COMPARE_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "placement": ("placement", PLACEMENTS),
    "semantics": ("name", ("ack", "upstream")),
    SCHEDULING_UNIT: ("gpu_memory_unit", tuple(MIB_PER_UNIT)),
}
#: `--compare` keys that meant something else before, and what to write now.
RENAMED = {"gpu-memory-unit": SCHEDULING_UNIT}


def add_fleet(p: argparse.ArgumentParser) -> None:
    """The fleet's flags, as every command that reads one takes them: files, or a live cluster."""
    p.add_argument(
        "--nodes",
        action="append",
        default=[],
        metavar="FILE",
        help="Node objects (kubectl get nodes -o yaml); repeatable; directories and - work",
    )
    p.add_argument(
        "--existing",
        action="append",
        default=[],
        metavar="FILE",
        help="pods already running (kubectl get pods -A -o yaml) and unhealthy-gpu-<node> ConfigMaps",
    )
    p.add_argument(
        "--kubeconfig",
        nargs="?",
        const="",
        metavar="FILE",
        help="read nodes and running pods from a live cluster instead (read-only)",
    )
    p.add_argument("--context", help="kubeconfig context")


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    add_fleet(p)
    p.add_argument(
        "--semantics",
        choices=("ack", "upstream"),
        default="ack",
        help="ack: ACK's rules (units, binpack/spread, compute, multi-GPU); upstream: the open-source extender exactly",
    )
    p.add_argument(
        "--gpu-memory-unit",
        choices=tuple(MIB_PER_UNIT),
        help="unit the objects' aliyun.com/gpu-mem numbers are in (default 1GiB)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar (shown on a terminal after 2 s)")
    forms = ("table", "json") if command == "capacity" else ("table", "json", "inspect")
    p.add_argument("-o", "--output", choices=forms, default="table", help="output form")
    if command == "inspect":  # the running pods only: how new pods would be scheduled is place's, not asked here
        p.set_defaults(output="inspect", workloads=[], scheduler_name=None, node_order=None, compare=[], plot=None)
        p.set_defaults(explain=False, engine="fast", placement="binpack", kube_version=None)
        p.set_defaults(scheduler_config_api=None, percentage_of_nodes_to_score=0)
        p.set_defaults(cgpu_max_pods_per_gpu=cgpu.MAX_PODS_PER_GPU)
        return
    p.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="binpack",
        help="ack: default node and GPU placement (a node's ack.node.gpu.placement label wins for its GPUs)",
    )
    p.add_argument(
        "--kube-version",
        metavar="VERSION",
        help=f"the kube-scheduler modelled, 1.{MINORS[0]}-1.{MINORS[-1]} (upstream scores nodes as it does; "
        f"default: the live cluster's with --kubeconfig, else 1.{MINORS[-1]})",
    )
    p.add_argument(
        "--scheduler-config-api",
        choices=CONFIG_APIS,
        help="its configuration API, as rendered (default: the one gpushare renders for that minor)",
    )
    p.add_argument(
        "--percentage-of-nodes-to-score",
        type=whole("--percentage-of-nodes-to-score", 0, 100),
        default=0,
        metavar="N",
        help="the scheduler configuration's percentageOfNodesToScore, 0-100 (upstream, from 100 nodes: kube-scheduler "
        "filters until it has found that share of the nodes fit, then scores only those; default 0: unset, "
        "kube-scheduler's adaptive share, 50%% minus 1%% per 125 nodes, at least 5%% and 100 nodes)",
    )
    p.add_argument(
        "--cgpu-max-pods-per-gpu",
        type=int,
        default=cgpu.MAX_PODS_PER_GPU,
        metavar="N",
        help=f"pods per GPU on cgpu nodes (default {cgpu.MAX_PODS_PER_GPU}, ACK's 128MiB notes)",
    )
    p.add_argument(
        "--scheduler-name",
        metavar="NAME",
        type=scheduler_name,
        help="spec.schedulerName gpushare serves; GPU pods naming another are reported as not served "
        f"(default: {profiles.DEFAULT_SCHEDULER_NAME} for ack, {profiles.SECONDARY_SCHEDULER_NAME} for upstream)",
    )
    p.add_argument("workloads", nargs="*", help="Pods and controllers to place: files, directories, -")
    if command == "capacity":  # the planner asks its own questions of the fleet place reads
        p.set_defaults(node_order=None, compare=[], plot=None, explain=False, engine="fast")
        return
    p.add_argument("--node-order", metavar="FILE", help="replay: 'namespace/name node' per line fixes each pod's node")
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="run each variant and print them side by side (placement, semantics, scheduling-unit: the unit the "
        "cluster schedules in, the files' numbers converted from --gpu-memory-unit)",
    )
    p.add_argument("--plot", metavar="FILE.png|FILE.svg", help="write a per-GPU allocation picture")
    p.add_argument(
        "--explain", action="store_true", help="for each pending pod, every node and why the pod does not fit it"
    )
    p.add_argument("--engine", choices=("fast", "reference"), default="fast", help=argparse.SUPPRESS)


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
    #: Its configuration's percentageOfNodesToScore (0: unset, the adaptive default).
    percentage_of_nodes_to_score: int = 0
    quiet: bool = False  # no progress bar on a terminal


def request_of(args: argparse.Namespace) -> PlaceRequest:
    """The run the flags ask for (place, inspect, and the planner's commands read the fleet alike)."""
    unit = args.gpu_memory_unit or (profiles.UNIT_1GIB if args.semantics == "ack" else profiles.UNIT_GIB)
    semantics = Semantics(
        args.semantics, args.placement, unit, args.cgpu_max_pods_per_gpu, scheduler_name=args.scheduler_name
    )
    return PlaceRequest(
        nodes=args.nodes,
        existing=args.existing,
        workloads=args.workloads,
        semantics=semantics,
        kube_version=args.kube_version,
        scheduler_config_api=args.scheduler_config_api,
        percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
        input_unit=unit,
        engine=args.engine,
        node_order=args.node_order,
        compare=args.compare,
        output=args.output,
        plot=args.plot,
        kubeconfig=args.kubeconfig,
        context=args.context,
        explain=args.explain,
        quiet=args.quiet,
    )


def main(args: argparse.Namespace) -> int:
    return place_command(request_of(args), sys.stdout)


def place_command(req: PlaceRequest, out: TextIO) -> int:
    """Check what needs no input first, read, run once per variant, print in the chosen form; exit 1 when any pod
    was invalid."""
    if req.input_unit is not None and req.input_unit not in MIB_PER_UNIT:
        raise InputError("--gpu-memory-unit", req.input_unit, f"one of {', '.join(MIB_PER_UNIT)}")
    specs = parse_compare(req.compare)
    if req.plot:
        plot_target(req.plot)  # a name it cannot take, or a file of the user's there: refused before any work
    order = read_node_order(req.node_order) if req.node_order else None
    inputs = read_inputs(req)
    base, notes = semantics_of(req, inputs)
    input_unit = req.input_unit or req.semantics.gpu_memory_unit

    def once(semantics: Semantics, last: bool = False) -> PlacementResult:
        # the last run lets go of the objects read as they are modelled: memory for one of them, not for both
        inventory = build(inputs.nodes, inputs.existing, inputs.workloads, semantics, input_unit, consume=last)
        if last:
            inputs.nodes, inputs.existing = [], []
        result = run(inventory, semantics, req.engine, order, req.explain, wanted(req.quiet))  # type: ignore[arg-type]
        result.warnings[:0] = [*notes, *inputs.notes]
        return result

    if specs:
        rows = [(name, semantics, once(semantics)) for name, semantics in variants(base, specs)]
        converted = any(key == SCHEDULING_UNIT for key, _ in specs)
        note = (
            f"{SCHEDULING_UNIT}: the files' numbers are in {input_unit} (--gpu-memory-unit); each variant converts "
            "them into its unit"
        )
        report.write_comparison(rows, req.output, out, input_unit if converted else None, note if converted else "")
        return 1 if any(r.invalid for _, _, r in rows) else 0
    result = once(base, last=True)
    if req.plot:
        written = write_plot(result, req.plot)
        nodes = sum(1 for n in result.nodes if n.gpus)
        drawn = f"the first {MAX_NODES} of {nodes}" if nodes > MAX_NODES else str(nodes)
        print(f"gpushare: wrote {written} ({drawn} GPU nodes)", file=sys.stderr)
    report.write(result, req.output, out)
    return 1 if result.invalid else 0


def parse_compare(specs: list[str]) -> list[tuple[str, list[str]]]:
    """`key=v1,v2` strings -> (key, values); an unknown key or value is an InputError."""
    result = []
    for spec in specs:
        key, sep, values = spec.partition("=")
        if key in RENAMED:
            raise InputError(
                "--compare",
                spec,
                f"{RENAMED[key]}={values} to compare the unit the cluster schedules in (requests converted from "
                "--gpu-memory-unit, the unit of the files' numbers)",
            )
        if not sep or key not in COMPARE_KEYS:
            raise InputError("--compare", spec, f"KEY=V1,V2 with KEY one of {', '.join(COMPARE_KEYS)}")
        allowed = COMPARE_KEYS[key][1]
        words = [v.strip() for v in values.split(",") if v.strip()]
        bad = [w for w in words if w not in allowed]
        if bad or not words:
            raise InputError(f"--compare {key}", values, f"values among {', '.join(allowed)}")
        result.append((key, words))
    return result


def variants(base: Semantics, specs: list[tuple[str, list[str]]]) -> list[tuple[str, Semantics]]:
    """Every combination of the compared values, named like `placement=spread,scheduling-unit=128MiB`."""
    keys = [k for k, _ in specs]
    result = []
    for combo in itertools.product(*(v for _, v in specs)):
        fields: dict[str, Any] = {COMPARE_KEYS[k][0]: v for k, v in zip(keys, combo, strict=True)}
        result.append((",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), replace(base, **fields)))
    return result


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
class Inputs:
    nodes: list[Source]
    existing: list[Source]
    workloads: list[Source]
    version: str | None = None  # the live cluster's
    notes: list[str] = field(default_factory=list)


def read_inputs(req: PlaceRequest) -> Inputs:
    """The files, or the live cluster; inputs that cannot mean what the user meant are refused, naming the flag and
    what it was given: no Node in --nodes (swapped flags?), no workload to place, a workload without a name."""
    progress = wanted(req.quiet)
    if req.kubeconfig is not None:
        from gpushare.kube.cluster import read_cluster

        live = read_cluster(req.kubeconfig or None, req.context)
        workloads = read_paths(req.workloads, show_progress=progress)
        inputs = Inputs(live.nodes, live.existing, workloads, live.version, live.skipped)
    elif not req.nodes:
        raise InputError("--nodes", None, "at least one file of Node objects (or --kubeconfig)")
    else:
        nodes, existing, workloads = (
            read_paths(p, show_progress=progress) for p in (req.nodes, req.existing, req.workloads)
        )
        inputs = Inputs(nodes, existing, workloads)
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
    return inputs


def _counted(sources: list[Source]) -> str:
    kinds: dict[str, int] = {}
    for src in sources:
        kinds[src.kind or "(no kind)"] = kinds.get(src.kind or "(no kind)", 0) + 1
    return ", ".join(counted(n, kind) for kind, n in sorted(kinds.items())) or "nothing"


def semantics_of(req: PlaceRequest, inputs: Inputs) -> tuple[Semantics, list[str]]:
    """The semantics the flags ask for, with the kube-scheduler they model (the live cluster's by default), and
    notes on how it was chosen."""
    scheduler, notes = scheduler_profile(req.kube_version, req.scheduler_config_api, inputs.version)
    scheduler = replace(scheduler, percentage_of_nodes_to_score=req.percentage_of_nodes_to_score)
    return replace(req.semantics, scheduler=scheduler), notes


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
