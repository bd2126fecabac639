"""The GPU-sharing ledger as Prometheus metrics (what `gpushare watch` serves on /metrics): each GPU's memory and
what its pods hold, each node's largest free block, each pool's free, stranded and fragmented memory, each
template's headroom, the pending GPU pods by kube-scheduler's reason and those a few moves would fit, doctor's
findings by rule, and the watcher's own health.

Every metric is data (`METRICS`: name, type, labels, help); the exposition and docs/metrics.md are made from it, so
the documentation cannot drift from what is served. The numbers come from placement's simulation as `place` models
the fleet: the running pods charged by the scheduler's annotations, the pending ones asked once and rolled back.
Label cardinality is bounded (`CARDINALITY`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from gpushare.domain.labels import NODE_POOL_LABEL
from gpushare.domain.products import MIB_PER_UNIT
from gpushare.live.packing import Packer
from gpushare.placement import Node, PlacementResult, Simulation
from gpushare.policy.engine import Finding

MIB = 1 << 20


class Definition(NamedTuple):
    """One metric as Prometheus names it: type, the labels of its series, and what it means."""

    name: str
    kind: Literal["gauge", "counter"]
    labels: tuple[str, ...]
    help: str


def _gauge(name: str, labels: tuple[str, ...], text: str) -> Definition:
    return Definition(name, "gauge", labels, text)


GPU_BYTES = _gauge(
    "gpushare_gpu_memory_bytes",
    ("node", "gpu"),
    "GPU memory of one GPU as the extender counts it: the node's aliyun.com/gpu-mem over its aliyun.com/gpu-count",
)
GPU_ALLOCATED_BYTES = _gauge(
    "gpushare_gpu_memory_allocated_bytes",
    ("node", "gpu"),
    "GPU memory the pods bound to one GPU hold, by the scheduler's annotations (as place and doctor read them)",
)
GPU_UNITS = _gauge(
    "gpushare_gpu_memory_units",
    ("node", "gpu", "unit"),
    "GPU memory of one GPU in aliyun.com/gpu-mem units (the unit label: 1GiB, 128MiB, GiB or MiB)",
)
GPU_ALLOCATED_UNITS = _gauge(
    "gpushare_gpu_memory_allocated_units",
    ("node", "gpu", "unit"),
    "GPU memory the pods bound to one GPU hold, in aliyun.com/gpu-mem units",
)
LARGEST_FREE_BYTES = _gauge(
    "gpushare_node_gpu_memory_largest_free_bytes",
    ("node",),
    "The most GPU memory free on one healthy GPU of the node: the largest share a new pod can be given there",
)
POOL_FREE_BYTES = _gauge(
    "gpushare_pool_gpu_memory_free_bytes",
    ("pool",),
    'GPU memory free on the healthy GPUs of a pool (the nodes sharing one value of the pool label; "" without it)',
)
POOL_STRANDED_BYTES = _gauge(
    "gpushare_pool_gpu_memory_stranded_bytes",
    ("pool",),
    "Free GPU memory of a pool that no configured template can use: on each healthy GPU, what is free when it is "
    "less than the smallest template's share of one GPU (served with templates only)",
)
POOL_FRAGMENTATION = _gauge(
    "gpushare_pool_gpu_fragmentation_ratio",
    ("pool",),
    "The share of a pool's free GPU memory that lies on GPUs partly allocated rather than on whole free GPUs "
    "(0: every free byte is on an empty GPU; 1: none is); 0 without free memory",
)
HEADROOM = _gauge(
    "gpushare_template_headroom_replicas",
    ("template",),
    "How many more replicas of a configured template schedule now, after the pending pods (capacity's answer; "
    "template: Kind/namespace/name)",
)
PENDING = _gauge(
    "gpushare_pending_gpu_pods",
    ("reason",),
    "Pending GPU pods by the reasons kube-scheduler gives them (place's words, node counts left out): a pod counts "
    "once under each of its reasons",
)
FIT_AFTER_MOVES = _gauge(
    "gpushare_pending_gpu_pods_fit_after_moves",
    (),
    "Pending GPU pods that would fit after moving running pods (fragmentation: capacity's moves exist for them)",
)
FIT_AFTER_MOVES_AGE = _gauge(
    "gpushare_pending_gpu_pods_fit_after_moves_oldest_seconds",
    (),
    "How long the oldest pending GPU pod that would fit after moves has existed (its creationTimestamp); 0: none",
)
FINDINGS = _gauge(
    "gpushare_doctor_findings",
    ("rule", "severity"),
    "doctor's findings on the ledger, nodes and pending pods, by rule ID",
)
EVENTS = Definition(
    "gpushare_watch_events_total",
    "counter",
    ("kind",),
    "Watch events received, by the kind of object (rate() of it: events per second)",
)
EVENT_RATE = _gauge(
    "gpushare_watch_events_per_second", (), "Watch events received per second over the last ten seconds"
)
LAG = _gauge(
    "gpushare_watch_lag_seconds",
    (),
    "How old the oldest change in the last refresh was when its metrics were served: from the event's arrival to "
    "the model and metrics holding it",
)
RELISTS = Definition(
    "gpushare_watch_relists_total",
    "counter",
    ("kind",),
    "Lists made again after a watch expired (410 Gone) or broke, by kind (the periodic resyncs not counted)",
)
RESYNC = _gauge(
    "gpushare_watch_last_resync_timestamp_seconds",
    (),
    "When every kind was last listed whole again and compared with the model (Unix time; the first list counts)",
)
REBUILDS = Definition(
    "gpushare_watch_model_rebuilds_total",
    "counter",
    (),
    "Times the model was made afresh from the objects held (the first time, and after a change of a kind it does not "
    "follow event by event: controllers, Services, Namespaces, quotas, PriorityClasses, budgets, ConfigMaps)",
)
REJECTED = _gauge(
    "gpushare_watch_rejected_objects",
    ("kind",),
    "Objects left out of the model because they cannot be read (a Node's unreadable quantity), by kind",
)
REFRESH = _gauge(
    "gpushare_watch_refresh_duration_seconds", (), "How long the last refresh of the metrics took (model held)"
)
METRICS: tuple[Definition, ...] = (
    GPU_BYTES,
    GPU_ALLOCATED_BYTES,
    GPU_UNITS,
    GPU_ALLOCATED_UNITS,
    LARGEST_FREE_BYTES,
    POOL_FREE_BYTES,
    POOL_STRANDED_BYTES,
    POOL_FRAGMENTATION,
    HEADROOM,
    PENDING,
    FIT_AFTER_MOVES,
    FIT_AFTER_MOVES_AGE,
    FINDINGS,
    EVENTS,
    EVENT_RATE,
    LAG,
    RELISTS,
    RESYNC,
    REBUILDS,
    REJECTED,
    REFRESH,
)


@dataclass
class Health:
    """The watcher's own numbers at one refresh."""

    events: Mapping[str, int] = field(default_factory=dict)
    events_per_second: float = 0.0
    lag: float = 0.0
    relists: Mapping[str, int] = field(default_factory=dict)
    last_resync: float = 0.0
    rebuilds: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)
    refresh: float = 0.0


