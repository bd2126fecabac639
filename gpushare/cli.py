"""The `gpushare` command: a thin layer over the library that turns errors into one line and an exit code."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from gpushare import __version__, collector
from gpushare.domain import cgpu, kinds, profiles
from gpushare.domain.labels import PLACEMENTS
from gpushare.domain.profiles import MIB_PER_UNIT
from gpushare.domain.versions import CONFIG_APIS, MINORS
from gpushare.errors import GpushareError, shown

EXIT_USAGE = 2
#: 128 + the signal number, as a shell reports a process ended by SIGINT or SIGTERM.
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own usage errors: one line, exit 2
        self.exit(EXIT_USAGE, f"gpushare: error: {message}\n")


def _scheduler_name(text: str) -> str:
    """A schedulerName as Kubernetes validates it (a DNS subdomain), so a typo or '' is refused, not served."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", text):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a scheduler name (lowercase DNS subdomain)")
    return text


def _render_args(p: argparse.ArgumentParser) -> None:
    from gpushare.generate.render import FORMATS
    from gpushare.settings.options import OPTIONS

    p.add_argument("--config", metavar="FILE", help="settings document (YAML, kind InstallerSettings)")
    p.add_argument("--format", choices=FORMATS, default="chart", help="chart directory or plain manifests")
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="chart: directory (default ./ack-ai-installer); manifests: file, '-' for stdout (default), "
        "or a directory in control-plane mode. Only a missing or empty path, or gpushare's own unchanged "
        "output, is written",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write over a path gpushare did not write (or one edited since): the old one is kept as a "
        "backup beside it (never the current, home or root directory)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON summary (files, objects, warnings) on stdout")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print only warnings and errors (no 'wrote' line, no next steps)"
    )
    group = p.add_argument_group("settings")
    for option in OPTIONS:
        kwargs: dict[str, Any] = {"dest": option.flag.replace("-", "_"), "default": None, "help": option.help}
        if option.kind == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["metavar"] = {"csv": "A,B", "yaml": "YAML", "int": "N"}.get(option.kind, "VALUE")
            if option.choices and option.kind == "csv":
                kwargs["help"] += f" Comma-separated: {', '.join(option.choices)}."
            elif option.choices:
                kwargs["metavar"] = "{" + ",".join(option.choices) + "}"
        group.add_argument(f"--{option.flag}", **kwargs)


def _placement_args(p: argparse.ArgumentParser, workloads: bool) -> None:
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
    p.add_argument(
        "--semantics",
        choices=("ack", "upstream"),
        default="ack",
        help="ack: ACK's rules (units, binpack/spread, compute, multi-GPU); upstream: the open-source extender exactly",
    )
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
        "--gpu-memory-unit",
        choices=tuple(MIB_PER_UNIT),
        help="unit the objects' aliyun.com/gpu-mem numbers are in (default 1GiB)",
    )
    p.add_argument(
        "--cgpu-max-pods-per-gpu",
        type=int,
        default=cgpu.MAX_PODS_PER_GPU,
        metavar="N",
        help=f"pods per GPU on cgpu nodes (default {cgpu.MAX_PODS_PER_GPU}, ACK's 128MiB notes)",
    )
    p.add_argument("-o", "--output", choices=("table", "json", "inspect"), default="table", help="output form")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar (shown on a terminal after 2 s)")
    if workloads:
        p.add_argument(
            "--scheduler-name",
            metavar="NAME",
            type=_scheduler_name,
            help="spec.schedulerName gpushare serves; GPU pods naming another are reported as not served "
            f"(default: {profiles.DEFAULT_SCHEDULER_NAME} for ack, {profiles.SECONDARY_SCHEDULER_NAME} for upstream)",
        )
        p.add_argument("workloads", nargs="*", help="Pods and controllers to place: files, directories, -")
        p.add_argument(
            "--node-order", metavar="FILE", help="replay: 'namespace/name node' per line fixes each pod's node"
        )
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


#: The cluster facts the rules check against, each a flag of validate and preflight.
FACT_FLAGS: dict[str, str] = {
    "region": "Alibaba Cloud region (compute allocation is offered in some)",
    "kube-version": "Kubernetes version of the cluster",
    "scheduler-version": "kube-scheduler version (ACK: e.g. 1.24.3-ack-2.0)",
    "cgpu-version": "cGPU version installed on the nodes",
    "driver-version": "NVIDIA driver version",
    "docker-version": "Docker version on the GPU nodes",
    "chart-version": "ack-ai-installer chart version installed",
    "scheduler-name": "spec.schedulerName gpushare serves (the settings' wins when a settings document is given)",
}


def _policy_args(p: argparse.ArgumentParser) -> None:
    facts = p.add_argument_group("cluster facts (what the rules check against)")
    for flag, text in FACT_FLAGS.items():
        kind = _scheduler_name if flag == "scheduler-name" else str
        facts.add_argument(f"--{flag}", metavar="VALUE", help=text, type=kind)
    p.add_argument("-o", "--output", choices=("text", "json", "sarif"), default="text", help="output form")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar (shown on a terminal after 2 s)")


