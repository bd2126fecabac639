"""`gpushare snapshot`: a live cluster copied to files, read-only, for `place`, `capacity`, `validate`, `diff` and
`doctor` to read offline; written whole or not at all."""

from __future__ import annotations

import argparse
import json
import sys

from gpushare.commands import fleet
from gpushare.commands.arguments import whole
from gpushare.domain.versions import parse_kube_version
from gpushare.errors import counted
from gpushare.kube.cluster import PAGE
from gpushare.live import snapshot
from gpushare.progress import progress, wanted

DEFAULT_DIR = "gpushare-snapshot"


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    fleet.add_kubeconfig(p, "the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
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
        default=PAGE,
        metavar="N",
        help=f"items asked for in one list call (default {PAGE}, as kubectl)",
    )
    fleet.add_kube_version(p, "refuse a cluster of another Kubernetes minor than this one")
    p.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary line")


def main(args: argparse.Namespace) -> int:
    minor = parse_kube_version(args.kube_version, "--kube-version").minor if args.kube_version else None
    with progress(None, "objects", wanted(args.quiet), step=True) as advance:
        taken = snapshot.take(
            args.kubeconfig or None,
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