@dataclass
class Moment:
    """What one look at the fleet found: the simulation as its running pods leave it (charged), its pending pods
    asked once (`Simulation.trial`), and what the other answers said of the same state."""

    simulation: Simulation
    trial: PlacementResult
    #: doctor's findings counted by (rule ID, severity) (`by_rule`).
    findings: Mapping[tuple[str, str], int] = field(default_factory=dict)
    #: Each template's headroom (`capacity`'s answer): (Kind/namespace/name, replicas more, share of one GPU).
    headroom: Sequence[tuple[str, int, int]] = ()
    #: Pending GPU pods that fit after moves (capacity's defragmentation), and how long the oldest has existed.
    movable: int = 0
    oldest: float = 0.0
    pool_label: str = NODE_POOL_LABEL
    health: Health | None = None


def by_rule(findings: Iterable[Finding]) -> dict[tuple[str, str], int]:
    """Findings counted by (rule ID, severity): what the metrics serve of them."""
    return dict(Counter((f.rule.id, f.rule.severity) for f in findings))


@dataclass
class Figures:
    """A moment's numbers, compact (no model held): what the families are made of, outside the model's lock and
    one family at a time, so a fleet of 40,000 GPUs never holds its 160,000 samples at once."""

    unit: str
    #: (node, GPU index, total, used), in units.
    gpus: list[tuple[str, int, int, int]]
    #: (node, the most free on one of its GPUs), in units.
    largest: list[tuple[str, int]]
    #: (pool, free, stranded or -1 without templates, free on partly used GPUs), in units.
    pools: list[tuple[str, int, int, int]]
    headroom: list[tuple[str, int]]
    reasons: list[tuple[str, int]]
    movable: int
    oldest: float
    findings: list[tuple[str, str, int]]
    health: Health | None
    #: The PER_NODE families' sample lines, per family each node's (`NodeLines`); empty: made from `gpus`.
    lines: tuple[Lines, ...] = ()