#: Subcommands: (help, description). A command's arguments are built only when that command runs (`only`), so
#: `gpushare --help` imports none of the library behind them.
COMMANDS: dict[str, tuple[str, str]] = {
    "render": (
        "write the installer chart or manifests",
        "Write a Helm chart (default: ./ack-ai-installer) or plain manifests for the GPU-sharing stack. "
        "Every setting of the settings document has a flag; flags override --config.",
    ),
    "place": (
        "dry-run: where would these pods land, and why not",
        "Place workloads on a fleet offline, as the scheduler would. Exit 1 when a pod is invalid, 2 on unusable "
        "input.",
    ),
    "inspect": (
        "per-GPU allocation, like kubectl inspect gpushare",
        "Show each node's GPU memory allocated/total from running pods.",
    ),
    "validate": (
        "check settings, workloads and Nodes against the product's rules",
        "Run every rule on settings documents (kind InstallerSettings), workloads (Pod and controllers) and Node "
        "manifests. Exit 0 clean or warnings only, 1 on errors (--strict: warnings too), 2 on bad usage or "
        "unreadable input.",
    ),
    "preflight": (
        "can these settings be installed on this cluster? (read-only)",
        "Read the cluster (version, nodes, GPU pods, installed unit, scheduler) and run the rules on the settings "
        "against it. Never writes to the cluster.",
    ),
    "rules": ("list every rule: ID, severity, summary, source", "List every rule: ID, severity, summary, source."),
}


class _Version(argparse.Action):
    """`--version`, saying too whether the placement engine is compiled (loaded only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from gpushare.placement import engine_build

        print(f"gpushare {__version__} (placement engine: {engine_build()})")
        parser.exit()


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line parser; with `only`, just that subcommand's arguments (the others are named, not built)."""
    p = _Parser(prog="gpushare", description="GPU sharing on Kubernetes: installer generator, rules, dry-run.")
    p.add_argument("--version", action=_Version, help="show the version and which placement engine runs, and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (summary, description) in COMMANDS.items():
        command = sub.add_parser(name, help=summary, description=description)
        if only is None or only == name:
            _ARGUMENTS[name](command)
    return p


def _preflight_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", default=None, metavar="FILE", help="kubeconfig (default: the usual)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--config", required=True, metavar="FILE", help="settings document to install")
    _policy_args(p)


def _validate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", help="files, directories or - (stdin)")
    _policy_args(p)


def _inspect_args(p: argparse.ArgumentParser) -> None:
    _placement_args(p, workloads=False)
    p.set_defaults(output="inspect")


def _rules_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")


_ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "render": _render_args,
    "place": lambda p: _placement_args(p, workloads=True),
    "inspect": _inspect_args,
    "validate": _validate_args,
    "preflight": _preflight_args,
    "rules": _rules_args,
}


def _cmd_render(args: argparse.Namespace) -> int:
    from gpushare.generate.render import render
    from gpushare.settings.options import OPTIONS

    options = {o.flag.replace("-", "_"): getattr(args, o.flag.replace("-", "_")) for o in OPTIONS}
    options = {k: v for k, v in options.items() if v is not None}
    output = args.output
    if output is None:
        output = profiles.INSTALLER_CHART if args.format == "chart" else "-"
    rendered = render(format=args.format, output=output, config=args.config, force=args.force, **options)
    for finding in rendered.warnings:
        print(f"gpushare: warning: {finding.message}", file=sys.stderr)
    to_stdout = args.format == "manifests" and output == "-"
    if to_stdout and not args.json:
        sys.stdout.write(rendered.files["manifests.yaml"])
    if args.json:
        summary = {
            "apiVersion": kinds.API_VERSION,
            "kind": kinds.RENDER_RESULT,
            "format": rendered.format,
            "output": None if to_stdout else str(rendered.written.target if rendered.written else output),
            "backup": str(rendered.written.backup) if rendered.written and rendered.written.backup else None,
            "files": sorted(rendered.files),
            "objects": [
                {"kind": o["kind"], "name": o["metadata"]["name"], "namespace": o["metadata"].get("namespace")}
                for o in rendered.objects
            ],
            "warnings": [{"rule": f.rule.id, "message": f.message} for f in rendered.warnings],
            "requirements": rendered.requirements,
        }
        if to_stdout:
            summary["manifests"] = rendered.files["manifests.yaml"]
        print(json.dumps(summary, indent=2))
    elif not to_stdout and not args.quiet:
        written = rendered.written
        print(f"gpushare: wrote {rendered.format} to {written.target if written else output}", file=sys.stderr)
        if written and written.backup:
            print(f"gpushare: kept what was there as {written.backup}", file=sys.stderr)
        print(rendered.notes, file=sys.stderr, end="")
    return 0


