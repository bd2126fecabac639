"""`gpushare capacity`: how many more replicas of each template fit on the fleet `place` reads, how many nodes of
which pool to add for the pending pods, and which moves of running pods would make room for them."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gpushare.commands import fleet
from gpushare.commands.arguments import whole
from gpushare.errors import InputError
from gpushare.kube.documents import read_paths
from gpushare.kube.workloads import WORKLOAD_KINDS
from gpushare.placement import Simulation, plot_target
from gpushare.planner import MAX_MOVES  # the defragmentation and the pools' sizing load when a question asks them
from gpushare.planner.headroom import headroom_of
from gpushare.planner.report import write
from gpushare.policy import neverruns
from gpushare.progress import wanted

if TYPE_CHECKING:
    from gpushare.planner.pools import Sizing


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    fleet.add_placement_run(p, ("table", "json"))
    p.add_argument("workloads", nargs="*", help="Pods and controllers pending: files, directories, -")
    p.add_argument(
        "--pool",
        action="append",
        default=[],
        metavar="FILE",
        help="a Node manifest per node pool (annotations gpushare.io/pool-max and gpushare.io/pool-cost optional): "
        "how many of its nodes to add for the pending workloads, and each --template's spec.replicas more, to "
        "schedule (repeatable; each pool sized alone)",
    )
    p.add_argument(
        "--template",
        action="append",
        default=[],
        metavar="FILE",
        help="a Pod or a Deployment, StatefulSet, ReplicaSet or Job whose replicas to add (repeatable; each "
        "template is asked alone, after the pending workloads)",
    )
    fleet.add_runs(
        p,
        "also place each template's replicas K times with random tie-breaks, as kube-scheduler picks among "
        "nodes tied on score, node by node (slower), and show the least and most that fit (upstream semantics; "
        "ACK's node order has no ties)",
    )
    p.add_argument(
        "--plot",
        metavar="FILE.png|FILE.svg",
        help="write a picture: fragmentation per GPU (free memory a request of the smallest share asked can use, "
        "or stranded), and replicas more per template and nodes per pool",
    )
    p.add_argument(
        "--max-moves",
        type=whole("--max-moves", 0, 64),
        default=MAX_MOVES,
        metavar="N",
        help=f"moves of running pods searched at most for one pending pod (default {MAX_MOVES}; 0: report "
        "fragmentation only)",
    )


def _status_line(text: str) -> None:
    """One line on the terminal, rewritten in place: what the long sizing is doing now."""
    print(f"\r\x1b[Kgpushare: {text}", end="", file=sys.stderr, flush=True)


def main(args: argparse.Namespace) -> int:
    if not args.template and not args.pool and not args.workloads:
        raise InputError(
            "--template, --pool or pending workloads",
            None,
            "a pod template to count, a node pool to size, or pending workloads to make room for",
        )
    if args.plot:
        plot_target(args.plot)  # a name it cannot take, or a file of the user's there: refused before any work
    req = fleet.request_of(args)
    # the templates and pools first: a mistake in them is said before the fleet is read
    templates = read_paths(args.template, show_progress=wanted(args.quiet))
    if args.template and not templates:
        raise InputError("--template", ", ".join(args.template), "files that hold a pod template (these hold none)")
    pools = []
    if args.pool:
        from gpushare.planner.pools import read_pool

        pools = [read_pool(s) for s in read_paths(args.pool, show_progress=wanted(args.quiet))]
    if args.pool and not pools:
        raise InputError("--pool", ", ".join(args.pool), "files that hold a Node manifest (these hold none)")
    inputs = fleet.read_inputs(req)
    semantics, notes = fleet.semantics_of(req, inputs)
    pending = [s for s in inputs.workloads if s.kind in WORKLOAD_KINDS]
    answers = [
        headroom_of(inputs.nodes, inputs.existing, pending, t, semantics, req.input_unit, args.runs) for t in templates
    ]
    said = _status_line if wanted(args.quiet) else None
    sizings: list[Sizing] = []
    mix = None
    if pools:
        from gpushare.planner.pools import Fleet, size_all

        # with templates, the pools are sized for their replicas too (spec.replicas of each: the N more wanted)
        sized = Fleet(inputs.nodes, inputs.existing, pending + templates, semantics, req.input_unit, said)
        try:
            sizings, mix = size_all(sized, pools)
        finally:  # the status line cleared before the answer, or before Ctrl-C's line
            if said is not None:
                print("\r\x1b[K", end="", file=sys.stderr)
    served = [(s.pool, {p.key for p in s.unservable}) for s in sizings]
    defrag = None
    if pending:
        from gpushare.planner.defrag import defragment

        defrag = defragment(inputs.nodes, inputs.existing, pending, semantics, req.input_unit, args.max_moves, served)
    # validate's errors in the inputs, once each (every answer read the pending workloads)
    found = [f for h in answers for f in h.result.findings] + (defrag.result.findings if defrag is not None else [])
    if pools:  # the pools' nodes may hold what the fleet's cannot: their sizing names the pods no pool serves
        found = [f for f in found if f.rule.id not in neverruns.ON_INVENTORY]
    findings = list({(f.rule.id, f.subject, f.field, f.where): f for f in found}.values())
    write(answers, sizings, mix, defrag, semantics.gpu_memory_unit, args.output, sys.stdout, findings)
    if args.plot:
        simulation = Simulation.from_sources(inputs.nodes, inputs.existing, pending, semantics, req.input_unit)
        state = simulation.run(draws=False)
        shares = [h.per_gpu for h in answers if h.per_gpu] + [p.per_gpu for p in state.pending if p.per_gpu]
        from gpushare.planner.plot import write_capacity_plot

        written = write_capacity_plot(state, min(shares, default=0), answers, sizings, args.plot)
        print(f"gpushare: wrote {written}", file=sys.stderr)
    for note in [*notes, *inputs.notes]:
        print(f"gpushare: note: {note}", file=sys.stderr)
    return 1 if findings else 0
