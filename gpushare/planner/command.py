"""`gpushare capacity`: how many more replicas of each template fit on the fleet `place` reads, and why not more."""

from __future__ import annotations

import argparse
import sys

from gpushare.errors import InputError
from gpushare.kube.documents import read_paths
from gpushare.kube.workloads import WORKLOAD_KINDS
from gpushare.placement import command as placement
from gpushare.planner import report
from gpushare.planner.defrag import MAX_MOVES, defragment
from gpushare.planner.headroom import headroom_of
from gpushare.planner.pools import Fleet, read_pool, size
from gpushare.progress import wanted


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    placement.add_arguments(p, "capacity")
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
    p.add_argument(
        "--runs",
        type=_runs,
        default=0,
        metavar="K",
        help="also place each template's replicas K times with random tie-breaks, as kube-scheduler picks among "
        "nodes tied on score, node by node (slower), and show the least and most that fit (upstream semantics; "
        "ACK's node order has no ties)",
    )
    p.add_argument(
        "--max-moves",
        type=_moves,
        default=MAX_MOVES,
        metavar="N",
        help=f"moves of running pods searched at most for one pending pod (default {MAX_MOVES}; 0: report "
        "fragmentation only)",
    )


def _runs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"--runs {text!r}: expected a whole number from 0 to 1000")
    return value


def _moves(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 64:
        raise argparse.ArgumentTypeError(f"--max-moves {text!r}: expected a whole number from 0 to 64")
    return value


def main(args: argparse.Namespace) -> int:
    if not args.template and not args.pool and not args.workloads:
        raise InputError(
            "--template, --pool or pending workloads",
            None,
            "a pod template to count, a node pool to size, or pending workloads to make room for",
        )
    req = placement.request_of(args)
    # the templates and pools first: a mistake in them is said before the fleet is read
    templates = read_paths(args.template, show_progress=wanted(args.quiet))
    if args.template and not templates:
        raise InputError("--template", ", ".join(args.template), "files that hold a pod template (these hold none)")
    pools = [read_pool(s) for s in read_paths(args.pool, show_progress=wanted(args.quiet))]
    if args.pool and not pools:
        raise InputError("--pool", ", ".join(args.pool), "files that hold a Node manifest (these hold none)")
    inputs = placement.read_inputs(req)
    semantics, notes = placement.semantics_of(req, inputs)
    pending = [s for s in inputs.workloads if s.kind in WORKLOAD_KINDS]
    answers = [
        headroom_of(inputs.nodes, inputs.existing, pending, t, semantics, req.input_unit, args.runs) for t in templates
    ]
    # with templates, the pools are sized for their replicas too (spec.replicas of each: the N more wanted)
    sizings = (
        size(Fleet(inputs.nodes, inputs.existing, pending + templates, semantics, req.input_unit), pools)
        if pools
        else []
    )
    served = [(s.pool, {p.key for p in s.unservable}) for s in sizings]
    defrag = (
        defragment(inputs.nodes, inputs.existing, pending, semantics, req.input_unit, args.max_moves, served)
        if pending
        else None
    )
    report.write(answers, sizings, defrag, semantics.gpu_memory_unit, req.output, sys.stdout)
    for note in [*notes, *inputs.notes]:
        print(f"gpushare: note: {note}", file=sys.stderr)
    return 0
