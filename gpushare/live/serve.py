"""`gpushare watch`'s answers, kept current and served over HTTP: /metrics (Prometheus' text format or
OpenMetrics, as the scraper asks), /healthz, /readyz, /explain?pod=NS/NAME and /capacity?template=NAME (JSON, as
`place --explain -o json` and `capacity -o json` write them). Nothing else is served, and only GET.

A refresher thread recomputes the answers after changes, at most once per `debounce` seconds: the ledger's
metrics and the pending pods' reasons each time; the templates' headroom and the pending pods that fit after moves
at most every `heavy_every` seconds; doctor's findings at most every `doctor_every` seconds, on a copy of the
objects taken under the lock and read outside it. Each answer asks the live `Simulation` through placement's API
(`trial`, the planner's `headroom_now` and `pending_now`), every change it makes rolled back. What is served is
the last refresh's: a scrape never waits on the model.
"""

from __future__ import annotations

import calendar
import functools
import io
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.exposition import ThreadingWSGIServer

from gpushare import output, process
from gpushare.domain.labels import NODE_POOL_LABEL
from gpushare.errors import InputError
from gpushare.kube.cluster import Cluster
from gpushare.kube.documents import Source
from gpushare.kube.ledger import ASSUME_TIMEOUT
from gpushare.live import doctor as doctoring
from gpushare.live.metrics import Exposition, Health, Moment, NodeLines, by_rule, encodings, figures, format_of
from gpushare.live.state import LiveState, decoded
from gpushare.live.watcher import Watcher
from gpushare.placement import Semantics, to_dict
from gpushare.planner import MAX_MOVES
from gpushare.planner.defrag import pending_now
from gpushare.planner.headroom import headroom_now, probe
from gpushare.planner.report import write as write_capacity

#: A request's socket is given this long for each read and write (a slow or idle client is let go).
REQUEST_TIMEOUT = 10


@dataclass
class Options:
    """How often each answer is recomputed, and what the doctor and the pools read."""

    debounce: float = 1.0
    heavy_every: float = 10.0
    doctor_every: float = 30.0
    pool_label: str = NODE_POOL_LABEL
    served: tuple[str, ...] = doctoring.SERVED
    assume_timeout: float = ASSUME_TIMEOUT
    kube_version: str | None = None
    max_moves: int = MAX_MOVES


@dataclass
class View:
    """What one refresh found: served until the next one."""

    #: The exposition in each format served (`gpushare.live.metrics.TEXT`, `OPENMETRICS`).
    exposition: dict[str, Exposition] = field(default_factory=dict)
    unit: str = ""
    findings: dict[tuple[str, str], int] = field(default_factory=dict)
    heavy: Heavy = field(default_factory=lambda: Heavy())
    made: float = 0.0


@dataclass
class Heavy:
    """What the heavy pass found (in a forked copy of the model): each template's headroom as `capacity -o json`
    gives it, and the pending GPU pods that fit after moves."""

    #: (Kind/namespace/name, replicas more, share of one GPU, capacity's JSON document for it as `capacity -o json`
    #: writes it, compressed: a fleet's is 4 MB of text at 5,000 nodes, 0.15 MB compressed, 6 MB parsed).
    headroom: list[tuple[str, int, int, bytes]] = field(default_factory=list)
    movable: int = 0
    oldest: float = 0.0
    #: The state's version it was computed on.
    version: int = -1


