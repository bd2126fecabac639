"""`gpushare watch`: the GPU-sharing ledger, fragmentation and headroom kept current from a live cluster (list, then
watch; read-only) and served as Prometheus metrics, with /explain and /capacity answers in JSON."""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

from gpushare import process
from gpushare.commands import fleet
from gpushare.commands.arguments import add_ledger_reading, seconds, whole
from gpushare.domain.labels import NODE_POOL_LABEL
from gpushare.errors import InputError
from gpushare.kube.cluster import Cluster, ClusterError
from gpushare.kube.documents import Source, read_paths
from gpushare.kube.ledger import ASSUME_TIMEOUT
from gpushare.live import doctor as doctoring
from gpushare.live import serve
from gpushare.live.metrics import TEXT

DEFAULT_LISTEN = "127.0.0.1:9445"


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError("--listen", text, "HOST:PORT, a port from 0 to 65535 (0.0.0.0:9445 for every address)")
    return host.strip("[]") or "0.0.0.0", int(port)


def _directory(path: str) -> list[Source]:
    """The templates in a directory's files (a mounted ConfigMap's: its `..data` links not read twice)."""
    folder = Path(path)
    if not folder.is_dir():
        raise InputError("--templates-dir", path, "a directory (it may be empty)")
    files = sorted(str(f) for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    return read_paths(files, show_progress=False) if files else []


#: How often each answer is made again, at most (each in seconds): flag, default, what it bounds.
_INTERVALS = (
    ("--debounce", 1.0, "after changes, recompute the metrics at most this often"),
    (
        "--heavy-every",
        10.0,
        "recompute the templates' headroom and the moves that would fit pending pods at most this often",
    ),
    ("--doctor-every", 30.0, "run doctor's rules on the cluster's objects at most this often"),
    ("--resync", 600.0, "list every kind whole again this often and compare it with the model"),
)


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    fleet.add_kubeconfig(p, "the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to serve /metrics, /healthz, /readyz, /explain, /capacity (default {DEFAULT_LISTEN}; "
        "0.0.0.0:9445 in a pod)",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="list the cluster once, print the metrics (Prometheus' text format) on stdout and exit",
    )
    fleet.add_semantics(p)
    fleet.add_kube_version(p, "the kube-scheduler modelled (default: the cluster's)")
    p.add_argument(
        "--template",
        action="append",
        default=[],
        metavar="FILE",
        help="a pod template whose headroom to serve (a Pod or a controller; a file or a directory, such as a "
        "mounted ConfigMap; repeatable)",
    )
    p.add_argument(
        "--templates-dir",
        metavar="DIR",
        help="a directory whose files are pod templates, as --template, and may be empty (a mounted ConfigMap's)",
    )
    p.add_argument(
        "--pool-label",
        default=NODE_POOL_LABEL,
        metavar="LABEL",
        help=f"the node label whose values make the pools (default {NODE_POOL_LABEL}, ACK's node pool ID)",
    )
    for flag, default, text in _INTERVALS:
        p.add_argument(
            flag, type=seconds(flag), default=default, metavar="SECONDS", help=f"{text} (default {default:g})"
        )
    add_ledger_reading(p, doctoring.SERVED, ASSUME_TIMEOUT)
    p.add_argument(
        "--ready-timeout",
        type=whole("--ready-timeout", 1, 86_400),
        default=600,
        metavar="SECONDS",
        help="with --once: give up when the first lists take longer (default 600)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="say nothing on stderr but errors")
    p.set_defaults(nodes=[], existing=[])  # the fleet is the live cluster's


def main(args: argparse.Namespace) -> int:
    listen = _listen(args.listen)
    templates = read_paths(args.template, show_progress=False) if args.template else []
    if args.template and not templates:
        raise InputError("--template", ", ".join(args.template), "files that hold a pod template (these hold none)")
    templates += _directory(args.templates_dir) if args.templates_dir else []
    serve.check_templates(templates)  # before the cluster is asked anything
    cluster = Cluster(args.kubeconfig or None, args.context)
    version = str(cluster.call(cluster.version_api.get_code).git_version)  # unreachable or refused: said, exit 2
    scheduler, notes = fleet.scheduler_profile(args.kube_version, None, version)
    semantics = replace(fleet.request_of(args).semantics, scheduler=scheduler, scheduler_name=None)
    options = serve.Options(
        debounce=args.debounce,
        heavy_every=args.heavy_every,
        doctor_every=args.doctor_every,
        pool_label=args.pool_label,
        served=tuple(args.scheduler_name or doctoring.SERVED),
        assume_timeout=args.assume_timeout,
        kube_version=version,
    )

    def say(text: str) -> None:
        if not args.quiet:
            print(f"gpushare: {text}", file=sys.stderr)

    for note in notes:
        say(f"note: {note}")
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():  # SIGTERM: a pod's normal end, served to the last
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    gc.enable()  # a long-running process: the cycles its reads leave behind are collected as it goes
    process.few_arenas()
    running = serve.start(
        cluster,
        semantics,
        templates,
        options,
        None if args.once else listen,
        resync=args.resync,
        on_error=lambda text: print(f"gpushare: warning: {text} (retrying)", file=sys.stderr),
    )
    try:
        if args.once:
            if not running.wait_ready(args.ready_timeout):
                raise ClusterError(f"the first lists took more than {args.ready_timeout} s")
            running.live.doctor_now()
            for piece in running.live.refresh(heavy=True).exposition[TEXT].pieces():
                sys.stdout.buffer.write(piece)
            return 0
        host, port = running.address
        say(f"watching {cluster.api.configuration.host} (Kubernetes {version}), read-only")
        say(f"serving http://{host}:{port}/metrics, /healthz, /readyz, /explain?pod=NS/NAME, /capacity?template=NAME")
        ready = False
        while not stop.wait(0.2):
            if not running.live.healthy():
                print("gpushare: error: the watch stopped", file=sys.stderr)
                return 1
            if not ready and running.live.ready:
                ready = True
                say(f"ready: {running.live.summary()}")
        say("stopped (SIGTERM)")
        return 0
    finally:
        running.stop()
