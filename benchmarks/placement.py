"""Dry-run placement throughput at fleet scale.

Fleet: nodes of 8 GPUs x 80 GiB reported in 128 MiB units (640 per GPU); 70% share, 15% cgpu,
15% core_mem nodes. Workload: Deployments whose replicas ask from 1/16 of a GPU up to 4 GPUs' worth
(multi-GPU pods via aliyun.com/gpu-count), some with compute on core_mem nodes, about 6 pods per GPU
in all, so the fleet fills and the tail stays pending. Prints pods/s of the fast engine at 1k, 4k,
16k and 64k GPUs (100,000 pods at 16k GPUs: 2,000 nodes), the reference engine's rate on a small
fleet, and peak memory. Target: >= 50,000 pods/s at 2,000 nodes, cost per pod growing at most
logarithmically.
Usage: python benchmarks/placement.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpushare.kube.documents import Source
from gpushare.placement.inputs import build
from gpushare.placement.model import Semantics
from gpushare.placement.run import run

UNITS_PER_GPU = 640  # 80 GiB in 128 MiB units
SEMANTICS = Semantics("ack", "binpack", "128MiB")


def fleet(nodes: int, seed: int = 7) -> list[Source]:
    rng = random.Random(seed)
    result = []
    for i in range(nodes):
        mode = rng.choices(["share", "cgpu", "core_mem"], [70, 15, 15])[0]
        capacity: dict[str, Any] = {
            "aliyun.com/gpu-mem": 8 * UNITS_PER_GPU,
            "aliyun.com/gpu-count": 8,
            "cpu": "192",
            "memory": "1536Gi",
            "pods": "512",
        }
        if mode == "core_mem":
            capacity["aliyun.com/gpu-core.percentage"] = 800
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"gpu-{i:05d}", "labels": {"ack.node.gpu.schedule": mode}},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
        result.append(Source(node, "bench"))
    return result


def workload(pods: int, seed: int = 11) -> list[Source]:
    rng = random.Random(seed)
    result = []
    made = i = 0
    while made < pods:
        replicas = min(pods - made, rng.randint(20, 800))
        kind = rng.choices(["small", "medium", "whole", "multi", "compute"], [62, 20, 3, 3, 12])[0]
        labels: dict[str, str] = {}
        limits: dict[str, Any] = {}
        if kind == "small":
            limits["aliyun.com/gpu-mem"] = rng.choice([16, 24, 40, 64, 80])  # 2-10 GiB
        elif kind == "medium":
            limits["aliyun.com/gpu-mem"] = rng.choice([128, 160, 240])  # 16-30 GiB
        elif kind == "whole":
            limits["aliyun.com/gpu-mem"] = UNITS_PER_GPU
        elif kind == "multi":
            count = rng.choice([2, 4])
            labels["aliyun.com/gpu-count"] = str(count)
            limits["aliyun.com/gpu-mem"] = count * rng.choice([160, 320, 640])  # up to 4 GPUs' worth
        else:
            limits["aliyun.com/gpu-mem"] = rng.choice([40, 80])
            limits["aliyun.com/gpu-core.percentage"] = rng.choice([10, 25, 50])
        template = {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [
                    {"name": "main", "resources": {"limits": limits, "requests": {"cpu": "1", "memory": "4Gi"}}}
                ]
            },
        }
        deploy = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"app-{i}", "namespace": "ml"},
            "spec": {"replicas": replicas, "template": template},
        }
        result.append(Source(deploy, "bench"))
        made += replicas
        i += 1
    return result


def measure(nodes: int, pods: int, engine: str) -> dict[str, float]:
    node_docs, pod_docs = fleet(nodes), workload(pods)
    started = time.perf_counter()
    inventory = build(node_docs, [], pod_docs, SEMANTICS)
    built = time.perf_counter() - started
    started = time.perf_counter()
    result = run(inventory, SEMANTICS, engine)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    return {
        "gpus": nodes * 8,
        "nodes": nodes,
        "pods": len(inventory.new),
        "placed": len(result.placements),
        "pending": len(result.pending),
        "seconds": elapsed,
        "rate": len(inventory.new) / elapsed,
        "build": built,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller fleets (a smoke run)")
    args = parser.parse_args()
    scale = 8 if args.quick else 1
    print(
        f"{'GPUs':>6} {'nodes':>6} {'pods':>7} {'placed':>7} {'pending':>7} {'engine s':>9} {'pods/s':>9} "
        f"{'us/pod':>7} {'build s':>8}"
    )
    rows = []
    for gpus in (1024, 4096, 16384, 65536):
        nodes = gpus // 8 // scale
        row = measure(nodes, int(nodes * 8 * 6.25), "fast")
        rows.append(row)
        print(
            f"{row['gpus']:>6} {row['nodes']:>6} {row['pods']:>7} {row['placed']:>7} {row['pending']:>7} "
            f"{row['seconds']:>9.2f} {row['rate']:>9,.0f} {1e6 / row['rate']:>7.1f} {row['build']:>8.2f}"
        )
    ref = measure(32, 1600, "reference")
    fast_small = measure(32, 1600, "fast")
    print(
        f"reference engine, 32 nodes x 8 GPUs, {ref['pods']} pods: {ref['rate']:,.0f} pods/s "
        f"(fast engine on the same: {fast_small['rate']:,.0f} pods/s)"
    )
    growth = (1e6 / rows[-1]["rate"]) / (1e6 / rows[0]["rate"])
    print(f"cost per pod at 64x the GPUs: x{growth:.2f} (log2(64) = 6)")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