def _cmd_place(args: argparse.Namespace) -> int:
    from gpushare.placement.command import PlaceRequest, place_command
    from gpushare.placement.model import Semantics

    unit = args.gpu_memory_unit or (profiles.UNIT_1GIB if args.semantics == "ack" else profiles.UNIT_GIB)
    request = PlaceRequest(
        nodes=args.nodes,
        existing=args.existing,
        workloads=getattr(args, "workloads", []),
        semantics=Semantics(
            args.semantics,
            args.placement,
            unit,
            args.cgpu_max_pods_per_gpu,
            scheduler_name=getattr(args, "scheduler_name", None),
        ),
        kube_version=args.kube_version,
        scheduler_config_api=args.scheduler_config_api,
        input_unit=unit,
        engine=getattr(args, "engine", "fast"),
        node_order=getattr(args, "node_order", None),
        compare=getattr(args, "compare", []),
        output=args.output,
        plot=getattr(args, "plot", None),
        kubeconfig=args.kubeconfig,
        context=args.context,
        explain=getattr(args, "explain", False),
        quiet=args.quiet,
    )
    return place_command(request, sys.stdout)


def _facts(args: argparse.Namespace) -> dict[str, str | None]:
    return {flag.replace("-", "_"): getattr(args, flag.replace("-", "_")) for flag in FACT_FLAGS}


def _print_report(report: Any, args: argparse.Namespace) -> int:
    from gpushare import jsontext
    from gpushare.policy import report as reporting
    from gpushare.policy.rules import RULES

    if args.output == "json":
        print(jsontext.dumps(reporting.to_dict(report)))
    elif args.output == "sarif":
        print(jsontext.dumps(reporting.to_sarif(report, RULES)))
    else:
        sys.stdout.write(reporting.to_text(report))
    return int(report.exit_code(args.strict))


def _cmd_validate(args: argparse.Namespace) -> int:
    from gpushare.policy.engine import ClusterFacts
    from gpushare.policy.validate import read_inputs, validate
    from gpushare.progress import wanted

    sources = read_inputs(args.paths, show_progress=wanted(args.quiet))
    if not sources:
        print(f"gpushare: warning: no Kubernetes objects in {', '.join(args.paths)}", file=sys.stderr)
    report = validate(sources, ClusterFacts(**_facts(args)), wanted(args.quiet))  # type: ignore[arg-type]
    return _print_report(report, args)


def _cmd_preflight(args: argparse.Namespace) -> int:
    from gpushare.policy.preflight import preflight, read_facts
    from gpushare.settings.load import load_config

    document = load_config(args.config)
    facts = read_facts(args.kubeconfig, args.context)
    flags = {k: v for k, v in _facts(args).items() if k != "kube_version"}
    return _print_report(preflight(document, facts, args.config, **flags), args)


def _cmd_rules(args: argparse.Namespace) -> int:
    from gpushare.policy.report import rule_dict
    from gpushare.policy.rules import RULES

    if args.output == "json":
        print(
            json.dumps(
                {"apiVersion": kinds.API_VERSION, "kind": kinds.RULE_LIST, "rules": [rule_dict(r) for r in RULES]},
                indent=2,
            )
        )
        return 0
    for rule in RULES:
        print(f"{rule.id}  {rule.severity:<7}  {rule.target:<8}  {rule.summary}  [{rule.source}]")
        if rule.explanation:
            print(textwrap.fill(rule.explanation, 110, initial_indent=" " * 7, subsequent_indent=" " * 7))
    return 0


class Terminated(BaseException):
    """SIGTERM, raised where the program is so that cleanups run (no partial output is left) as for Ctrl-C."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; SIGINT and SIGTERM end it with one line, exit 130 and 143, output files untouched."""
    in_main_thread = threading.current_thread() is threading.main_thread()  # signal handlers live there only
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if in_main_thread else None
    try:
        with collector.paused():
            return _main(argv)
    except KeyboardInterrupt:
        return _interrupted()
    except Terminated:
        print("gpushare: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def entry() -> NoReturn:
    """The `gpushare` command: `main`, then the process ends at once, without freeing what the command built.

    A large `place` leaves a million objects behind, many in reference cycles (the engine's indexes) that only the
    cyclic collector frees: it took 0.5-1 s at 100,000 pods to free memory the system takes back at exit anyway. The
    output is flushed first; nothing of gpushare's is left to run at exit (its files are written and its reader's
    child reaped within `main`). Usage errors and --help leave through SystemExit, as before."""
    with collector.paused():  # re-enabled, the collector would start on those objects at the next allocation
        code = main()
        try:
            _flush()
        except KeyboardInterrupt:  # as during the command: one line
            code = _interrupted()
            _flush()
        os._exit(code)


def _interrupted() -> int:
    print("gpushare: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # the reader went away, or the stream is closed
            stream.flush()


def _main(argv: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    command = given[0] if given and given[0] in COMMANDS else ""  # "": help, --version or a usage error
    args = parser(only=command).parse_args(given)
    commands = {
        "render": _cmd_render,
        "place": _cmd_place,
        "inspect": _cmd_place,
        "validate": _cmd_validate,
        "preflight": _cmd_preflight,
        "rules": _cmd_rules,
    }
    try:
        return commands[args.command](args)
    except GpushareError as exc:
        print(f"gpushare: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader (head, less) went away: nothing more to say
        return 0
    except OSError as exc:
        print(f"gpushare: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    entry()
