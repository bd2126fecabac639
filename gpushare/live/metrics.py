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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from gpushare.domain.labels import NODE_POOL_LABEL
from gpushare.domain.products import MIB_PER_UNIT
from gpushare.placement import PlacementResult, Simulation
from gpushare.policy.engine import Finding

if TYPE_CHECKING:
    from gpushare.planner.defrag import Fragmentation
    from gpushare.planner.headroom import Headroom

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
    findings: Sequence[Finding] = ()
    headroom: Sequence[Headroom] = ()
    #: Pending pods measured by capacity's defragmentation, and the seconds each has existed (by pod key).
    fragmentation: Sequence[Fragmentation] = ()
    ages: Mapping[str, float] = field(default_factory=dict)
    pool_label: str = NODE_POOL_LABEL
    #: The configured templates' shares of one GPU (units): what free memory below the smallest is stranded for.
    shares: Sequence[int] = ()
    health: Health | None = None


def families(moment: Moment) -> list[Metric]:
    """The metrics of one moment: the nodes as the running pods leave them, the pending pods' reasons (asked once
    and rolled back: the ledger is what runs, not what a dry run would bind), the pools, templates and findings."""
    simulation = moment.simulation
    unit = simulation.semantics.gpu_memory_unit
    per_unit = MIB_PER_UNIT[unit] * MIB
    made: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
        d.name: (CounterMetricFamily if d.kind == "counter" else GaugeMetricFamily)(
            d.name.removesuffix("_total"), d.help, labels=d.labels
        )
        for d in METRICS
    }
    smallest = min((s for s in moment.shares if s > 0), default=0)
    pools: dict[str, list[int]] = {}  # pool -> [free, stranded, free on partly used GPUs]
    for node in simulation.nodes:
        pool = pools.setdefault(node.labels.get(moment.pool_label, ""), [0, 0, 0])
        for gpu in node.gpus:
            where = [node.name, str(gpu.index)]
            made[GPU_BYTES.name].add_metric(where, gpu.total * per_unit)
            made[GPU_ALLOCATED_BYTES.name].add_metric(where, gpu.used * per_unit)
            made[GPU_UNITS.name].add_metric([*where, unit], gpu.total)
            made[GPU_ALLOCATED_UNITS.name].add_metric([*where, unit], gpu.used)
            free = max(gpu.total - gpu.used, 0) if gpu.healthy else 0
            pool[0] += free
            pool[1] += free if free < smallest else 0
            pool[2] += free if gpu.used else 0
        if node.gpus:
            made[LARGEST_FREE_BYTES.name].add_metric([node.name], max(g.free for g in node.gpus) * per_unit)
    for name, (free, stranded, partly) in sorted(pools.items()):
        if not any(n.gpus for n in simulation.nodes if n.labels.get(moment.pool_label, "") == name):
            continue
        made[POOL_FREE_BYTES.name].add_metric([name], free * per_unit)
        if smallest:
            made[POOL_STRANDED_BYTES.name].add_metric([name], stranded * per_unit)
        made[POOL_FRAGMENTATION.name].add_metric([name], partly / free if free else 0.0)
    for answer in moment.headroom:
        made[HEADROOM.name].add_metric([answer.name], answer.more)
    reasons = Counter(reason for p in moment.trial.pending if p.per_gpu for reason, _ in p.reasons)
    for reason, count in sorted(reasons.items()):
        made[PENDING.name].add_metric([reason], count)
    movable = [f for f in moment.fragmentation if f.moves]
    made[FIT_AFTER_MOVES.name].add_metric([], len(movable))
    made[FIT_AFTER_MOVES_AGE.name].add_metric([], max((moment.ages.get(f.key, 0.0) for f in movable), default=0.0))
    for (rule, severity), count in sorted(Counter((f.rule.id, f.rule.severity) for f in moment.findings).items()):
        made[FINDINGS.name].add_metric([rule, severity], count)
    health = moment.health
    if health is not None:
        for kind, count in sorted(health.events.items()):
            made[EVENTS.name].add_metric([kind], count)
        made[EVENT_RATE.name].add_metric([], health.events_per_second)
        made[LAG.name].add_metric([], health.lag)
        for kind, count in sorted(health.relists.items()):
            made[RELISTS.name].add_metric([kind], count)
        made[RESYNC.name].add_metric([], health.last_resync)
        made[REBUILDS.name].add_metric([], health.rebuilds)
        for kind, count in sorted(health.rejected.items()):
            made[REJECTED.name].add_metric([kind], count)
        made[REFRESH.name].add_metric([], health.refresh)
    return [made[d.name] for d in METRICS]


class _Fixed(Collector):
    """The families of one moment, as a collector a registry serves."""

    def __init__(self, found: Iterable[Metric]) -> None:
        self.found = list(found)

    def collect(self) -> Iterator[Metric]:
        return iter(self.found)


def _registry(found: Iterable[Metric]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(found))
    return registry


def exposition(found: Iterable[Metric]) -> bytes:
    """Prometheus' text format of the families."""
    return generate_latest(_registry(found))


def encoded(found: Iterable[Metric], accept: str) -> tuple[bytes, str]:
    """The families in the format a scraper's Accept header asks (OpenMetrics, or the text format), and its
    Content-Type."""
    encoder, content_type = choose_encoder(accept)
    return encoder(_registry(found)), content_type


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