#: The families with a series per GPU or per GPU node: most of the exposition, kept per node (`NodeLines`).
PER_NODE = (GPU_BYTES, GPU_ALLOCATED_BYTES, GPU_UNITS, GPU_ALLOCATED_UNITS, LARGEST_FREE_BYTES)
#: Each PER_NODE family's lines packed against its first node's: 12 MB of text at 5,000 nodes keep in 2.
_PACKERS = tuple(Packer() for _ in PER_NODE)


@dataclass(frozen=True)
class Lines:
    """One PER_NODE family's sample lines, each GPU node's packed by `packer`, and their size unpacked."""

    packer: Packer
    packed: tuple[bytes, ...]
    size: int


class NodeLines:
    """Each GPU node's sample lines of the PER_NODE families, as prometheus_client's text format writes them (the
    same in OpenMetrics for gauges), kept (packed) while the node is the same object with the same count of changes:
    a refresh formats only the nodes whose pods changed, not the fleet's 160,000 samples."""

    def __init__(self) -> None:
        #: node name -> (the node, its count of changes, per family its lines packed, and their sizes).
        self.kept: dict[str, tuple[Node, int, tuple[bytes, ...], tuple[int, ...]]] = {}

    def of(self, nodes: Sequence[Node], unit: str) -> tuple[Lines, ...]:
        """Per PER_NODE family, each GPU node's lines: the kept ones themselves, never joined into a copy."""
        kept: dict[str, tuple[Node, int, tuple[bytes, ...], tuple[int, ...]]] = {}
        chunks: list[list[bytes]] = [[] for _ in PER_NODE]
        sizes = [0] * len(PER_NODE)
        for node in nodes:
            if not node.gpus:
                continue
            found = self.kept.get(node.name)
            if found is None or found[0] is not node or found[1] != node.changes:
                made = _node_lines(node, unit)
                packed = tuple(packer.pack(lines) for packer, lines in zip(_PACKERS, made, strict=True))
                found = (node, node.changes, packed, tuple(len(lines) for lines in made))
            kept[node.name] = found
            for family, (chunk, size) in enumerate(zip(found[2], found[3], strict=True)):
                chunks[family].append(chunk)
                sizes[family] += size
        self.kept = kept
        return tuple(Lines(p, tuple(c), n) for p, c, n in zip(_PACKERS, chunks, sizes, strict=True))


def _node_lines(node: Node, unit: str) -> tuple[bytes, ...]:
    """One node's lines of each PER_NODE family, by prometheus_client's own text format (its headers cut)."""
    rows = [(node.name, g.index, g.total, g.used) for g in node.gpus]
    found = Figures(unit, rows, [(node.name, max(g.free for g in node.gpus))], [], [], [], 0, 0.0, [], None)
    made = []
    for family in iter_families(found, PER_NODE):
        text = generate_latest(_registry([family]))
        made.append(b"".join(line + b"\n" for line in text.splitlines() if line and not line.startswith(b"#")))
    return tuple(made)


