"""`gpushare watch` against a real API server at fleet scale: its first list against `gpushare snapshot`'s, its
memory, the lag under a churn of pod events, and a refresh of a template's headroom.

Starts etcd + kube-apiserver (tests/e2e's harness; binaries from `python tests/toolchain.py build 1.X`) and creates
the fleet of benchmarks/snapshot.py (GPU nodes of 8 GPUs, bound and annotated pods), then:

1. first list: `gpushare snapshot`, then a watch, each as a process of its own reporting its peak resident memory
   (VmHWM); the watch's time is until its first answers are served (ready), its peak then and after a refresh with
   a template's headroom and a doctor pass (which runs in a forked copy: its own peak is printed apart).
   Targets (#49): the watch's first list within 1.5x of snapshot's time, its memory at most 2x snapshot's peak.
2. churn (`--churn-nodes`): a fleet of 2,000 nodes (16,000 GPUs): pods created bound and deleted through the API
   by `--threads` clients as fast as the API server takes them (or `--rate`), for `--seconds`; the watch's lag
   (gpushare_watch_lag_seconds, from an event's arrival to the metrics holding it) sampled each 0.5 s, and end to
   end: a marker pod's creation to its GPU series on /metrics. Target: 1,000 events/s held with lag under 2 s.
   One API server on two cores, beside etcd and its clients, takes a few hundred writes a second: the watch's own
   capacity is then measured apart (`feed`): the same fleet's events delivered to it at `--feed-rate` a second.
3. headroom: the heavy pass that recomputes a template's headroom (the pending pods placed, the replicas counted,
   all rolled back, in a forked copy) on a live model of benchmarks/capacity.py's fleet at 2,000 nodes (16,000 GPUs,
   ~96,000 running pods, a 10 GiB template): target within 2 s at 16,000 GPUs.

Run it from outside the repository (`cd /tmp`) to time the installed gpushare, a compiled wheel as users run it.
Usage: python benchmarks/watch.py [--nodes 5000 --pods 150000] [--churn-nodes 2000] [--seconds 30] [--minor 1.36]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# gpushare as installed (a compiled wheel, or the tree's editable install): the tests' harness only from the tree
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e"), str(REPO / "benchmarks")]

from cluster import ControlPlane, free_port  # noqa: E402
from kube import api  # noqa: E402
from snapshot import fill, pod, snapshot  # noqa: E402
from toolchain import control_plane_tools  # noqa: E402

TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "llm", "namespace": "default"},
    "spec": {
        "schedulerName": "default-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"aliyun.com/gpu-mem": "20"}}}],
    },
}

#: The watch in a child: until ready (its first lists, the model, the first answers), its peak then; then a heavy
#: refresh (the template's headroom) and a doctor pass (in a forked copy, whose own peak it reports).
CHILD = """
import json, resource, sys, time
from gpushare import process
from gpushare.kube.cluster import Cluster
from gpushare.kube.documents import read_paths
from gpushare.live import serve
from gpushare.placement import Semantics

def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) // 1024

kubeconfig, template = sys.argv[1], sys.argv[2]
process.few_arenas()  # as `gpushare watch` does before its threads start
started = time.perf_counter()
running = serve.start(Cluster(kubeconfig), Semantics(), read_paths([template]), serve.Options(heavy_every=3600,
                      doctor_every=3600))
assert running.wait_ready(3600)
ready = time.perf_counter() - started
peak_ready = hwm()
t = time.perf_counter(); running.live.refresh(heavy=True); heavy = time.perf_counter() - t
t = time.perf_counter(); running.live.doctor_now(); doctor = time.perf_counter() - t
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
print(json.dumps({"ready": ready, "peak_ready": peak_ready, "heavy": heavy, "doctor": doctor,
                  "peak": hwm(), "doctor_peak": children}))
