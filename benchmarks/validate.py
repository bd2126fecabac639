"""Validate 10,000 workload objects (plus a settings document and 100 Nodes) and print objects/s. Target >= 5,000/s.

Usage: python benchmarks/validate.py [--objects N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml

from gpushare.kube.documents import read_documents
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.validate import validate


def documents(count: int, seed: int = 3) -> str:
    rng = random.Random(seed)
    docs: list[dict] = [
        {
            "apiVersion": "gpushare.io/v1alpha1",
            "kind": "InstallerSettings",
            "isolation": ["share", "core_mem"],
            "computeAllocation": True,
            "region": "cn-beijing",
        }
    ]
    for i in range(100):
        mode = rng.choice(["share", "cgpu", "core_mem"])
        capacity = {"aliyun.com/gpu-mem": 8 * 80, "aliyun.com/gpu-count": 8}
        if mode == "core_mem":
            capacity["aliyun.com/gpu-core.percentage"] = 800
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {"ack.node.gpu.schedule": mode}},
                "status": {"capacity": capacity},
            }
        )
    for i in range(count):
        limits: dict = {"aliyun.com/gpu-mem": rng.choice([2, 4, 8, 16, 81])}
        labels = {}
        if rng.random() < 0.2:
            limits["aliyun.com/gpu-core.percentage"] = rng.choice([10, 25, 33])
        elif rng.random() < 0.1:
            labels["aliyun.com/gpu-count"] = rng.choice(["2", "3"])
        kind = rng.choice(["Pod", "Deployment", "StatefulSet", "Job"])
        template = {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "resources": {"limits": limits},
                        "env": [{"name": "ALIYUN_COM_GPU_MEM_CONTAINER", "value": rng.choice(["3", "3,1", "x"])}],
                    }
                ]
            },
        }
        meta = {"name": f"w{i}", "namespace": "ml"}
        docs.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, **template["metadata"]}, "spec": template["spec"]}
            if kind == "Pod"
            else {
                "apiVersion": "apps/v1",
                "kind": kind,
                "metadata": meta,
                "spec": {"replicas": 2, "template": template},
            }
        )
    return yaml.safe_dump_all(docs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    args = parser.parse_args()
    text = documents(args.objects)
    started = time.perf_counter()
    sources = read_documents("bench.yaml", text)
    parsed = time.perf_counter()
    report = validate(sources, ClusterFacts(kube_version="1.26.3", cgpu_version="1.5.10", driver_version="535.161.08"))
    done = time.perf_counter()
    print(f"objects: {len(sources)} ({args.objects} workloads, 100 nodes, 1 settings document)")
    print(f"findings: {len(report.findings)} ({report.errors} errors, {report.warnings} warnings)")
    print(f"read YAML: {parsed - started:.2f}s; rules: {done - parsed:.2f}s")
    print(f"validate (YAML to report): {len(sources) / (done - started):,.0f} objects/s (target >= 5,000)")
    print(f"rules alone: {len(sources) / (done - parsed):,.0f} objects/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
