"""`gpushare diff`: what a change of settings (and of the GPU nodes' labels) does to the rendered stack, which rules
block it, and, on a fleet, which running pods lose their place and which pending pods change fate."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpushare.commands import fleet
from gpushare.commands.arguments import add_quiet
from gpushare.domain.labels import PLACEMENTS
from gpushare.domain.versions import parse_kube_version
from gpushare.errors import InputError
from gpushare.planner import diffreport
from gpushare.planner.change import Label, Side, diff
from gpushare.settings.load import load_config
from gpushare.settings.model import load_settings
from gpushare.settings.options import OPTIONS, Option, set_path


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--config", metavar="FILE", help="the settings before (a settings document; default: the defaults)")
    p.add_argument("--to", metavar="FILE", help="the settings after (default: the settings before, then --set)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a setting after the change, by its render flag or its field in the settings document "
        "(gpu-memory-unit=128MiB, kube-version=1.28, profile=open-source, isolation=share,cgpu, "
        "scheduler.configApi=v1); repeatable",
    )
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE|KEY-",
        help="a label the change sets on every node that reports GPU memory, as kubectl label --overwrite "
        "(ack.node.gpu.schedule=cgpu, ack.node.gpu.placement=spread; KEY- removes it); repeatable",
    )
    fleet.add_placement(p, "the default placement before (ack semantics)")
    p.add_argument("--to-placement", choices=PLACEMENTS, help="the default placement after (default: as before)")
    fleet.add_kube_version(
        p,
        "the cluster's Kubernetes, for a side whose settings name none (default: the live cluster's with "
        "--kubeconfig, else the newest gpushare models)",
    )
    fleet.add_fleet(p)
    p.add_argument("workloads", nargs="*", help="pending pods and controllers, placed on both sides")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output form")
    p.add_argument(
        "--unified", action="store_true", help="show each changed object as a unified diff of its YAML (helm-diff)"
    )
    add_quiet(p)


_BY_WORD: dict[str, Option] = {o.flag: o for o in OPTIONS} | {o.field: o for o in OPTIONS}


def _set(document: dict[str, Any], text: str) -> None:
    """One --set FIELD=VALUE on the document, the value read as the render flag of that field reads it."""
    word, sep, value = text.partition("=")
    option = _BY_WORD.get(word.strip().lstrip("-"))
    if not sep or option is None:
        raise InputError(
            "--set", text, "FIELD=VALUE with FIELD a flag of gpushare render (gpu-memory-unit) or a settings field"
        )
    set_path(document, option.path, option.parse(value))


def labels_of(texts: list[str]) -> list[Label]:
    """--label KEY=VALUE (set) or KEY- (removed)."""
    found: list[Label] = []
    for text in texts:
        key, sep, value = text.partition("=")
        if sep and key.strip():
            found.append((key.strip(), value.strip()))
        elif not sep and text.endswith("-") and len(text) > 1:
            found.append((text[:-1], None))
        else:
            raise InputError("--label", text, "KEY=VALUE to set a label, KEY- to remove it")
    return found


def sides(args: argparse.Namespace) -> tuple[Side, Side]:
    """The settings before (--config) and after (--to, else the same document, then each --set), each loaded as
    render loads its own: a field that does not fit is refused naming the file or flag."""
    raw = load_config(args.config) if args.config else {}
    before = load_settings(raw, where=args.config)
    after_raw = load_config(args.to, "--to") if args.to else dict(raw)
    for text in args.set:
        _set(after_raw, text)
    where = args.to or ("--set" if args.set else args.config)
    after = load_settings(after_raw, where=where)
    return Side(before, args.placement), Side(after, args.to_placement or args.placement)


def main(args: argparse.Namespace) -> int:
    labels = labels_of(args.label)
    before, after = sides(args)
    minor = parse_kube_version(args.kube_version, "--kube-version").minor if args.kube_version else None
    documents: dict[str, Any] = {}
    if args.nodes or args.kubeconfig is not None:
        request = fleet.FleetRequest(
            nodes=args.nodes,
            existing=args.existing,
            workloads=args.workloads,
            kubeconfig=args.kubeconfig,
            context=args.context,
            quiet=args.quiet,
        )
        inputs = fleet.read_inputs(request)
        if minor is None and inputs.version is not None:
            minor = fleet.scheduler_profile(None, None, inputs.version)[0].minor
        documents = {"nodes": inputs.nodes, "existing": inputs.existing, "pending": inputs.workloads}
    elif args.existing or args.workloads:
        raise InputError("--nodes", None, "the fleet's Node objects (or --kubeconfig) with --existing or workloads")
    asked = {"--to": [args.to] if args.to else [], "--set": args.set, "--label": args.label}
    asked["--to-placement"] = [args.to_placement] if args.to_placement else []
    said = " ".join(f"{flag} {value}" for flag, values in asked.items() for value in values) or "--to"
    answer = diff(before, after, labels=labels, cluster_minor=minor, said=said, **documents)
    diffreport.write(answer, args.output, sys.stdout, args.unified)
    return 1 if answer.blocked else 0
