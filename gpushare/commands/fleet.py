"""The fleet the fleet commands read (`place`, `inspect`, `capacity`, `diff`, `doctor`, `snapshot`): its flags,
each defined once here, and how files or a live cluster become the documents, the semantics and the kube-scheduler
they ask for. Inputs that cannot mean what the user meant are refused before any work, naming the flag."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field, replace

from gpushare.commands.arguments import add_quiet, scheduler_name, whole
from gpushare.domain import cgpu, products
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.domain.labels import PLACEMENTS
from gpushare.domain.minors import scoring_profile
from gpushare.domain.products import MIB_PER_UNIT
from gpushare.domain.versions import CONFIG_APIS, MINORS, choose_api, default_api, parse_kube_version
from gpushare.errors import InputError, counted
from gpushare.kube.documents import Source, read_paths
from gpushare.kube.workloads import WORKLOAD_KINDS, unnamed
from gpushare.placement import Semantics, SemanticsName
from gpushare.progress import wanted

#: The semantics a fleet is modelled by, and what each means.
SEMANTICS = tuple(products.SEMANTICS_PRODUCTS)


def add_files(p: argparse.ArgumentParser) -> None:
    """The fleet as files: its Nodes and the pods running on them."""
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


def add_kubeconfig(
    p: argparse.ArgumentParser, text: str = "read nodes and running pods from a live cluster instead (read-only)"
) -> None:
    """The fleet as a live cluster: `--kubeconfig` alone takes the usual one ($KUBECONFIG, ~/.kube/config)."""
    p.add_argument("--kubeconfig", nargs="?", const="", metavar="FILE", help=text)
    p.add_argument("--context", help="kubeconfig context")


def add_fleet(p: argparse.ArgumentParser) -> None:
    """Files, or a live cluster."""
    add_files(p)
    add_kubeconfig(p)


def add_semantics(p: argparse.ArgumentParser) -> None:
    """Which allocation rules model the fleet, and the unit its GPU memory numbers are in."""
    p.add_argument(
        "--semantics",
        choices=SEMANTICS,
        default="ack",
        help="ack: ACK's rules (units, binpack/spread, compute, multi-GPU); upstream: the open-source extender exactly",
    )
    p.add_argument(
        "--gpu-memory-unit",
        choices=tuple(MIB_PER_UNIT),
        help="unit the objects' aliyun.com/gpu-mem numbers are in (default 1GiB)",
    )


def add_kube_version(p: argparse.ArgumentParser, text: str | None = None) -> None:
    p.add_argument(
        "--kube-version",
        metavar="VERSION",
        help=text
        or f"the kube-scheduler modelled, 1.{MINORS[0]}-1.{MINORS[-1]} (upstream scores nodes as it does; default: "
        f"the live cluster's with --kubeconfig, else 1.{MINORS[-1]})",
    )


def add_placement(p: argparse.ArgumentParser, text: str | None = None) -> None:
    p.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="binpack",
        help=text or "ack: default node and GPU placement (a node's ack.node.gpu.placement label wins for its GPUs)",
    )


def add_scheduler(p: argparse.ArgumentParser) -> None:
    """The scheduler a placement models: its placement default, minor, API, search, cGPU cap and served name."""
    add_placement(p)
    add_kube_version(p)
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
        f"(default: {products.DEFAULT_SCHEDULER_NAME} for ack, {products.SECONDARY_SCHEDULER_NAME} for upstream)",
    )


def add_placement_run(p: argparse.ArgumentParser, forms: tuple[str, ...]) -> None:
    """What a placement run reads and models, and how it is printed (`place`, `capacity`)."""
    add_fleet(p)
    add_semantics(p)
    add_quiet(p)
    p.add_argument("-o", "--output", choices=forms, default="table", help="output form")
    add_scheduler(p)


@dataclass
class FleetRequest:
    """What the fleet flags ask for: where the fleet is, how it is modelled, and the workloads to place."""

    nodes: list[str]
    existing: list[str] = field(default_factory=list)
    workloads: list[str] = field(default_factory=list)
    semantics: Semantics = field(default_factory=Semantics)
    input_unit: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    #: The kube-scheduler modelled: a minor or version (default: the live cluster's, else the newest modelled) and
    #: its configuration API (default: the one gpushare renders for that minor).
    kube_version: str | None = None
    scheduler_config_api: str | None = None
    #: Its configuration's percentageOfNodesToScore (0: unset, the adaptive default).
    percentage_of_nodes_to_score: int = 0
    quiet: bool = False  # no progress bar on a terminal


def request_of(args: argparse.Namespace) -> FleetRequest:
    """The fleet the flags ask for (a flag a command does not take has its default)."""
    name: SemanticsName = getattr(args, "semantics", "ack")
    unit = getattr(args, "gpu_memory_unit", None) or (products.UNIT_1GIB if name == "ack" else products.UNIT_GIB)
    if unit not in MIB_PER_UNIT:
        raise InputError("--gpu-memory-unit", unit, f"one of {', '.join(MIB_PER_UNIT)}")
    semantics = Semantics(
        name,
        getattr(args, "placement", "binpack"),
        unit,
        getattr(args, "cgpu_max_pods_per_gpu", cgpu.MAX_PODS_PER_GPU),
        scheduler_name=getattr(args, "scheduler_name", None),
    )
    return FleetRequest(
        nodes=args.nodes,
        existing=args.existing,
        workloads=getattr(args, "workloads", []),
        semantics=semantics,
        input_unit=unit,
        kubeconfig=args.kubeconfig,
        context=args.context,
        kube_version=getattr(args, "kube_version", None),
        scheduler_config_api=getattr(args, "scheduler_config_api", None),
        percentage_of_nodes_to_score=getattr(args, "percentage_of_nodes_to_score", 0),
        quiet=getattr(args, "quiet", False),
    )


@dataclass
class Inputs:
    nodes: list[Source]
    existing: list[Source]
    workloads: list[Source]
    version: str | None = None  # the live cluster's
    notes: list[str] = field(default_factory=list)


def read_inputs(req: FleetRequest) -> Inputs:
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


def semantics_of(req: FleetRequest, inputs: Inputs) -> tuple[Semantics, list[str]]:
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


def add_runs(p: argparse.ArgumentParser, help_text: str) -> None:
    """`--runs K`: the sampled runs `place` and `capacity` add (their help says what each samples)."""
    p.add_argument("--runs", type=whole("--runs", 0, 1000), default=0, metavar="K", help=help_text)
