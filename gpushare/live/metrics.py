"""The GPU-sharing ledger as Prometheus metrics (what `gpushare watch` serves on /metrics, #49): each GPU's memory and
what its pods hold, each node's largest free block, the pending GPU pods by kube-scheduler's reason and doctor's
findings by rule.

Every metric is data (`METRICS`: name, type, labels, help); the exposition and docs/metrics.md are made from it, so
the documentation cannot drift from what is served. The numbers come from placement's simulation as `place` models
the fleet: the running pods charged by the scheduler's annotations, the pending ones asked once and rolled back.
Label cardinality is bounded: a series per GPU (node, gpu) or per node, per reason kube-scheduler gives (a fixed set
of words with node counts left out), per rule ID.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal, NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from gpushare.domain.products import MIB_PER_UNIT
from gpushare.placement import Simulation
from gpushare.policy.engine import Finding

MIB = 1 << 20


class Definition(NamedTuple):
    """One metric as Prometheus names it: type, the labels of its series, and what it means."""

    name: str
    kind: Literal["gauge"]
    labels: tuple[str, ...]
    help: str


GPU_BYTES = Definition(
    "gpushare_gpu_memory_bytes",
    "gauge",
    ("node", "gpu"),
    "GPU memory of one GPU as the extender counts it: the node's aliyun.com/gpu-mem over its aliyun.com/gpu-count",
)
GPU_ALLOCATED_BYTES = Definition(
    "gpushare_gpu_memory_allocated_bytes",
    "gauge",
    ("node", "gpu"),
    "GPU memory the pods bound to one GPU hold, by the scheduler's annotations (as place and doctor read them)",
)
GPU_UNITS = Definition(
    "gpushare_gpu_memory_units",
    "gauge",
    ("node", "gpu", "unit"),
    "GPU memory of one GPU in aliyun.com/gpu-mem units (the unit label: 1GiB, 128MiB, GiB or MiB)",
)
GPU_ALLOCATED_UNITS = Definition(
    "gpushare_gpu_memory_allocated_units",
    "gauge",
    ("node", "gpu", "unit"),
    "GPU memory the pods bound to one GPU hold, in aliyun.com/gpu-mem units",
)
LARGEST_FREE_BYTES = Definition(
    "gpushare_node_gpu_memory_largest_free_bytes",
    "gauge",
    ("node",),
    "The most GPU memory free on one healthy GPU of the node: the largest share a new pod can be given there",
)
PENDING = Definition(
    "gpushare_pending_gpu_pods",
    "gauge",
    ("reason",),
    "Pending GPU pods by the reasons kube-scheduler gives them (place's words, node counts left out): a pod counts "
    "once under each of its reasons",
)
FINDINGS = Definition(
    "gpushare_doctor_findings",
    "gauge",
    ("rule", "severity"),
    "doctor's findings on the ledger, nodes and pending pods, by rule ID",
)
METRICS: tuple[Definition, ...] = (
    GPU_BYTES,
    GPU_ALLOCATED_BYTES,
    GPU_UNITS,
    GPU_ALLOCATED_UNITS,
    LARGEST_FREE_BYTES,
    PENDING,
    FINDINGS,
)


def families(simulation: Simulation, findings: Sequence[Finding] = ()) -> list[Metric]:
    """The metrics of a fleet: its nodes as the running pods leave them, its pending pods' reasons (asked once, then
    rolled back: the ledger is what runs, not what a dry run would bind), and the findings given."""
    unit = simulation.semantics.gpu_memory_unit
    per_unit = MIB_PER_UNIT[unit] * MIB
    made = {d.name: GaugeMetricFamily(d.name, d.help, labels=d.labels) for d in METRICS}
    simulation.charge()
    for node in simulation.nodes:
        for gpu in node.gpus:
            where = [node.name, str(gpu.index)]
            made[GPU_BYTES.name].add_metric(where, gpu.total * per_unit)
            made[GPU_ALLOCATED_BYTES.name].add_metric(where, gpu.used * per_unit)
            made[GPU_UNITS.name].add_metric([*where, unit], gpu.total)
            made[GPU_ALLOCATED_UNITS.name].add_metric([*where, unit], gpu.used)
        if node.gpus:
            made[LARGEST_FREE_BYTES.name].add_metric([node.name], max(g.free for g in node.gpus) * per_unit)
    mark = simulation.mark()
    result = simulation.run(draws=False)
    simulation.rollback(mark)
    reasons = Counter(reason for p in result.pending if p.per_gpu for reason, _ in p.reasons)
    for reason, count in sorted(reasons.items()):
        made[PENDING.name].add_metric([reason], count)
    for (rule, severity), count in sorted(Counter((f.rule.id, f.rule.severity) for f in findings).items()):
        made[FINDINGS.name].add_metric([rule, severity], count)
    return [made[d.name] for d in METRICS]


class _Fixed(Collector):
    """The families of one moment, as a collector a registry serves."""

    def __init__(self, found: Iterable[Metric]) -> None:
        self.found = list(found)

    def collect(self) -> Iterator[Metric]:
        return iter(self.found)


def exposition(found: Iterable[Metric]) -> bytes:
    """Prometheus' text format of the families."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(found))
    return generate_latest(registry)


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
    return "\n".join(lines) + "\n"
