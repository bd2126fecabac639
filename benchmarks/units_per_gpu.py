"""Units per GPU: `gpushare capacity`'s time and memory on one fleet written in ever smaller units.

A fleet's GPU memory may be written in any unit: the same fleet and pods in 1 GiB units (80 per GPU), and again with
every GPU memory number multiplied so that a GPU holds 1,000,000 and 10,000,000 units (more than any GPU made in
MiB: `validate` and the dry run flag such nodes, GN314, and answer all the same). The answer must be the same and
cost about the same: the engine's indexes are sized by the nodes and the log of a GPU's units, not by the units.
Fleet: 512 nodes of 8 GPUs, 3 running pods a node (10, 20 and 40 GiB), 8 templates of 10 GiB asking 1 to 8 cpu (ack
semantics, the fast engine: 512 nodes and their replicas are past the reference engine's share; each kind of pod
sizes its own indexes, where the units once counted). Each size runs as a whole process
(`--runs` times, the median printed) with its peak memory (the largest ru_maxrss of the runs).
Target (#48): 1e6 and 1e7 units per GPU within 2x of the 1 GiB fleet's time and memory.
Usage: python benchmarks/units_per_gpu.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TARGET = 2.0
NODES = 512
GPUS = 8
GIB_PER_GPU = 80
#: Templates asked at once, each a kind of pod of its own (1..8 cpu, 10 GiB): capacity sizes an index per kind.
TEMPLATES = 8
SCALES = {"1 GiB units (80/GPU)": 1, "1e6 units/GPU": 12_500, "1e7 units/GPU": 125_000}


def fleet(work: Path, scale: int) -> None:
    """The fleet with every GPU memory number times `scale` (80 x 12,500 = 1e6 units a GPU)."""
    nodes: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    for i in range(NODES):
        name = f"gpu-{i:04d}"
        capacity = {
            "cpu": "96",
            "memory": "768Gi",
            "pods": "110",
            "aliyun.com/gpu-mem": str(GPUS * GIB_PER_GPU * scale),
            "aliyun.com/gpu-count": str(GPUS),
        }
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
        for k, size in enumerate((10, 20, 40)):
            units = str(size * scale)
            annotations = {"ALIYUN_COM_GPU_MEM_IDX": str(k), "ALIYUN_COM_GPU_MEM_POD": units}
            limits = {"aliyun.com/gpu-mem": units}
            running.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"run-{i}-{k}", "namespace": "default", "annotations": annotations},
                    "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {"limits": limits}}]},
                    "status": {"phase": "Running"},
                }
            )
    (work / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (work / "running.yaml").write_text(yaml.safe_dump_all(running))
    for cpu in range(1, TEMPLATES + 1):  # kinds of pod: each builds its own capacity indexes
        limits = {"aliyun.com/gpu-mem": str(10 * scale)}
        template = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"serve-{cpu}", "namespace": "default"}}
        resources = {"limits": limits, "requests": {"cpu": str(cpu)}}
        template["spec"] = {"containers": [{"name": "c", "resources": resources}]}
        (work / f"template-{cpu}.yaml").write_text(yaml.safe_dump(template))


def once(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """Seconds, peak MiB and the answers (MORE, per template) of one whole run."""
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: run the command, its own ru_maxrss measured alone
        with open(cwd / "out.txt", "w") as out:
            os.dup2(out.fileno(), 1)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            os.chdir(cwd)
            os.execv(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: findings (GN314), the answer printed all the same
        raise SystemExit(f"{' '.join(argv)}: exit {os.waitstatus_to_exitcode(status)}")
    table = (cwd / "out.txt").read_text().splitlines()
    more = ",".join(line.split()[1] for line in table[1 : 1 + TEMPLATES])
    return elapsed, usage.ru_maxrss / 1024, more


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per size (the median is printed)")
    args = parser.parse_args()
    argv = [sys.executable, "-m", "gpushare", "capacity", "-q", "--nodes", "nodes.yaml", "--existing"]
    argv += ["running.yaml"] + [f"--template=template-{cpu}.yaml" for cpu in range(1, TEMPLATES + 1)]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, scale in SCALES.items():
            work = Path(scratch) / str(scale)
            work.mkdir()
            fleet(work, scale)
            runs = [once(argv, work) for _ in range(args.runs)]
            answers = {more for _, _, more in runs}
            rows.append((name, statistics.median(t for t, _, _ in runs), max(m for _, m, _ in runs), answers))
    base_time, base_memory = rows[0][1], rows[0][2]
    print(f"capacity on {NODES} nodes x {GPUS} GPUs, {NODES * 3} running pods")
    print(f"{'fleet written in':<22} {'median s':>9} {'x':>6} {'peak MiB':>9} {'x':>6}  MORE (per template)")
    for i, (name, seconds, memory, answers) in enumerate(rows):
        ratio, mem_ratio = seconds / base_time, memory / base_memory
        verdict = "" if i == 0 else ("<= 2x" if max(ratio, mem_ratio) <= TARGET else "> 2x")
        more = " / ".join(sorted(answers))
        print(f"{name:<22} {seconds:>9.2f} {ratio:>6.2f} {memory:>9.0f} {mem_ratio:>6.2f}  {more}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
