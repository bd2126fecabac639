"""The real stack's bind rate against the dry run's, on the same input.

Starts a control plane of one Kubernetes minor (etcd + kube-apiserver built from pinned Go modules, see
tests/toolchain.py), the real kube-scheduler with the configuration gpushare renders, and the e2e tests' stand-in
extender behind it; creates GPU nodes, then all the pods at once, and times until every pod is bound or reported
unschedulable. Then `gpushare place --semantics upstream` places the same pods on the same nodes, timed as a whole
process and as a library call. Prints both rates and their ratio.

The rate is the whole stack's: kube-scheduler's cycle, the HTTP calls to the extender, and the stand-in's own reads
and writes (it asks the API server on every call). The real upstream extender binds about 2.5 pods/s (client-go's
default QPS of 5, two writes per bind; facts section 4), slower still.
Usage: python benchmarks/real_scheduler.py [--minor 1.28] [--nodes 20] [--pods 200]   (needs the built programs)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from cluster import ControlPlane, free_port  # noqa: E402
from kube import api, create_node, gpu_node  # noqa: E402
from standin_extender import StandIn  # noqa: E402
from test_extender_binding import rendered_scheduler  # noqa: E402
from toolchain import control_plane_tools  # noqa: E402

from gpushare.domain.minors import scoring_profile  # noqa: E402
from gpushare.placement import Semantics, place  # noqa: E402

SCHEDULER = "gpushare-scheduler"


def nodes(count: int) -> list[dict[str, Any]]:
    """Identical nodes of 8 x 16 GiB GPUs, as Node documents with their status."""
    return [
        dict(node, **status)
        for node, status in (gpu_node(f"gpu-{i:03d}", 8, 16, cpu="64", memory="256Gi") for i in range(count))
    ]


def pods(count: int) -> list[dict[str, Any]]:
    sizes = [1, 2, 3, 4, 6, 8]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"bench-{k:05d}", "namespace": "default"},
            "spec": {
                "schedulerName": SCHEDULER,
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"limits": {"aliyun.com/gpu-mem": str(sizes[k % len(sizes)])}},
                    }
                ],
            },
        }
        for k in range(count)
    ]


def real_rate(minor: int, node_docs: list[dict[str, Any]], pod_docs: list[dict[str, Any]], workdir: Path) -> float:
    binaries = {name: tool.path for name, tool in control_plane_tools(minor).items()}
    missing = [str(p) for p in binaries.values() if not p.exists()]
    if missing:
        raise SystemExit(f"not built: {', '.join(missing)}; run `python tests/toolchain.py build 1.{minor}`")
    plane = ControlPlane(minor, workdir, binaries)
    plane.start()
    try:
        core = api(plane.kubeconfig)
        port = free_port()
        server = StandIn(plane.kubeconfig).serve(port)
        process, _ = plane.start_scheduler(rendered_scheduler(plane, workdir, port), name=SCHEDULER)
        for node in node_docs:
            create_node(core, {k: v for k, v in node.items() if k != "status"}, {"status": node["status"]})
        started = time.monotonic()
        for pod in pod_docs:
            core.create_namespaced_pod("default", pod)
        done: set[str] = set()
        while len(done) < len(pod_docs):
            for item in core.list_namespaced_pod("default").items:
                unschedulable = any(
                    c.type == "PodScheduled" and c.reason == "Unschedulable" for c in item.status.conditions or []
                )
                if item.spec.node_name or unschedulable:
                    done.add(item.metadata.name)
            if time.monotonic() - started > 1800:
                raise SystemExit(f"only {len(done)} of {len(pod_docs)} pods settled in 30 minutes")
            if not process.alive():
                raise SystemExit("kube-scheduler exited")
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        server.shutdown()
        return len(pod_docs) / elapsed
    finally:
        plane.stop()


def dry_rates(
    minor: int, node_docs: list[dict[str, Any]], pod_docs: list[dict[str, Any]], workdir: Path
) -> tuple[float, float]:
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(minor))
    started = time.perf_counter()
    place(node_docs, pod_docs, semantics=semantics)
    library = len(pod_docs) / (time.perf_counter() - started)
    (workdir / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": node_docs}))
    (workdir / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pod_docs}))
    command = [sys.executable, "-m", "gpushare.cli", "place", "--semantics", "upstream", "--gpu-memory-unit", "GiB"]
    command += ["--kube-version", f"1.{minor}", "--nodes", str(workdir / "nodes.json"), str(workdir / "pods.json")]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
    process = len(pod_docs) / (time.perf_counter() - started)
    return library, process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minor", default="1.28", help="Kubernetes minor of the control plane (default 1.28)")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--pods", type=int, default=200)
    args = parser.parse_args()
    minor = int(args.minor.split(".")[-1])
    node_docs, pod_docs = nodes(args.nodes), pods(args.pods)
    with tempfile.TemporaryDirectory(prefix="gpushare-bench-") as tmp:
        workdir = Path(tmp)
        real = real_rate(minor, node_docs, pod_docs, workdir)
        library, process = dry_rates(minor, node_docs, pod_docs, workdir)
    print(f"{args.pods} pods on {args.nodes} nodes of 8 GPUs, Kubernetes 1.{minor}")
    print(f"real kube-scheduler + stand-in extender: {real:10,.1f} pods/s")
    print(f"gpushare place, whole process:          {process:10,.1f} pods/s  (x{process / real:,.0f})")
    print(f"gpushare place, library call:           {library:10,.1f} pods/s  (x{library / real:,.0f})")
    print("the upstream extender itself binds about 2.5 pods/s (client-go's default QPS 5, two writes per bind)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
