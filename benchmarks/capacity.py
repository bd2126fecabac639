"""Planner speed: headroom of one template on a full fleet.

Fleet: benchmarks/placement.py's nodes of 8 GPUs x 80 GiB (upstream semantics, GiB units), filled by placing its
Deployments first; what landed becomes the running pods (bound, with the extender's annotations), and
`gpushare.planner.headroom` then asks how many more replicas of a 10 GiB template fit. Prints the seconds after
reading (building the model, charging the running pods and placing the replicas), the model's build within it and what
follows it, and the answer, at 1k-16k GPUs.
Target (#35): <= 2 s at 16k GPUs (2,048 nodes, ~100k running pods).

Then the defragmentation answers: the same fleet with every third running pod deleted but those holding a whole
GPU (memory left in pieces on most GPUs), and pods asking 48 GiB, more than most pieces: as many as fit and 500
more, left pending (`gpushare.planner.defrag.defragment`: the fleet placed, each pending pod's fewest moves, the
plan for them all, and its replay from the inputs). Prints the seconds after reading, the pods that fit after
moves and the plan's length. Target (#35): <= 10 s at 2k nodes, 500 pending.

Then node-pool sizing: the full fleet, 10,000 more pods pending (the Deployments' mix of sizes, a new seed) and three
pools (8 x 80 GiB at cost 8, 4 x 24 GiB at cost 3, 1 x 24 GiB at cost 1), answered as `gpushare capacity` answers
(`gpushare.planner.size_all`: each pool's fewest nodes, searched over replays and shown minimal, then the cheapest
mix). Prints each pool's answer, the mix, and the seconds after reading, as the command runs (the pools and the
mix's search shared out over this machine's cores) and on one core. Target (#35): <= 5 s for 10k pending over 3
pools.
Usage: python benchmarks/capacity.py [--quick] [--only headroom|defrag|sizing]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from placement import GIB_PER_GPU, SEARCHED, deployments, fleet

from gpushare.domain import labels
from gpushare.domain.products import SECONDARY_SCHEDULER_NAME
from gpushare.kube.documents import Source
from gpushare.placement import Simulation, engine_build
from gpushare.planner.defrag import defragment
from gpushare.planner.headroom import headroom_of
from gpushare.planner.pools import Fleet, read_pool, size_all


def running(nodes: list[Source], pods: int) -> list[Source]:
    """The pods a first placement bound, as a cluster would list them: bound, annotated by the extender."""
    result = Simulation.from_sources(nodes, [], deployments(pods, ack=False), SEARCHED).run()
    bound = []
    for a in result.placements:
        ((index, units),) = a.gpus
        limits = {"aliyun.com/gpu-mem": units}
        bound.append(
            Source(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": a.name,
                        "namespace": a.namespace,
                        "annotations": {labels.ANN_IDX: str(index), labels.ANN_POD_MEM: str(units)},
                    },
                    "spec": {
                        "nodeName": a.node,
                        "schedulerName": SECONDARY_SCHEDULER_NAME,
                        "containers": [{"name": "c", "resources": {"limits": limits}}],
                    },
                    "status": {"phase": "Running"},
                },
                "bench",
            )
        )
    return bound


def pending(count: int, gib: int) -> list[Source]:
    """`count` bare pods asking `gib` GiB each, as a user's pending batch."""
    container: dict[str, Any] = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": gib}}}
    spec = {"schedulerName": SECONDARY_SCHEDULER_NAME, "containers": [container]}
    return [
        Source(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"want-{i}", "namespace": "bench"}, "spec": spec},
            "bench",
        )
        for i in range(count)
    ]


def pool(name: str, gpus: int, gib: int, cost: int) -> Source:
    capacity = {"aliyun.com/gpu-mem": gpus * gib, "aliyun.com/gpu-count": gpus, "cpu": "192", "memory": "1536Gi"}
    capacity["pods"] = "512"
    notes = {"gpushare.io/pool-cost": str(cost)}
    meta = {"name": name, "labels": {"topology.kubernetes.io/zone": "zone-0"}, "annotations": notes}
    return Source({"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"capacity": capacity}}, "bench")


def units(pod: Source) -> int:
    return int(pod.obj["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"])


def template() -> Source:
    container: dict[str, Any] = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 10}}}
    spec = {"schedulerName": SECONDARY_SCHEDULER_NAME, "containers": [container]}
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "bench"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "serve"}},
            "template": {"metadata": {"labels": {"app": "serve"}}, "spec": spec},
        },
    }
    return Source(obj, "bench")