class Live:
    """The state, its watcher and the answers served; `start` keeps them current until `stop`."""

    def __init__(self, state: LiveState, watcher: Watcher | None, options: Options | None = None) -> None:
        self.state, self.watcher = state, watcher
        self.options = options or Options()
        self.view: View | None = None
        self.stopping = threading.Event()
        self._served_version = -1
        self._heavy_at = -1e9
        self._doctor_at = -1e9
        self._doctor_version = -1
        self._doctor_thread: threading.Thread | None = None
        self._heavy_thread: threading.Thread | None = None
        self._heavy = Heavy()
        self._heavy_served = self._heavy
        self._findings: dict[tuple[str, str], int] = {}
        self._findings_served: dict[tuple[str, str], int] = {}
        self._duration = 0.0
        self._lines = NodeLines()
        self.refresher: threading.Thread | None = None

    # --- refreshing ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        self.refresher = threading.Thread(target=self._refresh_loop, name="refresh", daemon=True)
        self.refresher.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.watcher is not None:
            self.watcher.stop()

    @property
    def ready(self) -> bool:
        return self.view is not None

    def healthy(self) -> bool:
        threads = [self.refresher, *(self.watcher.threads if self.watcher is not None else [])]
        return all(t is not None and t.is_alive() for t in threads)

    def _refresh_loop(self) -> None:
        while not self.stopping.is_set():
            with self.state.lock:
                due = self.state.ready and (
                    self.state.version != self._served_version
                    or self._findings is not self._findings_served
                    or self._heavy is not self._heavy_served
                    or any(self._passes_due(self.state.version, time.monotonic()))
                )
            if due:
                self.refresh()
            self.stopping.wait(self.options.debounce)

    def _passes_due(self, version: int, now: float) -> tuple[bool, bool]:
        """Whether doctor's pass and the heavy pass are due: the state changed since each last ran, its interval
        has passed, and it is not running."""
        opts = self.options
        doctor = version != self._doctor_version and now - self._doctor_at >= opts.doctor_every
        heavy = version != self._heavy.version and now - self._heavy_at >= opts.heavy_every
        return doctor and not _running(self._doctor_thread), heavy and not _running(self._heavy_thread)

    def refresh(self, *, heavy: bool = False) -> View:
        """Recompute what is served from the state as it is now: the ledger and the pending pods' reasons here,
        with the model held; the heavy answers (headroom, moves) as the last heavy pass left them, or, with `heavy`,
        from a pass run first (and waited for). A heavy pass that is due starts in the background."""
        if heavy:
            self._heavy_pass()
        started = time.monotonic()
        opts = self.options
        previous = self.view or View()
        with self.state.lock, process.paused():
            state = self.state
            if state.stale:
                state.rebuild()
            fleet = state.fleet
            if fleet is None:
                return previous
            version = state.version
            trial = fleet.trial()
            found = self._heavy
            health = self._health(started)
            health.lag = state.served(time.monotonic())
            findings = self._findings
            answers = [(name, more, share) for name, more, share, _ in found.headroom]
            moment = Moment(fleet, trial, findings, answers, found.movable, found.oldest, opts.pool_label, health)
            numbers = figures(moment, self._lines)
            self._served_version = version
            self._findings_served, self._heavy_served = findings, found
            doctor_due, heavy_due = self._passes_due(version, started)
            doctor = self._doctor_started() if doctor_due else None
        self._duration = time.monotonic() - started
        view = View(encodings(numbers), fleet.semantics.gpu_memory_unit, findings, found, time.time())
        self.view = view
        if doctor is not None:
            self._doctor_at, self._doctor_version = started, version
            self._doctor_thread = threading.Thread(target=self._doctor, args=(doctor,), daemon=True)
            self._doctor_thread.start()
        if heavy_due:
            self._heavy_at = started
            self._heavy_thread = threading.Thread(target=self._heavy_pass, daemon=True)
            self._heavy_thread.start()
        return view

    def _heavy_pass(self) -> None:
        """The templates' headroom and the pending pods' moves, asked of a forked copy of the process made with the
        model held (a consistent moment): the copy places thousands of replicas on the other core while this
        process goes on taking the cluster's events. Where no copy can be made, here, with the model held."""
        with self.state.lock:
            if self.state.fleet is None or self.state.stale:
                return
            version = self.state.version
            answers = _in_a_copy(self._heavy_answers)
        found = answers()
        if found is not None:
            self._heavy = _heavy_of(found, version)

    def _heavy_answers(self, out: IO[bytes]) -> int:
        with process.paused():  # the collector would walk the whole model again and again as the replicas are made
            return self._heavy_written(out)

    def _heavy_written(self, out: IO[bytes]) -> int:
        state, opts = self.state, self.options
        fleet = state.fleet
        assert fleet is not None
        unit = fleet.semantics.gpu_memory_unit
        headroom = []
        for template, replica in zip(state.templates, fleet.templates, strict=True):
            answer = headroom_now(fleet, template, replica)
            text = io.StringIO()
            write_capacity([answer], [], None, None, unit, "json", text)
            doc = zlib.compress(text.getvalue().encode(), 1)
            headroom.append(([answer.name, answer.more, answer.per_gpu, len(doc)], doc))
        movable = {f.key for f in pending_now(fleet, state.running(), opts.max_moves) if f.moves}
        now = time.time()
        ages = [_age(p.created, now) for p in fleet.pending if p.key in movable]
        found = {"headroom": [h for h, _ in headroom], "movable": len(movable), "oldest": max(ages, default=0.0)}
        out.write(json.dumps(found).encode() + b"\n")  # then each template's document as it is (`_heavy_of`)
        for _, doc in headroom:
            out.write(doc)
        return 0

    def doctor_now(self) -> None:
        """doctor's findings on the objects as they are, in this thread (served from the next refresh on)."""
        with self.state.lock:
            doctor = self._doctor_started()
        self._doctor(doctor)

    def summary(self) -> str:
        """What the model holds, in words."""
        with self.state.lock:
            fleet = self.state.fleet
            if fleet is None:
                return "no model"
            gpus = sum(len(n.gpus) for n in fleet.nodes)
            running = sum(1 for p in self.state.pods.values() if p.node is not None)
            pending = len(fleet.pending)
            skipped = "; ".join(f"{kind}s not read: {why}" for kind, why in sorted(self.state.skipped.items()))
        said = f"{len(fleet.nodes)} nodes ({gpus} GPUs), {running} running pods, {pending} pending"
        return f"{said}; {skipped}" if skipped else said

    def _doctor_started(self) -> Callable[[], bytes | None]:
        """doctor's pass started on the objects as they are (with the lock held), in a forked copy of this process
        where one can be made: reading a fleet's pods whole as doctor does costs far more memory than the model
        (about 1.2 GiB at 150,000 pods, benchmarks/watch.py), which the copy gives back when it exits, and the copy
        reads the objects where they are (a list of 150,000 of them made here was 11 MB more at the watch's peak).
        Where no copy can be made, on a list of them taken now, run when the answer is asked (outside the lock)."""
        state = self.state
        return _in_a_copy(
            lambda out: self._doctor_pass(state.held(), out),
            later=lambda: functools.partial(self._doctor_pass, state.held()),
        )

    def _doctor(self, answer: Callable[[], bytes | None]) -> None:
        """doctor's findings counted by rule, once its pass answers: served from the next refresh on."""
        found = answer()
        if found is not None:
            self._findings = _counts(found)

    def _doctor_pass(self, held: list[tuple[int, str, bytes]], out: IO[bytes]) -> int:
        opts = self.options
        with process.paused():
            report = doctoring.doctor(
                list(decoded(held)),
                kube_version=opts.kube_version,
                served=opts.served,
                assume_timeout=opts.assume_timeout,
                semantics=self.state.semantics.name,
            )
        counted = [[rule, severity, n] for (rule, severity), n in by_rule(report.findings).items()]
        out.write(json.dumps(counted).encode())
        return 0

    def _health(self, started: float) -> Health:
        state, watcher = self.state, self.watcher
        counts = state.counts
        rejected: dict[str, int] = {}
        for kind, _ in state.rejected:
            rejected[kind] = rejected.get(kind, 0) + 1
        return Health(
            events=dict(counts.events),
            events_per_second=watcher.events_per_second(started) if watcher is not None else 0.0,
            relists=dict(counts.relists),
            last_resync=counts.last_resync,
            rebuilds=counts.rebuilds,
            rejected=rejected,
            refresh=self._duration,
        )

    # --- answers -------------------------------------------------------------------------------------------------

    def explain(self, key: str) -> dict[str, Any] | None:
        """One pod as `place --explain -o json` reports it, on the state as it is: a pending pod's placement or
        reasons (per node), a running pod's node and GPUs. None: no such pod."""
        with self.state.lock:
            fleet = self.state.fleet
            pod = self.state.pods.find(key)
            if fleet is None or pod is None:
                return None
            if pod.node is not None:
                node = fleet.node(pod.node) if fleet.has_node(pod.node) else None
                held = [] if node is None else _devices(node, key)
                return {
                    "namespace": pod.namespace,
                    "name": pod.name,
                    "running": {"node": pod.node, "gpus": held, "modelled": node is not None},
                }
            doc = to_dict(fleet.trial(explain=True))
        for section in ("placements", "pending", "preempted", "invalid", "notServed"):
            doc[section] = [e for e in doc.get(section, []) if f"{e.get('namespace')}/{e.get('name')}" == key]
        for whole in ("summary", "nodes", "warnings", "findings"):  # the fleet's (doctor's are on /metrics)
            doc.pop(whole, None)
        return doc

    def capacity(self, name: str) -> bytes | None:
        """One configured template's headroom as `capacity -o json` writes it (the last heavy pass's)."""
        view = self.view
        if view is None:
            return None
        found = [doc for label, _, _, doc in view.heavy.headroom if name in _names(label)]
        return zlib.decompress(found[0]) if len(found) == 1 else None

    def templates(self) -> list[str]:
        return [label for label, _, _, _ in (self.view.heavy.headroom if self.view is not None else [])]


