"""`gpushare snapshot` (a live cluster copied to files, read-only, for `place`, `capacity`, `validate`, `diff` and
`doctor` to read offline) and `gpushare doctor` (its GPU-sharing ledger checked, live or from those files)."""

from __future__ import annotations

import argparse
import json
import sys

from gpushare.arguments import scheduler_name, seconds, whole
from gpushare.domain.versions import parse_kube_version
from gpushare.errors import InputError, counted
from gpushare.live import doctor, snapshot
from gpushare.live.ledger import ASSUME_TIMEOUT
from gpushare.policy.command import write_report
from gpushare.policy.validate import read_inputs
from gpushare.progress import progress, wanted

DEFAULT_DIR = "gpushare-snapshot"


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    if command == "doctor":
        _doctor_arguments(p)
        return
    p.add_argument(
        "--kubeconfig", metavar="FILE", help="the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config)"
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument(
        "-o",
        "--output",
        default=DEFAULT_DIR,
        metavar="DIR",
        help=f"directory to write (default ./{DEFAULT_DIR}); only a missing or empty one, or an unchanged earlier "
        "snapshot, is written",
    )
    p.add_argument(
        "--force", action="store_true", help="write over a directory gpushare did not write (kept as a backup)"
    )
    p.add_argument(
        "--page-size",
        type=whole("--page-size", 1, 5000),
        default=snapshot.PAGE,
        metavar="N",
        help=f"items asked for in one list call (default {snapshot.PAGE}, as kubectl)",
    )
    p.add_argument(
        "--kube-version", metavar="VERSION", help="refuse a cluster of another Kubernetes minor than this one"
    )
    p.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary line")


def _doctor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", help="a snapshot's directory or files (default: --kubeconfig's cluster, live)")
    p.add_argument(
        "--kubeconfig", nargs="?", const="", metavar="FILE", help="read the cluster live (read-only) instead of files"
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument(
        "--kube-version",
        metavar="VERSION",
        help="the cluster's Kubernetes (default: the live cluster's, or the snapshot's)",
    )
    p.add_argument(
        "--scheduler-name",
        action="append",
        type=scheduler_name,
        metavar="NAME",
        help=f"a spec.schedulerName GPU sharing serves (repeatable; default: {', '.join(doctor.SERVED)})",
    )
    p.add_argument(
        "--assume-timeout",
        type=seconds("--assume-timeout"),
        default=ASSUME_TIMEOUT,
        metavar="SECONDS",
        help=f"a pod assumed by the extender this long and never allocated is reported (default {ASSUME_TIMEOUT:g})",
    )
    p.add_argument("-o", "--output", choices=("text", "json", "sarif"), default="text", help="output form")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar (shown on a terminal after 2 s)")


def main(args: argparse.Namespace) -> int:
    if args.command == "doctor":
        return _doctor(args)
    return _snapshot(args)


def _doctor(args: argparse.Namespace) -> int:
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
    )
    return write_report(report, args.output, args.strict)


def _snapshot(args: argparse.Namespace) -> int:
    minor = parse_kube_version(args.kube_version, "--kube-version").minor if args.kube_version else None
    with progress(None, "objects", wanted(args.quiet), step=True) as advance:
        taken = snapshot.take(
            args.kubeconfig,
            args.output,
            context=args.context,
            force=args.force,
            page=args.page_size,
            expect_minor=minor,
            tick=advance,
        )
    target = taken.plan.target if taken.plan else taken.output
    if args.json:
        doc = {"output": str(target), "version": taken.version, "files": taken.counts, "skipped": taken.skipped}
        print(json.dumps(doc, indent=2))
    elif not args.quiet:
        total = {kind: n for kinds in taken.counts.values() for kind, n in kinds.items()}
        pods = taken.counts.get("existing.json", {}).get("Pod", 0)
        waiting = taken.counts.get("pending.json", {}).get("Pod", 0)
        said = [
            counted(total.get("Node", 0), "node"),
            counted(pods, "running pod"),
            counted(waiting, "pending pod"),
            counted(total.get("DaemonSet", 0), "DaemonSet"),
        ]
        print(f"gpushare: wrote {target} ({', '.join(said)}; Kubernetes {taken.version or 'unknown'})", file=sys.stderr)
        if taken.plan and taken.plan.backup:
            print(f"gpushare: kept what was there as {taken.plan.backup}", file=sys.stderr)
        for note in taken.skipped:
            print(f"gpushare: note: {note}", file=sys.stderr)
        print(
            f"next: gpushare place --nodes {target}/nodes.json --existing {target}/existing.json {target}/pending.json",
            file=sys.stderr,
        )
    return 0