@contextmanager
def _timed_build(spent: list[float]) -> Iterator[None]:
    """The model's builds (`Simulation.from_sources`) timed while the block runs (their seconds added to
    `spent[0]`)."""
    descriptor = Simulation.__dict__["from_sources"]
    original = Simulation.from_sources

    def timed(cls: type[Simulation], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    Simulation.from_sources = classmethod(timed)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Simulation.from_sources = descriptor  # type: ignore[method-assign]


def _headroom_row(nodes: int) -> str:
    node_docs = fleet(nodes, ack=False)
    bound = running(node_docs, nodes * 8 * 6)
    spent = [0.0]
    with _timed_build(spent):  # the model's build, timed inside
        started = time.perf_counter()
        answer = headroom_of(node_docs, bound, [], template(), SEARCHED)
        elapsed = time.perf_counter() - started
    model = spent[0]
    return (
        f"{nodes * 8:>7} {nodes:>6} {len(bound):>8} {answer.more:>7} {elapsed:>8.2f} {model:>6.2f} "
        f"{elapsed - model:>8.2f}"
    )


def _defrag_row(nodes: int) -> str:
    node_docs = fleet(nodes, ack=False)
    full = running(node_docs, nodes * 8 * 6)
    bound = [pod for i, pod in enumerate(full) if i % 3 or units(pod) == GIB_PER_GPU]  # a third deleted
    fits = len(Simulation.from_sources(node_docs, bound, pending(nodes * 8, 48), SEARCHED).run().placements)
    wanted = pending(500 + fits, 48)  # those that fit, and 500 more left pending
    started = time.perf_counter()
    found = defragment(node_docs, bound, wanted, SEARCHED)
    elapsed = time.perf_counter() - started
    fit = sum(f.moves is not None for f in found.pending)
    moved = len(found.plan.steps)
    took = len(found.pending) - len(found.plan.still_pending)
    return f"{nodes:>6} {len(bound):>8} {len(found.pending):>8} {fit:>16} {moved:>11} {took:>6} {elapsed:>8.2f}"


def _sizing_row(nodes: int) -> str:
    node_docs = fleet(nodes, ack=False)
    bound = running(node_docs, nodes * 8 * 6)
    wanted = deployments(10_000, ack=False, seed=23)
    pools = [read_pool(pool("a100", 8, 80, 8)), read_pool(pool("l4x4", 4, 24, 3)), read_pool(pool("a10", 1, 24, 1))]
    timed = []
    for cores in (None, 1):  # as the command runs it (every core), then on one core
        gc.collect()  # what the last answer left is gone, as in a process of its own
        started = time.perf_counter()
        answers, mix = size_all(Fleet(node_docs, bound, wanted, SEARCHED), pools, cores)
        timed.append(time.perf_counter() - started)
        said = ", ".join(f"{a.pool}: {a.nodes}, {len(a.unservable)}" for a in answers)
        mixed = " + ".join(f"{count} {name}" for name, count in mix.counts) if mix is not None else ""
        del answers, mix
    return f"{nodes:>6} {len(bound):>8} {10_000:>8}  {said:<48} {mixed:<12} {timed[0]:>8.2f} {timed[1]:>8.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 4k GPUs only")
    parser.add_argument("--only", choices=("headroom", "defrag", "sizing"), help="one of the three answers")
    args = parser.parse_args()
    wanted = {args.only} if args.only else {"headroom", "defrag", "sizing"}
    sizes = (128, 512) if args.quick else (128, 512, 2048)
    print(f"placement engine: {engine_build()}")
    # each row made by a function of its own, and the collector run between rows: a row starts as a process of its
    # own would, without the last row's fleet alive (which the collector would walk, and a fork would copy)
    answer_head = "answer (pool: nodes, unservable)"
    sections = (
        (
            "headroom",
            f"{'GPUs':>7} {'nodes':>6} {'running':>8} {'more':>7} {'seconds':>8} {'model':>6} {'after it':>8}",
        ),
        (
            "defrag",
            f"{'nodes':>6} {'running':>8} {'pending':>8} {'fit after moves':>16} {'plan moves':>11} {'bound':>6} "
            f"{'seconds':>8}",
        ),
        (
            "sizing",
            f"{'nodes':>6} {'running':>8} {'pending':>8}  {answer_head:<48} {'mix':<12} {'seconds':>8} {'one core':>8}",
        ),
    )
    rows = {"headroom": _headroom_row, "defrag": _defrag_row, "sizing": _sizing_row}
    for name, head in sections:
        if name not in wanted:
            continue
        print(head)
        for nodes in sizes:
            gc.collect()
            print(rows[name](nodes))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