running.stop()
"""


def first_list(cluster: ControlPlane, workdir: Path, template: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(cluster.kubeconfig), str(template)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def metrics(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        return str(response.read().decode())


def churn(cluster: ControlPlane, workdir: Path, nodes: int, seconds: float, threads: int, rate: float) -> None:
    """Pods created bound and deleted as fast as the API server takes them; the watch's lag meanwhile."""
    template = workdir / "llm.yaml"
    port = free_port()
    log = open(workdir / "watch.log", "wb")  # noqa: SIM115 - the process's
    watcher = subprocess.Popen(
        [sys.executable, "-m", "gpushare", "watch", "--kubeconfig", str(cluster.kubeconfig), "--listen",
         f"127.0.0.1:{port}", "--template", str(template), "--debounce", "0.5", "--heavy-every", "5"],
        stderr=log,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or watcher.poll() is not None:
                raise SystemExit((workdir / "watch.log").read_text()[-3000:])
            time.sleep(0.5)
        core = api(cluster.kubeconfig)
        stop = threading.Event()
        counts = [0, 0]  # created, deleted
        lock = threading.Lock()

        def worker(w: int) -> None:
            i = 0
            interval = threads / rate if rate else 0.0
            while not stop.is_set():
                name = f"churn-{w}-{i}"
                body = pod(10_000_000 + w * 1_000_000 + i, f"bench-{(w * 7919 + i) % nodes}")
                body["metadata"]["name"] = name
                began = time.monotonic()
                core.create_namespaced_pod("default", body)
                core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
                with lock:
                    counts[0] += 1
                    counts[1] += 1
                i += 1
                if interval:
                    time.sleep(max(0.0, 2 * interval - (time.monotonic() - began)))

        lags: list[float] = []
        ends: list[float] = []
        events_before = _events(metrics(url))
        began = time.monotonic()
        with ThreadPoolExecutor(threads) as pool:
            for w in range(threads):
                pool.submit(worker, w)
            marker = 0
            while time.monotonic() - began < seconds:
                text = metrics(url)
                lags += [float(line.split()[-1]) for line in text.splitlines() if line.startswith("gpushare_watch_lag")]
                if marker < int((time.monotonic() - began) / 5):  # a marker pod: creation to its series
                    marker += 1
                    name = f"marker-{marker}"
                    body = pod(20_000_000 + marker, "bench-0")
                    body["metadata"]["name"] = name
                    body["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "7", "ALIYUN_COM_GPU_MEM_POD": "9"}
                    body["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = "9"
                    made = time.monotonic()
                    core.create_namespaced_pod("default", body)
                    want = 'gpushare_gpu_memory_allocated_units{gpu="7",node="bench-0",unit="1GiB"}'
                    while True:
                        line = next((x for x in metrics(url).splitlines() if x.startswith(want)), "")
                        if line and float(line.split()[-1]) >= 9:
                            ends.append(time.monotonic() - made)
                            break
                        if time.monotonic() - made > 30:
                            ends.append(float("inf"))
                            break
                        time.sleep(0.05)
                    core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
                time.sleep(0.5)
            stop.set()
        took = time.monotonic() - began
        events = _events(metrics(url)) - events_before
        print(
            f"churn on {nodes} nodes ({nodes * 8:,} GPUs): {events / took:,.0f} pod events/s received "
            f"({counts[0] / took:,.0f} creates + {counts[1] / took:,.0f} deletes /s by {threads} clients) for "
            f"{took:.0f} s"
        )
        print(
            f"  lag (gpushare_watch_lag_seconds): median {statistics.median(lags):.2f} s, max {max(lags):.2f} s; "
            f"a marker pod's creation to its series on /metrics: {', '.join(f'{e:.2f}' for e in ends)} s"
        )
    finally:
        watcher.terminate()
        watcher.wait(30)


def _events(text: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("gpushare_watch_events_total"))


def headroom(nodes: int, runs: int) -> None:
    """The heavy pass (a template's headroom and the pending pods' moves, in its forked copy) on a live model of
    benchmarks/capacity.py's fleet (8 x 80 GiB a node, filled by its Deployments, upstream semantics): the model as
    the watch holds it (its objects listed into a LiveState), then the pass timed from the fork to the answers."""
    from capacity import running, template
    from placement import SEARCHED, fleet

    from gpushare.kube.cluster import WATCHES
    from gpushare.live import serve
    from gpushare.live.state import LiveState, encoded

    node_docs = fleet(nodes, ack=False)
    bound = running(node_docs, nodes * 8 * 6)
    state = LiveState(SEARCHED, [template()])
    for index, listing in enumerate(WATCHES):
        docs = node_docs if listing.kind == "Node" else bound if listing.kind == "Pod" else []
        state.replace(index, encoded(index, [dict(d.obj) for d in docs]), 0.0)
    live = serve.Live(state, None)
    live.refresh()  # the model built, the first answers made
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        live.refresh(heavy=True)
        times.append(time.perf_counter() - started)
    ((name, more, _, _),) = live.view.heavy.headroom if live.view else [("-", 0, 0, {})]
    print(
        f"heavy refresh at {nodes * 8:,} GPUs ({len(bound):,} running pods): median {statistics.median(times):.2f} s "
        f"over {runs} (min {min(times):.2f}, max {max(times):.2f}); {name}: {more:,} more"
    )


def feed(nodes: int, pods: int, rate: float, seconds: float) -> None:
    """The watch's own capacity, without an API server: a fleet listed into its state, its applier and refresher
    running, and pod events delivered at `rate` a second (a running pod created, then deleted) as its reading
    threads deliver them; the lag it serves sampled each 0.5 s, its backlog at the end."""
    from kube import gpu_node
    from snapshot import pod

    from gpushare.kube.cluster import WATCHES
    from gpushare.live import serve
    from gpushare.live.state import LiveState, encoded
    from gpushare.live.watcher import Watcher
    from gpushare.placement import Semantics

    node_docs = []
    for i in range(nodes):
        made, status = gpu_node(f"bench-{i}", 8, 80)
        node_docs.append({**made, "kind": "Node", **status})
    pod_docs = [{"apiVersion": "v1", "kind": "Pod", **pod(i, f"bench-{i % nodes}")} for i in range(pods)]
    for doc in pod_docs:
        doc["metadata"]["namespace"] = "default"
    state = LiveState(Semantics())
    for index, listing in enumerate(WATCHES):
        docs = node_docs if listing.kind == "Node" else pod_docs if listing.kind == "Pod" else []
        state.replace(index, encoded(index, docs), 0.0)
    watcher = Watcher(None, state)  # type: ignore[arg-type]  # no reading threads: events are delivered here
    live = serve.Live(state, watcher, serve.Options(debounce=0.5, heavy_every=3600, doctor_every=3600))
    live.refresh()
    watcher.start(reading=False)
    live.start()
    index = next(i for i, listing in enumerate(WATCHES) if listing.kind == "Pod")
    lags: list[float] = []
    sent = 0
    began = time.monotonic()
    next_sample = began + 0.5
    while (now := time.monotonic()) - began < seconds:
        due = int((now - began) * rate)
        while sent < due:
            doc = {"apiVersion": "v1", "kind": "Pod", **pod(50_000_000 + sent // 2, f"bench-{sent % nodes}")}
            doc["metadata"]["namespace"] = "default"
            watcher.deliver(index, "ADDED" if sent % 2 == 0 else "DELETED", doc)
            sent += 1
        if now >= next_sample and live.view is not None:
            text = live.view.exposition["text/plain"].body().decode()
            lags += [float(x.split()[-1]) for x in text.splitlines() if x.startswith("gpushare_watch_lag_seconds ")]
            next_sample += 0.5
        time.sleep(0.002)
    took = time.monotonic() - began
    time.sleep(1.0)
    backlog = watcher.inbox.qsize()
    live.stop()
    print(
        f"events delivered to the watch itself (no API server): {sent / took:,.0f}/s for {took:.0f} s on {nodes:,} "
        f"nodes and {pods:,} pods; lag served: median {statistics.median(lags):.2f} s, max {max(lags):.2f} s; "
        f"backlog 1 s after: {backlog}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--churn-nodes", type=int, default=2000)
    parser.add_argument("--churn-pods", type=int, default=30_000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0, help="create+delete pairs per second (0: as fast as taken)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--minor", default="1.36")
    parser.add_argument("--skip", default="", help="comma-separated: first-list, churn, headroom, feed")
    parser.add_argument("--feed-rate", type=float, default=1000, help="events a second delivered to the watch itself")
    args = parser.parse_args()
    skip = set(args.skip.split(",")) - {""}
    minor = int(args.minor.split(".")[1])
    binaries = {name: tool.ensure(log=False) for name, tool in control_plane_tools(minor).items()}
    from gpushare.placement import engine_build

    print(f"gpushare watch, kube-apiserver 1.{minor} on this host; placement engine: {engine_build()}")
    if "headroom" not in skip:
        headroom(args.churn_nodes, args.runs)
    if "feed" not in skip:
        feed(args.churn_nodes, args.churn_pods, args.feed_rate, args.seconds)
    for name, nodes, pods, steps in (
        ("first-list", args.nodes, args.pods, ("first-list",)),
        ("churn", args.churn_nodes, args.churn_pods, ("churn",)),
    ):
        wanted = [s for s in steps if s not in skip]
        if not wanted:
            continue
        workdir = Path(tempfile.mkdtemp(prefix=f"gpushare-bench-watch-{name}-"))
        cluster = ControlPlane(minor, workdir, binaries)
        try:
            cluster.start()
            started = time.perf_counter()
            fill(cluster, nodes, pods, (0, 0), args.threads)
            print(f"{nodes:,} nodes and {pods:,} pods created in {time.perf_counter() - started:.0f} s")
            template = workdir / "llm.yaml"
            template.write_text(json.dumps(TEMPLATE))
            if "first-list" in wanted:
                seconds, peak, _ = snapshot(cluster, workdir / "snap")
                found = first_list(cluster, workdir, template)
                print(f"snapshot: {seconds:.1f} s, peak {peak:.0f} MiB")
                print(
                    f"watch: ready in {found['ready']:.1f} s ({found['ready'] / seconds:.2f}x snapshot's), peak "
                    f"{found['peak_ready']:.0f} MiB ({found['peak_ready'] / peak:.2f}x); after a headroom refresh "
                    f"({found['heavy']:.1f} s) and a doctor pass ({found['doctor']:.1f} s): peak {found['peak']:.0f} "
                    f"MiB ({found['peak'] / peak:.2f}x), the doctor pass's copy {found['doctor_peak']:.0f} MiB"
                )
            if "churn" in wanted:
                churn(cluster, workdir, nodes, args.seconds, args.threads, args.rate)
        finally:
            cluster.stop()
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
