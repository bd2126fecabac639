"""`gpushare doctor`: a cluster's GPU-sharing ledger checked (what the pods bound to each GPU hold by the extender's
annotations, the device plugin and cGPU installer each GPU node needs, the scheduler configuration and the unit),
live or on a snapshot's files; read-only."""

from __future__ import annotations

import argparse
import sys

from gpushare.commands import fleet
from gpushare.commands.arguments import add_findings_output, add_ledger_reading
from gpushare.domain.versions import parse_kube_version
from gpushare.errors import InputError
from gpushare.kube.ledger import ASSUME_TIMEOUT
from gpushare.live import doctor
from gpushare.policy import report as reporting
from gpushare.policy.validate import read_inputs
from gpushare.progress import wanted


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("paths", nargs="*", help="a snapshot's directory or files (default: --kubeconfig's cluster, live)")
    fleet.add_kubeconfig(p, "read the cluster live (read-only) instead of files")
    fleet.add_kube_version(p, "the cluster's Kubernetes (default: the live cluster's, or the snapshot's)")
    p.add_argument(
        "--semantics",
        choices=fleet.SEMANTICS,
        default="ack",
        help="how the GPU-sharing scheduler records a bound pod's GPUs: ack: ACK's (its allocation annotation, "
        "else the extender's); upstream: the open-source extender's alone (one index, as Atoi reads it)",
    )
    add_ledger_reading(p, doctor.SERVED, ASSUME_TIMEOUT)
    add_findings_output(p)


def main(args: argparse.Namespace) -> int:
    if args.kube_version:
        parse_kube_version(args.kube_version, "--kube-version")
    if args.paths and args.kubeconfig is not None:
        raise InputError("paths", ", ".join(args.paths), "files or --kubeconfig, not both")
    if args.paths:
        sources = read_inputs(args.paths, show_progress=wanted(args.quiet))
        version = None
        if not any(s.kind == "Node" for s in sources):
            raise InputError("paths", ", ".join(args.paths), "a snapshot's files, with its Nodes (they hold none)")
    else:
        sources, version = doctor.read_live(args.kubeconfig or None, args.context)
    report = doctor.doctor(
        sources,
        kube_version=args.kube_version or version,
        served=args.scheduler_name or doctor.SERVED,
        assume_timeout=args.assume_timeout,
        semantics=args.semantics,
    )
    reporting.write(report, args.output, sys.stdout)
    return int(report.exit_code(args.strict))