def figures(moment: Moment, lines: NodeLines | None = None) -> Figures:
    """The moment's numbers, read off the model (with the model held); with `lines`, the PER_NODE families' lines
    instead of their rows (`gpus`, `largest`: 40,000 tuples at 5,000 nodes, made at the watch's peak), formatted for
    the nodes that changed since `lines` last saw them."""
    simulation = moment.simulation
    rows = lines is None
    smallest = min((share for _, _, share in moment.headroom if share > 0), default=0)
    pools: dict[str, list[int]] = {}  # pool -> [free, stranded, free on partly used GPUs]
    gpus: list[tuple[str, int, int, int]] = []
    largest: list[tuple[str, int]] = []
    for node in simulation.nodes:
        if not node.gpus:
            continue
        pool = pools.setdefault(node.labels.get(moment.pool_label, ""), [0, 0, 0])
        for gpu in node.gpus:
            if rows:
                gpus.append((node.name, gpu.index, gpu.total, gpu.used))
            free = max(gpu.total - gpu.used, 0) if gpu.healthy else 0
            pool[0] += free
            pool[1] += free if free < smallest else 0
            pool[2] += free if gpu.used else 0
        if rows:
            largest.append((node.name, max(g.free for g in node.gpus)))
    reasons = Counter(reason for p in moment.trial.pending if p.per_gpu for reason, _ in p.reasons)
    return Figures(
        simulation.semantics.gpu_memory_unit,
        gpus,
        largest,
        [
            (name, free, stranded if smallest else -1, partly)
            for name, (free, stranded, partly) in sorted(pools.items())
        ],
        [(name, more) for name, more, _ in moment.headroom],
        sorted(reasons.items()),
        moment.movable,
        moment.oldest,
        [(rule, severity, count) for (rule, severity), count in sorted(moment.findings.items())],
        moment.health,
        lines.of(simulation.nodes, simulation.semantics.gpu_memory_unit) if lines is not None else (),
    )


def _family(d: Definition) -> GaugeMetricFamily | CounterMetricFamily:
    kind = CounterMetricFamily if d.kind == "counter" else GaugeMetricFamily
    return kind(d.name.removesuffix("_total"), d.help, labels=d.labels)


def iter_families(found: Figures, only: Sequence[Definition] = METRICS) -> Iterator[Metric]:
    """The families of a moment's numbers (`only` those), in `METRICS`' order, each made as it is asked for."""
    per_unit = MIB_PER_UNIT[found.unit] * MIB
    for d in only:
        family = _family(d)
        add = family.add_metric
        if d is GPU_BYTES or d is GPU_ALLOCATED_BYTES:
            for node, index, total, used in found.gpus:
                add([node, str(index)], (total if d is GPU_BYTES else used) * per_unit)
        elif d is GPU_UNITS or d is GPU_ALLOCATED_UNITS:
            for node, index, total, used in found.gpus:
                add([node, str(index), found.unit], total if d is GPU_UNITS else used)
        elif d is LARGEST_FREE_BYTES:
            for name, free in found.largest:
                add([name], free * per_unit)
        elif d is POOL_FREE_BYTES or d is POOL_STRANDED_BYTES or d is POOL_FRAGMENTATION:
            for name, free, stranded, partly in found.pools:
                if d is POOL_FREE_BYTES:
                    add([name], free * per_unit)
                elif d is POOL_FRAGMENTATION:
                    add([name], partly / free if free else 0.0)
                elif stranded >= 0:
                    add([name], stranded * per_unit)
        elif d is HEADROOM:
            for name, more in found.headroom:
                add([name], more)
        elif d is PENDING:
            for reason, count in found.reasons:
                add([reason], count)
        elif d is FIT_AFTER_MOVES:
            add([], found.movable)
        elif d is FIT_AFTER_MOVES_AGE:
            add([], found.oldest)
        elif d is FINDINGS:
            for rule, severity, count in found.findings:
                add([rule, severity], count)
        elif found.health is not None:
            _health(d, found.health, add)
        yield family


def _health(d: Definition, health: Health, add: Callable[..., None]) -> None:
    """The watcher's own series of family `d`."""
    counts = {EVENTS.name: health.events, RELISTS.name: health.relists, REJECTED.name: health.rejected}.get(d.name)
    if counts is not None:
        for kind, count in sorted(counts.items()):
            add([kind], count)
        return
    value = {
        EVENT_RATE.name: health.events_per_second,
        LAG.name: health.lag,
        RESYNC.name: health.last_resync,
        REBUILDS.name: health.rebuilds,
        REFRESH.name: health.refresh,
    }[d.name]
    add([], value)


def families(moment: Moment) -> list[Metric]:
    """The metrics of one moment: the nodes as the running pods leave them, the pending pods' reasons (asked once
    and rolled back: the ledger is what runs, not what a dry run would bind), the pools, templates and findings."""
    return list(iter_families(figures(moment)))