def _devices(node: Any, key: str) -> list[dict[str, int]]:
    for pod, gpus in zip(node.bound, node.held, strict=True):
        if pod.key == key:
            return [{"index": g.index, "units": pod.per_gpu} for g in gpus]
    return []


def _names(label: str) -> tuple[str, str, str]:
    """What a template may be asked by: Kind/namespace/name, namespace/name, name."""
    return label, label.split("/", 1)[1], label.rsplit("/", 1)[1]


def _in_a_copy(
    work: Callable[[IO[bytes]], int], later: Callable[[], Callable[[IO[bytes]], int]] | None = None
) -> Callable[[], bytes | None]:
    """`work` started in a forked copy of the process (it writes its answer to the file it is given), and how to
    wait for that answer (None: the copy failed). Where no copy can be made, `work` runs here, now; or, given
    `later`, what it makes now runs when the answer is asked."""
    child = process.Child.start(work)
    if child is None:
        buffer = io.BytesIO()
        deferred = later() if later is not None else None
        if deferred is None:
            work(buffer)
            return lambda: buffer.getvalue()

        def run() -> bytes:
            deferred(buffer)
            return buffer.getvalue()

        return run

    def answer() -> bytes | None:
        try:
            if child.exit_code() != 0:
                return None
            child.output.seek(0)
            return child.output.read()
        finally:
            child.close()

    return answer


