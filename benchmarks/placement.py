"""Dry-run placement throughput at fleet scale, for each semantics and kind of workload.

Fleet: nodes of 8 GPUs x 80 GiB, 192 cpus and 1.5 TiB, hostname and zone labels as kubelets and cloud providers set
them. Workloads of about 6 pods per GPU, so the fleet fills and the tail stays pending:

- ack: Deployments in 1 GiB units on share/cgpu/core_mem nodes (ACK documents 128 MiB units for share nodes only),
  from 2 GiB to 4 GPUs' worth (multi-GPU pods via aliyun.com/gpu-count), some with compute; nodes chosen by ACK's
  binpack.
- upstream, Deployments: the same sizes in GiB (whole GPUs at most), kube-scheduler 1.28's default scoring
  (LeastAllocated, BalancedAllocation, PodTopologySpread's default spreading of each Deployment's replicas...).
- upstream, bare Pods: every pod its own object, of its own size, cpu and memory, no controller.

The `deployments` and `pods` cases model percentageOfNodesToScore: 100 (kube-scheduler scores every feasible node,
which the score index finds). `searched` is `deployments` with the adaptive default users run: from 100 nodes on
kube-scheduler stops its search early, and the dry run follows that search over arrays in search order.

Prints pods/s of the fast engine at 1k, 4k, 16k and 64k GPUs (102,400 pods at 16k GPUs: 2,048 nodes) and the cost
per pod, the reference engine's rate on a small fleet, and peak memory. Target: >= 50,000 pods/s at 2,000 nodes
with scoring on (upstream), cost per pod growing at most logarithmically with the fleet.
Measures the installed gpushare (`pip install .` compiles the engine; an editable install runs its source) and
says which it ran.
Usage: python benchmarks/placement.py [--quick] [--only ack|deployments|pods|searched]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpushare.domain.minors import scoring_profile
from gpushare.domain.products import SECONDARY_SCHEDULER_NAME
from gpushare.kube.documents import Source
from gpushare.placement import Semantics, Simulation, engine_build

GPUS_PER_NODE = 8
GIB_PER_GPU = 80
ACK = Semantics("ack", "binpack", "1GiB")
#: Every node scored (percentageOfNodesToScore: 100), the score index's path; kube-scheduler's adaptive default
#: stops its search early on fleets of 100 nodes and more, which the dry run follows (`SEARCHED`).
UPSTREAM = Semantics(
    "upstream", gpu_memory_unit="GiB", scheduler=replace(scoring_profile(28), percentage_of_nodes_to_score=100)
)
SEARCHED = replace(UPSTREAM, scheduler=scoring_profile(28))


def fleet(nodes: int, ack: bool, seed: int = 7) -> list[Source]:
    rng = random.Random(seed)
    result = []
    for i in range(nodes):
        name = f"gpu-{i:05d}"
        capacity: dict[str, Any] = {
            "aliyun.com/gpu-mem": GPUS_PER_NODE * GIB_PER_GPU,
            "aliyun.com/gpu-count": GPUS_PER_NODE,
            "cpu": "192",
            "memory": "1536Gi",
            "pods": "512",
        }
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{i % 3}"}
        if ack:
            mode = rng.choices(["share", "cgpu", "core_mem"], [70, 15, 15])[0]
            labels["ack.node.gpu.schedule"] = mode
            if mode == "core_mem":
                capacity["aliyun.com/gpu-core.percentage"] = 100 * GPUS_PER_NODE
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
        result.append(Source(node, "bench"))
    return result


def _size(rng: random.Random, ack: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """(limits, labels) of one pod: 2-10 GiB mostly, 16-30 GiB, a whole GPU, several GPUs (ack) or compute (ack)."""
    kind = rng.choices(["small", "medium", "whole", "multi", "compute"], [62, 20, 3, 3, 12])[0]
    labels: dict[str, str] = {}
    limits: dict[str, Any] = {}
    if kind == "small":
        limits["aliyun.com/gpu-mem"] = rng.choice([2, 3, 5, 8, 10])
    elif kind == "medium":
        limits["aliyun.com/gpu-mem"] = rng.choice([16, 20, 30])
    elif kind == "whole" or (kind == "multi" and not ack):
        limits["aliyun.com/gpu-mem"] = GIB_PER_GPU
    elif kind == "multi":
        count = rng.choice([2, 4])
        labels["aliyun.com/gpu-count"] = str(count)
        limits["aliyun.com/gpu-mem"] = count * rng.choice([20, 40, 80])
    else:
        limits["aliyun.com/gpu-mem"] = rng.choice([5, 10])
        if ack:
            limits["aliyun.com/gpu-core.percentage"] = rng.choice([10, 25, 50])
    return limits, labels


def _scheduler(ack: bool) -> dict[str, str]:
    """Upstream's pods opt in to the secondary scheduler gpushare renders; ACK's managed one is the default."""
    return {} if ack else {"schedulerName": SECONDARY_SCHEDULER_NAME}


def deployments(pods: int, ack: bool, seed: int = 11) -> list[Source]:
    rng = random.Random(seed)
    result = []
    made = i = 0
    while made < pods:
        replicas = min(pods - made, rng.randint(20, 800))
        limits, labels = _size(rng, ack)
        labels["app"] = f"app-{i}"
        template = {
            "metadata": {"labels": labels},
            "spec": {
                **_scheduler(ack),
                "containers": [
                    {
                        "name": "main",
                        "image": "example.com/infer:v1",
                        "resources": {"limits": limits, "requests": {"cpu": "1", "memory": "4Gi"}},
                    }
                ],
            },
        }
        deploy = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"app-{i}", "namespace": "ml"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": f"app-{i}"}}, "template": template},
        }
        result.append(Source(deploy, "bench"))
        made += replicas
        i += 1
    return result


def bare_pods(pods: int, ack: bool, seed: int = 13) -> list[Source]:
    """Distinct Pods: each its own object and size, one of three cpu/memory shapes, no controller."""
    rng = random.Random(seed)
    result = []
    for i in range(pods):
        limits, labels = _size(rng, ack)
        labels["team"] = rng.choice(["search", "ads", "vision"])
        cpu, memory = rng.choice([("500m", "2Gi"), ("1", "4Gi"), ("2", "8Gi")])
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"job-{i}", "namespace": "batch", "labels": labels},
            "spec": {
                **_scheduler(ack),
                "containers": [
                    {
                        "name": "main",
                        "image": "example.com/train:v2",
                        "resources": {"limits": limits, "requests": {"cpu": cpu, "memory": memory}},
                    }
                ],
            },
        }
        result.append(Source(pod, "bench"))
    return result


Workload = Callable[[int, bool], list[Source]]
CASES: dict[str, tuple[Semantics, Workload]] = {
    "ack": (ACK, deployments),
    "deployments": (UPSTREAM, deployments),
    "pods": (UPSTREAM, bare_pods),
    "searched": (SEARCHED, deployments),
}


def measure(case: str, nodes: int, pods: int, engine: str = "fast") -> dict[str, float]:
    semantics, workload = CASES[case]
    ack = semantics.name == "ack"
    node_docs, pod_docs = fleet(nodes, ack), workload(pods, ack)
    started = time.perf_counter()
    simulation = Simulation.from_sources(node_docs, [], pod_docs, semantics)
    built = time.perf_counter() - started
    started = time.perf_counter()
    result = simulation.run(engine=engine)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    return {
        "gpus": nodes * GPUS_PER_NODE,
        "nodes": nodes,
        "pods": len(simulation.pending),
        "placed": len(result.placements),
        "pending": len(result.pending),
        "tied": sum(1 for a in result.placements if a.tied_with > 1),
        "seconds": elapsed,
        "rate": len(simulation.pending) / elapsed,
        "build": built,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller fleets (a smoke run)")
    parser.add_argument("--only", choices=tuple(CASES), action="append", help="run only these cases")
    args = parser.parse_args()
    scale = 8 if args.quick else 1
    # the installed gpushare: a wheel's engine is compiled by mypyc, an editable install's is its Python source
    print(f"placement engine: {engine_build()}")
    measure(next(iter(args.only or CASES)), 2, 10)  # the fast engine and numpy load on its first run: not timed
    for case in args.only or CASES:
        semantics, _ = CASES[case]
        print(
            f"\n{case}: {semantics.name} semantics"
            + (f", {semantics.scheduler.label}" if semantics.name == "upstream" else "")
            + (
                f", percentageOfNodesToScore {semantics.scheduler.percentage_of_nodes_to_score or 'unset'}"
                if semantics.name == "upstream"
                else ""
            )
        )
        print(
            f"{'GPUs':>6} {'nodes':>6} {'pods':>7} {'placed':>7} {'pending':>7} {'tied':>7} {'engine s':>9} "
            f"{'pods/s':>9} {'us/pod':>7} {'build s':>8}"
        )
        rows = []
        for gpus in (1024, 4096, 16384, 65536):
            nodes = gpus // GPUS_PER_NODE // scale
            row = measure(case, nodes, int(nodes * GPUS_PER_NODE * 6.25))
            rows.append(row)
            print(
                f"{row['gpus']:>6} {row['nodes']:>6} {row['pods']:>7} {row['placed']:>7} {row['pending']:>7} "
                f"{row['tied']:>7} {row['seconds']:>9.2f} {row['rate']:>9,.0f} {1e6 / row['rate']:>7.1f} "
                f"{row['build']:>8.2f}"
            )
        ref = measure(case, 32, 1600, "reference")
        fast_small = measure(case, 32, 1600, "fast")
        print(
            f"reference engine, 32 nodes, {ref['pods']} pods: {ref['rate']:,.0f} pods/s "
            f"(fast engine on the same: {fast_small['rate']:,.0f} pods/s)"
        )
        growth = (1e6 / rows[-1]["rate"]) / (1e6 / rows[0]["rate"])
        print(f"cost per pod at 64x the GPUs: x{growth:.2f} (log2(64) = 6)")
    print(f"\npeak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
