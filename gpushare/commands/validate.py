"""`gpushare validate`: every rule on settings documents, workloads and Node manifests, against the cluster facts
the flags give."""

from __future__ import annotations

import argparse
import sys

from gpushare.commands.arguments import add_facts, facts_of
from gpushare.domain import products
from gpushare.errors import InputError
from gpushare.policy import report as reporting
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.validate import read_inputs, validate
from gpushare.progress import wanted


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("paths", nargs="+", help="files, directories or - (stdin)")
    add_facts(p)
    p.add_argument(
        "--semantics",
        choices=tuple(products.SEMANTICS_PRODUCTS),
        default="ack",
        help="whose stack serves the pods, as place's --semantics: ack: ACK's; upstream: the open-source extender "
        "and device plugin (no compute shares; default scheduler name gpushare-scheduler)",
    )


def main(args: argparse.Namespace) -> int:
    facts = facts_of(args)
    sources = read_inputs(args.paths, show_progress=wanted(args.quiet))
    if not sources:  # a CI gate fed by a failed `kubectl get > file` must not pass
        raise InputError("paths", ", ".join(args.paths), "files that hold Kubernetes objects (these hold none)")
    facts["semantics"] = args.semantics
    report = validate(sources, ClusterFacts(**facts, flags=True), wanted(args.quiet))  # type: ignore[arg-type]
    reporting.write(report, args.output, sys.stdout)
    return int(report.exit_code(args.strict))
