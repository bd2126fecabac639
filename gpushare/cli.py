"""The `gpushare` command: a registry of subcommands (one module each under `gpushare.commands`), and the one place
where errors become one line and an exit code, and signals end the process cleanly."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from gpushare import __version__, errors, process
from gpushare.errors import GpushareError

EXIT_USAGE = 2
#: 128 + the signal number, as a shell reports a process ended by SIGINT or SIGTERM.
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own usage errors: one line, exit 2
        self.exit(EXIT_USAGE, f"gpushare: error: {message}\n")


@dataclass(frozen=True)
class Command:
    """A subcommand: the module that holds its flags (`add_arguments(parser, name)`) and runs it (`main(args)`),
    imported only when that command runs, so `gpushare --help` loads none of the library behind the others."""

    module: str
    summary: str
    description: str


COMMANDS: dict[str, Command] = {
    "render": Command(
        "gpushare.commands.render",
        "write the installer chart or manifests",
        "Write a Helm chart (default: ./ack-ai-installer) or plain manifests for the GPU-sharing stack. "
        "Every setting of the settings document has a flag; flags override --config.",
    ),
    "place": Command(
        "gpushare.commands.place",
        "dry-run: where would these pods land, and why not",
        "Place workloads on a fleet offline, as the scheduler would. Exit 1 when a pod is invalid, 2 on unusable "
        "input.",
    ),
    "capacity": Command(
        "gpushare.commands.capacity",
        "how many more replicas fit, and why not more",
        "For each --template (a Pod or a controller's pod template), how many more of its replicas schedule on the "
        "fleet after its running and pending pods, as the scheduler would place them one by one; where they land; "
        "why the next one does not; GPU memory left stranded. Exit 2 on unusable input.",
    ),
    "diff": Command(
        "gpushare.commands.diff",
        "what a change of settings or node labels does: stack, rules, fleet",
        "Compare the stack rendered before and after a change (--config to --to, --set, --label), object by object "
        "and field by field; run the rules the change must pass (a unit switch under running GPU pods, a mode "
        "relabel, an API a minor removed...); with a fleet, name the running pods whose place no longer holds and "
        "the pending pods whose outcome changes. Exit 0 when no rule blocks the change, 1 when one does, 2 on "
        "unusable input.",
    ),
    "snapshot": Command(
        "gpushare.commands.snapshot",
        "copy a live cluster to files for offline work (read-only)",
        "List the cluster's nodes, pods and what placement reads (paginated, trimmed) into a directory that place, "
        "capacity, validate, diff and doctor read offline. Written whole or not at all. Exit 2 on an unreachable or "
        "refusing cluster.",
    ),
    "doctor": Command(
        "gpushare.commands.doctor",
        "check a cluster's GPU-sharing ledger: annotations, plugins, config (read-only)",
        "Check what the pods bound to each GPU hold (the extender's annotations), the device plugin and cGPU installer "
        "each GPU node needs, the scheduler configuration and the unit, live (--kubeconfig) or on a snapshot's files. "
        "Exit 0 clean or warnings only, 1 on errors (--strict: warnings too), 2 on unusable input.",
    ),
    "watch": Command(
        "gpushare.commands.watch",
        "keep the ledger, fragmentation and headroom current: Prometheus metrics (read-only)",
        "List, then watch, what snapshot reads of a live cluster (read-only), keep the placement model current event "
        "by event, and serve it: /metrics (each GPU's memory and what its pods hold, pools' stranded and fragmented "
        "memory, templates' headroom, pending pods by reason, doctor's findings, the watch's own health), /healthz, "
        "/readyz, /explain?pod=NS/NAME and /capacity?template=NAME (JSON). SIGTERM ends it (exit 0); exit 2 on an "
        "unreachable or refusing cluster.",
    ),
    "inspect": Command(
        "gpushare.commands.inspect",
        "per-GPU allocation, like kubectl inspect gpushare",
        "Show each node's GPU memory allocated/total from running pods.",
    ),
    "validate": Command(
        "gpushare.commands.validate",
        "check settings, workloads and Nodes against the product's rules",
        "Run every rule on settings documents (kind InstallerSettings), workloads (Pod and controllers) and Node "
        "manifests. Exit 0 clean or warnings only, 1 on errors (--strict: warnings too), 2 on bad usage or "
        "unreadable input.",
    ),
    "preflight": Command(
        "gpushare.commands.preflight",
        "can these settings be installed on this cluster? (read-only)",
        "Read the cluster (version, nodes, GPU pods, installed unit, scheduler) and run the rules on the settings "
        "against it. Never writes to the cluster.",
    ),
    "rules": Command(
        "gpushare.commands.rules",
        "list the rules: ID, severity, summary, source, fix",
        "List every rule (or the IDs named): ID, severity, target, summary and source, then how to fix a finding "
        "and why the rule holds.",
    ),
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
    """The command line parser; with `only`, just that subcommand (the others are not built: each costs argparse's
    message lookups, a tenth of a small fleet question's start)."""
    p = _Parser(prog="gpushare", description="GPU sharing on Kubernetes: installer generator, rules, dry-run.")
    p.add_argument("--version", action=_Version, help="show the version and which placement engine runs, and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, command in COMMANDS.items():
        if only and only != name:
            continue
        subparser = sub.add_parser(name, help=command.summary, description=command.description)
        if only == name:
            importlib.import_module(command.module).add_arguments(subparser, name)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; SIGINT and SIGTERM end it with one line, exit 130 and 143, output files untouched."""
    try:
        with errors.signals_handled(), process.paused():
            code = _main(argv)
            errors.raise_if_signalled()  # one whose exception a finalizer lost
            return code
    except KeyboardInterrupt:
        return _interrupted()
    except errors.Terminated:
        print("gpushare: terminated", file=sys.stderr)
        return EXIT_TERMINATED


def entry() -> NoReturn:
    """The `gpushare` command: `main`, then the process ends at once, without freeing what the command built.

    A large `place` leaves a million objects behind, many in reference cycles (the engine's indexes) that only the
    cyclic collector frees: it took 0.5-1 s at 100,000 pods to free memory the system takes back at exit anyway. The
    output is flushed first; nothing of gpushare's is left to run at exit (its files are written and its reader's
    child reaped within `main`). Usage errors and --help leave through SystemExit, as before."""
    with process.paused():  # re-enabled, the collector would start on those objects at the next allocation
        code = main()
        try:
            _flush()
        except KeyboardInterrupt:  # as during the command: one line
            code = _interrupted()
            with contextlib.suppress(OSError):
                _flush()
        except OSError:  # said by _flush
            code = 1
        os._exit(code)


def _interrupted() -> int:
    print("gpushare: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # the reader went away, or the stream is closed
            try:
                stream.flush()
            except OSError as exc:  # a full disk or a dead device under a redirection: said, exit 1 (`entry`)
                _write_error(exc)
                raise


def _write_error(exc: OSError) -> None:
    """One line naming what could not be written: the file, else the standard output the answer went to (once:
    the buffer the command could not write is still there at exit, and fails again)."""
    what = exc.filename or "standard output"
    if what in _REPORTED:
        return
    _REPORTED.add(what)
    with contextlib.suppress(OSError, ValueError):
        print(f"gpushare: error: {what}: {exc.strerror or exc}", file=sys.stderr)


#: What a write error was already said for (`_write_error`).
_REPORTED: set[str] = set()


def _main(argv: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    command = given[0] if given and given[0] in COMMANDS else ""  # "": help, --version or a usage error
    try:
        try:
            args = parser(only=command).parse_args(given)  # --help and --version print here
        except SystemExit:  # their text, or a usage error's, written before the exit (an OSError: said below)
            sys.stdout.flush()
            raise
        code = int(importlib.import_module(COMMANDS[args.command].module).main(args))
        sys.stdout.flush()  # a write error of the answer is the command's: said here, not at exit
        return code
    except GpushareError as exc:
        print(f"gpushare: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader (head, less) went away: nothing more to say
        return 0
    except OSError as exc:
        _write_error(exc)
        return 1


if __name__ == "__main__":  # pragma: no cover
    entry()