class _Fixed(Collector):
    """Families as a collector a registry serves: a list, or made anew at each collect (`Figures`)."""

    def __init__(self, found: Iterable[Metric] | Callable[[], Iterator[Metric]]) -> None:
        self.found = found

    def collect(self) -> Iterator[Metric]:
        return self.found() if callable(self.found) else iter(self.found)


def _registry(found: Iterable[Metric]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(found))
    return registry


def exposition(found: Iterable[Metric]) -> bytes:
    """Prometheus' text format of the families."""
    return generate_latest(_registry(found))


#: The Accept headers of the two formats served: Prometheus' text format, and OpenMetrics.
TEXT, OPENMETRICS = "text/plain", "application/openmetrics-text; version=1.0.0"


@dataclass(frozen=True)
class Exposition:
    """One format's exposition as the pieces it is made of, each node's lines those `NodeLines` keeps packed
    (shared by both formats and by the refreshes while the node is unchanged): served piece by piece, unpacked as
    written, never joined whole, so a fleet's exposition is held once, packed, not once per format and again joined
    (tens of MB at 5,000 nodes)."""

    parts: tuple[bytes | Lines, ...]
    content_type: str

    @property
    def size(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p.size for p in self.parts)

    def body(self) -> bytes:
        return b"".join(self.pieces())

    def pieces(self, size: int = 1 << 16) -> Iterator[bytes]:
        """The parts, unpacked, gathered into writes of about `size` bytes (one per node's lines would be a system
        call each)."""
        batch: list[bytes] = []
        held = 0
        for part in self.parts:
            for chunk in (part,) if isinstance(part, bytes) else map(part.packer.unpack, part.packed):
                batch.append(chunk)
                held += len(chunk)
                if held >= size:
                    yield b"".join(batch)
                    batch, held = [], 0
        if batch:
            yield b"".join(batch)


def encodings(found: Figures) -> dict[str, Exposition]:
    """A moment's exposition in both formats (TEXT, OPENMETRICS): the PER_NODE families from the lines kept per
    node (their headers by prometheus_client), the others made family by family."""
    rest = [d for d in METRICS if d not in PER_NODE] if found.lines else list(METRICS)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(lambda: iter_families(found, rest)))
    made = {}
    for accept in (TEXT, OPENMETRICS):
        encoder, content_type = choose_encoder(accept)
        head: list[bytes | Lines] = []
        if found.lines:
            empty = CollectorRegistry(auto_describe=False)
            empty.register(_Fixed([_family(d) for d in PER_NODE]))
            headers = [h for h in generate_latest(empty).split(b"# HELP ") if h]  # each family's two lines
            for header, lines in zip(headers, found.lines, strict=True):
                head += (b"# HELP " + header, lines)
        made[accept] = Exposition((*head, encoder(registry)), content_type)
    return made


def format_of(accept: str) -> str:
    """Which of the formats served a scraper's Accept header asks (prometheus_client's choice)."""
    _, content_type = choose_encoder(accept)
    return OPENMETRICS if content_type.startswith("application/openmetrics-text") else TEXT


#: What bounds each label's values, as docs/metrics.md says it.
CARDINALITY: dict[str, str] = {
    "node, gpu": "one series per GPU (nodes x their aliyun.com/gpu-count), or per GPU node",
    "unit": "one value: the --gpu-memory-unit",
    "pool": "one per value of the pool label (--pool-label) on GPU nodes",
    "template": "one per configured template (--template, --templates-configmap)",
    "reason": "kube-scheduler's reasons with their node counts left out: a fixed set of words",
    "rule, severity": "doctor's rule IDs (gpushare rules): at most a few dozen",
    "kind": "the kinds watched: at most 12",
}


def reference() -> str:
    """docs/metrics.md: every metric, its type, labels and meaning (written by tests/regenerate.py)."""
    lines = [
        "# Metrics",
        "",
        "What `gpushare watch` serves on `/metrics` (generated from `gpushare/live/metrics.py`; a test keeps them in",
        "sync). Bytes are the units times the unit's size; a GPU's series carry `node` and `gpu` (its index).",
        "",
        "| metric | type | labels | meaning |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{d.name}` | {d.kind} | {', '.join(d.labels)} | {d.help} |" for d in METRICS]
    lines += ["", "## Label cardinality", "", "| labels | values |", "|---|---|"]
    lines += [f"| {labels} | {bound} |" for labels, bound in CARDINALITY.items()]
    return "\n".join(lines) + "\n"
