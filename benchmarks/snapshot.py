"""`gpushare snapshot` against a real API server at fleet scale: its peak memory stays flat as the cluster grows.

Starts etcd + kube-apiserver (tests/e2e's harness, binaries from `python tests/toolchain.py build 1.X`), creates
each fleet size's GPU nodes and running pods (bound by nodeName, annotated as the extender does, about 1.5 KB
each), then runs `gpushare snapshot` as a whole process and prints its seconds, objects per second, its peak
resident memory (its own process's VmHWM) and the size of what it wrote. Target (#36): memory bounded at 5,000 nodes
and 150,000 pods: the peak at the largest fleet within 1.5x of the smallest's.
Usage: python benchmarks/snapshot.py [--sizes 500:15000,5000:150000] [--minor 1.36] [--threads 16]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]  # gpushare as installed

from cluster import ControlPlane  # noqa: E402
from kube import api, gpu_node  # noqa: E402
from toolchain import control_plane_tools  # noqa: E402


def pod(i: int, node: str) -> dict[str, Any]:
    units = 1 + i % 8
    container = {
        "name": "server",
        "image": "registry.example/models/serve:1.4.2",
        "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}, "requests": {"cpu": "500m", "memory": "2Gi"}},
        "env": [{"name": "MODEL", "value": f"model-{i % 50}"}],
    }
    return {
        "metadata": {
            "name": f"serve-{i}",
            "labels": {"app": f"serve-{i % 200}"},
            "annotations": {"ALIYUN_COM_GPU_MEM_IDX": str(i % 8), "ALIYUN_COM_GPU_MEM_POD": str(units)},
        },
        "spec": {"nodeName": node, "schedulerName": "gpushare-scheduler", "containers": [container]},
    }


def fill(cluster: ControlPlane, nodes: int, pods: int, have: tuple[int, int], threads: int) -> None:
    """Create nodes and pods up to the counts asked (those of a smaller size are kept)."""
    core = api(cluster.kubeconfig)

    def node(i: int) -> None:
        made, status = gpu_node(f"bench-{i}", 8, 80)
        core.create_node(made)
        core.patch_node_status(made["metadata"]["name"], status)
        core.patch_node(made["metadata"]["name"], {"spec": {"taints": None}})  # no node lifecycle controller here

    def one(i: int) -> None:
        core.create_namespaced_pod("default", pod(i, f"bench-{i % nodes}"))

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(node, range(have[0], nodes)))
        list(pool.map(one, range(have[1], pods)))


#: The snapshot run in a child that reports its own high-water mark: VmHWM belongs to the program the child
#: runs, while ru_maxrss (wait4's too) keeps the peak of the process before exec, which, forked from this one
#: after it created the fleet, is this one's size.
CHILD = """
import sys
from gpushare.cli import main
code = main(sys.argv[1:])
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(int(hwm.split()[1]) // 1024, file=sys.stderr if code else sys.stdout)
sys.exit(code)
"""


def snapshot(cluster: ControlPlane, out: Path) -> tuple[float, float, int]:
    """Seconds, peak resident MiB of the snapshot's own process, bytes written."""
    started = time.perf_counter()
    command = ["snapshot", "--kubeconfig", str(cluster.kubeconfig), "-o", str(out), "-q"]
    done = subprocess.run([sys.executable, "-c", CHILD, *command], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    size = sum(p.stat().st_size for p in out.iterdir())
    return seconds, float(done.stdout.split()[-1]), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500:15000,5000:150000", help="nodes:pods, comma-separated, ascending")
    parser.add_argument("--minor", default="1.36")
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    minor = int(args.minor.split(".")[1])
    binaries = {name: tool.ensure(log=False) for name, tool in control_plane_tools(minor).items()}
    workdir = Path(tempfile.mkdtemp(prefix="gpushare-bench-snapshot-"))
    cluster = ControlPlane(minor, workdir, binaries)
    try:
        cluster.start()
        have = (0, 0)
        heads = ("nodes", 6), ("pods", 8), ("create s", 9), ("snapshot s", 11), ("objects/s", 10), ("peak MiB", 9)
        print(" ".join(f"{h:>{w}}" for h, w in heads), f"{'MB written':>11}")
        peaks = []
        for nodes, pods in sizes:
            started = time.perf_counter()
            fill(cluster, nodes, pods, have, args.threads)
            created = time.perf_counter() - started
            have = (nodes, pods)
            out = workdir / f"snap-{nodes}"
            seconds, peak, size = snapshot(cluster, out)
            peaks.append(peak)
            rate = (nodes + pods) / seconds
            print(
                f"{nodes:>6} {pods:>8} {created:>9.1f} {seconds:>11.1f} {rate:>10,.0f} {peak:>9.0f} {size / 1e6:>11.1f}"
            )
        print(f"peak at the largest fleet / at the smallest: {peaks[-1] / peaks[0]:.2f}x (target <= 1.5x)")
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