def _running(thread: threading.Thread | None) -> bool:
    return thread is not None and thread.is_alive()


def _heavy_of(data: bytes, version: int) -> Heavy:
    """The heavy pass's answer: a line of JSON, then each template's document, compressed (`Heavy.headroom`)."""
    line, _, docs = data.partition(b"\n")
    found = json.loads(line)
    headroom, at = [], 0
    for name, more, share, size in found["headroom"]:
        headroom.append((str(name), int(more), int(share), docs[at : at + int(size)]))
        at += int(size)
    return Heavy(headroom, int(found["movable"]), float(found["oldest"]), version)


def _counts(data: bytes) -> dict[tuple[str, str], int]:
    return {(str(rule), str(severity)): int(n) for rule, severity, n in json.loads(data)}


def _age(created: str, now: float) -> float:
    """Seconds since a creationTimestamp (0 if it cannot be read)."""
    try:
        return max(0.0, now - calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


# --- HTTP ------------------------------------------------------------------------------------------------------------


class _Quiet(WSGIRequestHandler):
    """No access log on stderr, and a timeout on each connection's reads and writes."""

    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        return


Start = Callable[[str, list[tuple[str, str]]], Any]


def app(live: Live) -> Callable[[dict[str, Any], Start], Iterator[bytes]]:
    """The WSGI application: the five paths, GET (and HEAD) only."""

    def respond(environ: dict[str, Any], start: Start) -> Iterator[bytes]:
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        if path not in _PATHS:
            return _reply(start, "404 Not Found", b"not found: /metrics, /healthz, /readyz, /explain, /capacity\n")
        if method not in ("GET", "HEAD"):
            return _reply(start, "405 Method Not Allowed", b"GET only\n", [("Allow", "GET, HEAD")])
        if path == "/healthz":
            ok = live.healthy()
            return _reply(start, "200 OK" if ok else "500 Internal Server Error", b"ok\n" if ok else b"stopped\n")
        if path == "/readyz":
            ok = live.ready
            return _reply(start, "200 OK" if ok else "503 Service Unavailable", b"ok\n" if ok else b"listing\n")
        view = live.view
        if view is None:
            return _reply(start, "503 Service Unavailable", b"not ready: the first list is not done\n")
        if path == "/metrics":
            served = view.exposition[format_of(environ.get("HTTP_ACCEPT", ""))]
            start("200 OK", [("Content-Type", served.content_type), ("Content-Length", str(served.size))])
            return served.pieces()
        if path == "/explain":
            key = (query.get("pod") or [""])[0]
            if "/" not in key:
                return _json(start, "400 Bad Request", {"error": "pod: expected NAMESPACE/NAME", "value": key})
            doc = live.explain(key)
            if doc is None:
                return _json(start, "404 Not Found", {"error": f"no pod {key} in the cluster's model"})
            return _json(start, "200 OK", doc)
        name = (query.get("template") or [""])[0]
        text = live.capacity(name)
        if text is None:
            return _json(start, "404 Not Found", {"error": f"no template {name!r}", "templates": live.templates()})
        return _reply(start, "200 OK", text, [("Content-Type", "application/json")])

    return respond


_PATHS = ("/metrics", "/healthz", "/readyz", "/explain", "/capacity")


def _reply(start: Start, status: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> Iterator[bytes]:
    given = headers or [("Content-Type", "text/plain; charset=utf-8")]
    start(status, [*given, ("Content-Length", str(len(body)))])
    return iter([body])


def _json(start: Start, status: str, doc: dict[str, Any]) -> Iterator[bytes]:
    return _reply(start, status, (output.dumps(doc) + "\n").encode(), [("Content-Type", "application/json")])


def server(live: Live, host: str, port: int) -> WSGIServer:
    """The HTTP server (a thread per request, each with its timeout), not yet serving: `serve_forever` it."""
    made: WSGIServer = make_server(host, port, app(live), ThreadingWSGIServer, handler_class=_Quiet)
    return made


@dataclass
class Running:
    """A watch under way: its answers, and the HTTP server serving them (None: not served)."""

    live: Live
    httpd: WSGIServer | None = None

    @property
    def address(self) -> tuple[str, int]:
        assert self.httpd is not None
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def stop(self) -> None:
        """Stop serving, watching and refreshing (each thread ends at once or within a second)."""
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        self.live.stop()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the first answers are made (the first lists done), at most `timeout` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and not self.live.ready and self.live.healthy():
            time.sleep(0.05)
        return self.live.ready


def check_templates(templates: Sequence[Source]) -> None:
    """Refuse, as `capacity --template` does (InputError), a template that is no template or never runs."""
    for template in templates:
        probe(template)


def start(
    cluster: Cluster,
    semantics: Semantics,
    templates: list[Source],
    options: Options | None = None,
    listen: tuple[str, int] | None = None,
    *,
    resync: float = 600.0,
    on_error: Callable[[str], None] = lambda _: None,
) -> Running:
    """Watch `cluster` (read-only) into a model under `semantics`, count `templates`' headroom, and serve the answers
    on `listen` (host, port; port 0 picks a free one; None: not served). Returns at once: `wait_ready`, `stop`."""
    check_templates(templates)
    state = LiveState(semantics, templates)
    watcher = Watcher(cluster, state, resync=resync, on_error=on_error)
    live = Live(state, watcher, options)
    httpd = None
    if listen is not None:  # a port taken is said before anything starts
        try:
            httpd = server(live, *listen)
        except OSError as exc:
            raise InputError(
                "--listen", f"{listen[0]}:{listen[1]}", f"an address free to listen on ({exc.strerror})"
            ) from None
    watcher.start()
    live.start()
    running = Running(live, httpd)
    if httpd is not None:
        threading.Thread(target=httpd.serve_forever, name="http", daemon=True).start()
    return running


def watch(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    semantics: Semantics | None = None,
    templates: Sequence[Source] = (),
    listen: tuple[str, int] | None = None,
    options: Options | None = None,
) -> Running:
    """`gpushare watch` from Python: the cluster of `kubeconfig` (the default one, or the pod's ServiceAccount)
    watched, read-only, and its answers kept current (`Running.live.view`: the exposition; `.explain`, `.capacity`),
    served on `listen` if given. `wait_ready` for the first answers, `stop` to end it."""
    return start(Cluster(kubeconfig, context), semantics or Semantics(), list(templates), options, listen)
