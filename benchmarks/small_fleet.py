"""Small fleets: `gpushare capacity` and `gpushare place` on an 8-node fleet, against `python -c "import numpy, yaml"`.

On a handful of nodes nearly all of a fleet question's time is the process's start: the interpreter, PyYAML and
gpushare's own modules; numpy only where the fast engine runs (`choose_engine`: a fleet this small is answered node
by node without it; the last row forces the fast engine, to show what loading it costs). The fleet: 8 nodes of 4
GPUs x 16 GiB, 24 running pods bound with the extender's annotations, a pod template of 5 GiB (capacity: 56 more)
and 6 pending pods (place), all served by the extender (default-scheduler, as on ACK). Each command runs as a whole
process, timed in pairs with the baseline (one after the other, so a busy moment weighs on both); the medians and
the ratio of each to the baseline are printed.
Target (#47): capacity within 1.5x of the baseline.
Usage: python benchmarks/small_fleet.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TARGET = 1.5


def fleet(work: Path) -> None:
    nodes: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    for i in range(8):
        name = f"gpu-{i}"
        capacity = {
            "cpu": "32",
            "memory": "128Gi",
            "pods": "110",
            "aliyun.com/gpu-mem": "64",
            "aliyun.com/gpu-count": "4",
        }
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
        for k in range(3):
            running.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"run-{i}-{k}",
                        "namespace": "default",
                        "annotations": {"ALIYUN_COM_GPU_MEM_IDX": str(k), "ALIYUN_COM_GPU_MEM_POD": str(4 + 3 * k)},
                    },
                    "spec": {
                        "nodeName": name,
                        "containers": [
                            {
                                "name": "c",
                                "image": "app:1",
                                "resources": {"limits": {"aliyun.com/gpu-mem": str(4 + 3 * k)}},
                            }
                        ],
                    },
                    "status": {"phase": "Running"},
                }
            )

    def pod(name: str, units: int) -> dict[str, Any]:
        limits = {"aliyun.com/gpu-mem": str(units)}
        container = {"name": "c", "image": "app:1", "resources": {"limits": limits, "requests": {"cpu": "1"}}}
        spec = {"containers": [container]}  # default-scheduler: the scheduler the extender serves on ACK
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}

    (work / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (work / "running.yaml").write_text(yaml.safe_dump_all(running))
    (work / "template.yaml").write_text(yaml.safe_dump(pod("serve", 5)))
    (work / "pending.yaml").write_text(yaml.safe_dump_all([pod(f"new-{i}", 3 + 2 * i) for i in range(6)]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="pairs per command (the medians are printed)")
    args = parser.parse_args()
    python = sys.executable
    fleet_flags = ["--nodes", "nodes.yaml", "--existing", "running.yaml"]
    commands = {
        "capacity --template": [python, "-m", "gpushare", "capacity", *fleet_flags, "--template", "template.yaml"],
        "place": [python, "-m", "gpushare", "place", *fleet_flags, "pending.yaml"],
        "place --engine fast": [python, "-m", "gpushare", "place", "--engine", "fast", *fleet_flags, "pending.yaml"],
    }
    baseline = [python, "-c", "import numpy, yaml"]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        fleet(work)

        def once(argv: list[str]) -> float:
            started = time.perf_counter()
            subprocess.run(argv, cwd=work, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return time.perf_counter() - started

        for argv in (baseline, *commands.values()):  # warm the page cache: every run then starts alike
            once(argv)
        base: list[float] = []
        timed: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                base.append(once(baseline))
                timed[name].append(once(argv))
    floor = statistics.median(base)
    print(f"{'command (8 nodes, 32 GPUs)':<28} {'median s':>9} {'x baseline':>11} {'target':>8}")
    print(f"{'python -c import numpy, yaml':<28} {floor:>9.3f} {1:>11.2f}")
    for name, samples in timed.items():
        ratio = statistics.median(samples) / floor
        verdict = f"{'<=' if ratio <= TARGET else '>'} {TARGET}" if name.startswith("capacity") else ""
        print(f"gpushare {name:<19} {statistics.median(samples):>9.3f} {ratio:>11.2f} {verdict:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
