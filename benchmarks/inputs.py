"""The user's real files at fleet scale: `gpushare place` and `validate` as whole processes on what kubectl writes.

Generates (once, cached under --dir) a fleet as `kubectl get nodes -o yaml|json` writes it (2,000 nodes x 8 GPUs
with status, images, conditions and managedFields) and distinct pending pods as `kubectl get pods -o yaml|json`
writes them (each its own name, labels, uid, env, volumes, probes, status conditions and managedFields, about
3-5 KB), then times:

- `gpushare place --nodes nodes.F pods.F -o json` from YAML and from JSON (pods/s, whole process);
- `gpushare validate pods.yaml` (objects/s);
- peak memory of each (with the reader it forks for a large file: their proportional set sizes summed) against
  the input's size.

Targets: place >= 20,000 pods/s from YAML, >= 50,000 pods/s from JSON; validate >= 25,000 objects/s from YAML;
peak memory <= 3x the input.
`--baseline` also runs each case with the strict reader (`GPUSHARE_READER=pyyaml`, what every file was read with
before the List reader) and prints the ratio; a comma list of `--pods` prints the cost per item at each size.
`--layouts` writes the same pods in each layout people hand gpushare (kubectl's YAML and JSON Lists, Lists with
`kind` and `metadata` before `items`, a `---` stream as written by hand, minified JSON) and prints a table for each
of reading them as `place` does and `validate` as a whole process: seconds, microseconds per pod, and the ratio to
the fastest layout (target: every layout within x1.5; exit 1 otherwise).
Usage: python benchmarks/inputs.py [--pods 100000|2500,10000,25000] [--nodes 2000] [--dir DIR] [--baseline]
       python benchmarks/inputs.py --layouts [--pods 10000] [--runs 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

try:
    _Base: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Base = yaml.SafeDumper

#: Strings Go's YAML reader would take for numbers (`3e21`): kubectl's writer quotes them, PyYAML's does not.
_GO_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")


class _Dumper(_Base):  # type: ignore[misc,valid-type]
    """PyYAML's writer, quoting as kubectl's does and, like it, never writing anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if _GO_NUMBER.fullmatch(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)

#: The targets of issue 13: place in pods/s, validate in objects/s, as whole processes (ceiling.py compares too).
TARGETS = {"place, YAML": 20_000, "place, JSON": 50_000, "validate, YAML": 25_000}

GPUS_PER_NODE = 8
GIB_PER_GPU = 80
STAMP = "2026-11-20T08:15:42Z"


def _managed(manager: str, operation: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": operation,
        "time": STAMP,
    }


def node(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"gpu-{i:05d}"
    capacity = {
        "aliyun.com/gpu-count": str(GPUS_PER_NODE),
        "aliyun.com/gpu-mem": str(GPUS_PER_NODE * GIB_PER_GPU),
        "cpu": "192",
        "ephemeral-storage": "1966070Mi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "1584941720Ki",
        "pods": "256",
    }
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "ecs.gn7e-c16g1.32xlarge",
        "topology.kubernetes.io/region": "cn-beijing",
        "topology.kubernetes.io/zone": f"cn-beijing-{'abc'[i % 3]}",
        "gpushare": "true",
    }
    images = [
        {
            "names": [f"registry.example.com/ml/model-{k}@sha256:{uuid.UUID(int=rng.getrandbits(128)).hex}"],
            "sizeBytes": rng.randint(10**8, 10**10),
        }
        for k in range(6)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": STAMP,
            "labels": labels,
            "managedFields": [
                _managed("kubelet", "Update", {"f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}}}),
                _managed("kubelet", "Update", {"f:status": {"f:allocatable": {f"f:{k}": {} for k in capacity}}}),
            ],
            "name": name,
            "resourceVersion": str(rng.randint(10**6, 10**8)),
            "uid": str(uuid.UUID(int=rng.getrandbits(128))),
        },
        "spec": {"podCIDR": f"10.{i // 250}.{i % 250}.0/24", "providerID": f"alicloud://cn-beijing.i-{i:012x}"},
        "status": {
            "addresses": [
                {"address": f"192.168.{i // 250}.{i % 250}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": capacity,
            "capacity": capacity,
            "conditions": [
                {
                    "lastHeartbeatTime": STAMP,
                    "lastTransitionTime": STAMP,
                    "message": m,
                    "reason": r,
                    "status": s,
                    "type": t,
                }
                for t, s, r, m in (
                    (
                        "MemoryPressure",
                        "False",
                        "KubeletHasSufficientMemory",
                        "kubelet has sufficient memory available",
                    ),
                    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                )
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": str(uuid.UUID(int=rng.getrandbits(128))),
                "containerRuntimeVersion": "containerd://1.6.28",
                "kernelVersion": "5.10.134-16.al8.x86_64",
                "kubeProxyVersion": "v1.30.1-aliyun.1",
                "kubeletVersion": "v1.30.1-aliyun.1",
                "machineID": uuid.UUID(int=rng.getrandbits(128)).hex,
                "operatingSystem": "linux",
                "osImage": "Alibaba Cloud Linux 3.2104 U10 (OpenAnolis Edition)",
                "systemUUID": str(uuid.UUID(int=rng.getrandbits(128))),
            },
        },
    }


def pod(i: int, rng: random.Random) -> dict[str, Any]:
    """A pending pod as kubectl prints it: distinct name, labels, uid, env and size."""
    app = f"team-{i % 97}-svc-{i % 13}"
    gib = rng.choice([2, 3, 5, 8, 10, 16, 20, 30])
    cpu, memory = rng.choice([("500m", "2Gi"), ("1", "4Gi"), ("2", "8Gi"), ("4", "16Gi")])
    resources = {
        "limits": {"aliyun.com/gpu-mem": str(gib), "cpu": cpu, "memory": memory},
        "requests": {"aliyun.com/gpu-mem": str(gib), "cpu": cpu, "memory": memory},
    }
    env = [{"name": f"SETTING_{k}", "value": f"value-{rng.getrandbits(40):x}"} for k in range(rng.randint(4, 10))]
    env.append({"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}})
    container = {
        "args": ["--model", f"/models/{app}", "--port", "8080", "--workers", str(rng.randint(1, 8))],
        "env": env,
        "image": f"registry.example.com/ml/{app}:v{rng.randint(1, 40)}.{rng.randint(0, 9)}",
        "imagePullPolicy": "IfNotPresent",
        "livenessProbe": {
            "failureThreshold": 3,
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        },
        "name": "server",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": resources,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {"mountPath": "/models", "name": "models", "readOnly": True},
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": f"kube-api-access-{rng.getrandbits(20):05x}",
                "readOnly": True,
            },
        ],
    }
    labels = {"app": app, "team": f"team-{i % 97}", "pod-template-hash": f"{rng.getrandbits(32):08x}"}
    spec_fields = {
        f"f:{k}": {}
        for k in (
            "dnsPolicy",
            "enableServiceLinks",
            "restartPolicy",
            "schedulerName",
            "securityContext",
            "terminationGracePeriodSeconds",
        )
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {"kubernetes.io/psp": "ack.privileged", "prometheus.io/scrape": "true"},
            "creationTimestamp": STAMP,
            "generateName": f"{app}-{labels['pod-template-hash']}-",
            "labels": labels,
            "managedFields": [
                _managed(
                    "kube-controller-manager",
                    "Update",
                    {
                        "f:metadata": {
                            "f:generateName": {},
                            "f:labels": {f"f:{k}": {} for k in labels},
                            "f:ownerReferences": {},
                        },
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"server"}': {
                                    "f:env": {},
                                    "f:image": {},
                                    "f:resources": {"f:limits": {}, "f:requests": {}},
                                }
                            },
                            **spec_fields,
                        },
                    },
                ),
                _managed(
                    "kube-scheduler",
                    "Update",
                    {
                        "f:status": {
                            "f:conditions": {
                                'k:{"type":"PodScheduled"}': {"f:message": {}, "f:reason": {}, "f:status": {}}
                            }
                        }
                    },
                ),
            ],
            "name": f"{app}-{labels['pod-template-hash']}-{i:06d}",
            "namespace": f"ns-{i % 23}",
            "resourceVersion": str(rng.randint(10**6, 10**8)),
            "uid": str(uuid.UUID(int=rng.getrandbits(128))),
        },
        "spec": {
            "containers": [container],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [
                {"name": "models", "persistentVolumeClaim": {"claimName": f"models-{i % 31}", "readOnly": True}},
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                        ],
                    },
                },
            ],
        },
        "status": {
            "conditions": [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": STAMP,
                    "message": "0/2000 nodes are available: 2000 Insufficient aliyun.com/gpu-mem.",
                    "reason": "Unschedulable",
                    "status": "False",
                    "type": "PodScheduled",
                }
            ],
            "phase": "Pending",
            "qosClass": "Guaranteed",
        },
    }


def as_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def generate(directory: Path, nodes: int, pods: int) -> dict[str, Path]:
    """nodes.yaml/json and pods.yaml/json as kubectl writes them, made once per size. Each file is written beside
    its name and renamed into place, so an interrupted run leaves no half file to be taken for a made one. A
    directory that cannot be written ends the script with one line (exit 2)."""
    files = {
        f"{what}.{fmt}": directory / f"{what}-{count}.{fmt}"
        for what, count in (("nodes", nodes), ("pods", pods))
        for fmt in ("yaml", "json")
    }
    if all(p.exists() for p in files.values()):
        return files
    try:
        directory.mkdir(parents=True, exist_ok=True)
        rng = random.Random(42)
        for what, count, make in (("nodes", nodes, node), ("pods", pods, pod)):
            document = as_list([make(i, rng) for i in range(count)])
            _write(files[f"{what}.json"], _json, document)
            _write(files[f"{what}.yaml"], _yaml, document)
    except OSError as exc:
        print(f"--dir: {directory} cannot hold the inputs ({exc.strerror})", file=sys.stderr)
        raise SystemExit(2) from None
    return files


def _json(document: Any, handle: Any) -> None:
    handle.write(json.dumps(document, indent=4))  # kubectl indents JSON by 4


def _yaml(document: Any, handle: Any) -> None:
    yaml.dump(document, handle, Dumper=_Dumper, default_flow_style=False, sort_keys=True, width=1 << 20)


def _write(path: Path, dump: Callable[[Any, Any], None], document: Any) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w") as handle:
            dump(document, handle)
        partial.rename(path)
    finally:
        partial.unlink(missing_ok=True)


def _tree_memory(pid: int) -> tuple[int, int]:
    """(KiB a process and its descendants hold now, the largest peak any one of them reached so far). The reader
    forks a second process for a large file, which shares pages with the first: each page is counted once,
    split between the processes that map it (the proportional set size)."""
    total, highest, todo = 0, 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            found = re.search(r"^VmHWM:\s+(\d+)", status, re.M)
            highest = max(highest, int(found.group(1)) if found else 0)
            found = re.search(r"^Pss:\s+(\d+)", Path(f"/proc/{current}/smaps_rollup").read_text(), re.M)
            total += int(found.group(1)) if found else 0
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total, highest


#: Where the processes run: `python -m` puts the working directory first on the path, and in the repository that
#: would run its source tree rather than the installed gpushare (whose engine a wheel has compiled).
_OUTSIDE = "/"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak MiB) of one whole process with any process it forks: the largest sum of their
    proportional set sizes, sampled every 100 ms (reading them is not free: every 20 ms cost a large run 20%),
    and never less than the peak the kernel recorded for any one of them (the process's own, at its end, counts
    the children it waited for)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, cwd=_OUTSIDE)
    peak = 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, *_tree_memory(process.pid))
        time.sleep(0.1)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed with exit {process.returncode}")
    return elapsed, max(peak, usage.ru_maxrss) / 1024


#: The layouts the same pods are written in: kubectl's Lists, Lists with their fields in another order (as other tools
#: and people write them), a stream of documents as written by hand, and JSON Lists laid out otherwise.
LAYOUTS = ("yaml-kubectl", "yaml-kind-first", "yaml-stream", "json-kubectl", "json-kind-first", "json-minified")


def layout_files(directory: Path, pods: int) -> dict[str, Path]:
    """The same pods in each of LAYOUTS, made once per size (as `generate` makes its files)."""
    files = {layout: directory / f"layout-{pods}-{layout}.{layout.split('-')[0]}" for layout in LAYOUTS}
    if all(p.exists() for p in files.values()):
        return files
    rng = random.Random(7)
    items = [pod(i, rng) for i in range(pods)]
    kubectl = as_list(items)
    kind_first = {"kind": "List", "metadata": kubectl["metadata"], "apiVersion": "v1", "items": items}

    def hand(document: Any, handle: Any) -> None:
        """Documents between `---` lines, keys in the order people write them, a comment on each, now and then an
        empty document and an explicit end."""
        handle.write("# pods for the dry run\n")
        for i, item in enumerate(document):
            handle.write(f"---\n# pod {i}\n" + ("---\n" if i % 100 == 99 else ""))
            yaml.dump(item, handle, Dumper=_Dumper, default_flow_style=False, sort_keys=False, width=1 << 20)
            handle.write("...\n" if i % 50 == 49 else "")

    def unsorted(document: Any, handle: Any) -> None:
        yaml.dump(document, handle, Dumper=_Dumper, default_flow_style=False, sort_keys=False, width=1 << 20)

    writers: dict[str, tuple[Callable[[Any, Any], None], Any]] = {
        "yaml-kubectl": (_yaml, kubectl),
        "yaml-kind-first": (unsorted, kind_first),
        "yaml-stream": (hand, items),
        "json-kubectl": (_json, kubectl),
        "json-kind-first": (_json, kind_first),  # kubectl's indentation: the order of the fields is what differs
        "json-minified": (lambda d, h: h.write(json.dumps(d, separators=(",", ":"))), kind_first),
    }
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for layout, (dump, document) in writers.items():
            if not files[layout].exists():
                _write(files[layout], dump, document)
    except OSError as exc:
        print(f"--dir: {directory} cannot hold the inputs ({exc.strerror})", file=sys.stderr)
        raise SystemExit(2) from None
    return files


def best(run: Callable[[], float], times: int) -> float:
    return min(run() for _ in range(times))


def read_in_process(path: Path) -> float:
    """Seconds to read a file as `place` reads its inputs (`read_paths`), in this process."""
    from gpushare.kube.documents import read_paths

    started = time.perf_counter()
    read_paths([str(path)])
    return time.perf_counter() - started


def layouts(directory: Path, pods: int, runs: int) -> int:
    """Each layout's time per pod, reading as `place` does and `validate` as a whole process, against the fastest
    layout: the best of `runs` runs each, run in turn so that a slow spell of the machine falls on all alike."""
    started = time.perf_counter()
    files = layout_files(directory, pods)
    print(
        f"\n{pods:,} pods in {len(files)} layouts, in {directory} ({time.perf_counter() - started:.0f}s): "
        + ", ".join(f"{k} {v.stat().st_size / 2**20:.0f} MiB" for k, v in files.items())
    )
    gpushare = [sys.executable, "-m", "gpushare"]
    cases: dict[str, Callable[[Path], float]] = {
        "read (as place)": read_in_process,
        "validate": lambda path: timed([*gpushare, "validate", str(path), "-o", "json", "-q"], dict(os.environ))[0],
    }
    seconds: dict[tuple[str, str], float] = {}
    for _ in range(runs):
        for case, run in cases.items():
            for layout, path in files.items():
                took = run(path)
                seconds[case, layout] = min(seconds.get((case, layout), took), took)
    # The target compares the layouts of one format: YAML is read by rapidyaml, then emitted and decoded as JSON,
    # which no layout of it can avoid; the ratio to the fastest of all is shown as well.
    worst = 0.0
    for case in cases:
        fastest = min(seconds[case, layout] for layout in files)
        print(f"\n{case}: best of {runs}")
        print(
            f"{'layout':<16} {'pods':>8} {'seconds':>8} {'us/pod':>7} {'MB/s':>6} {'x fastest':>9}"
            f" {'x fastest of format':>19}"
        )
        for layout, path in files.items():
            took = seconds[case, layout]
            own = min(seconds[case, other] for other in files if other.split("-")[0] == layout.split("-")[0])
            worst = max(worst, took / own)
            print(
                f"{layout:<16} {pods:>8,} {took:>8.2f} {took / pods * 1e6:>7.1f}"
                f" {path.stat().st_size / 1e6 / took:>6.0f} {took / fastest:>9.2f} {took / own:>19.2f}"
            )
    print(f"\nslowest layout: x{worst:.2f} the fastest of its format, per pod (target: within x1.5)")
    return 0 if worst <= 1.5 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=None, help="pods per run; a comma list shows how cost grows with size")
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "gpushare-bench-inputs")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also run the strict reader (GPUSHARE_READER=pyyaml) and print the ratio",
    )
    parser.add_argument(
        "--layouts",
        action="store_true",
        help="time each layout of the same pods (default 10000 pods) reading as place does and validating",
    )
    parser.add_argument("--runs", type=int, default=3, help="with --layouts: runs of each case, the best kept")
    args = parser.parse_args()
    if args.layouts:
        return layouts(args.dir.resolve(), int(args.pods or 10_000), args.runs)
    args.pods = args.pods or "100000"
    gpushare = [sys.executable, "-m", "gpushare"]
    print(subprocess.run([*gpushare, "--version"], capture_output=True, text=True, cwd=_OUTSIDE).stdout.strip())
    upstream = ["-o", "json", "-q", "--semantics", "upstream", "--scheduler-name", "default-scheduler"]
    per_item: dict[str, list[tuple[int, float]]] = {}
    for pods in (int(p) for p in args.pods.split(",")):
        started = time.perf_counter()
        files = generate(args.dir.resolve(), args.nodes, pods)
        print(
            f"\n{pods:,} pods, inputs in {args.dir} ({time.perf_counter() - started:.0f}s): "
            + ", ".join(f"{k} {v.stat().st_size / 2**20:.0f} MiB" for k, v in files.items())
        )

        def place(fmt: str, files: dict[str, Path] = files) -> list[str]:
            return [*gpushare, "place", "--nodes", str(files[f"nodes.{fmt}"]), str(files[f"pods.{fmt}"]), *upstream]

        cases = [
            ("place, YAML", place("yaml"), ("nodes.yaml", "pods.yaml")),
            ("place, JSON", place("json"), ("nodes.json", "pods.json")),
            ("validate, YAML", [*gpushare, "validate", str(files["pods.yaml"]), "-o", "json", "-q"], ("pods.yaml",)),
        ]
        header = f"{'case':<16} {'wall s':>7} {'items/s':>9} {'target':>8} {'peak MiB':>9} {'x input':>8}"
        print(header + ("  strict: wall s, peak MiB, ratio" if args.baseline else ""))
        for name, argv, inputs in cases:
            target = TARGETS[name]
            size = sum(files[f].stat().st_size for f in inputs) / 2**20
            wall, peak = timed(argv, dict(os.environ))
            per_item.setdefault(name, []).append((pods, wall / pods))
            line = f"{name:<16} {wall:>7.1f} {pods / wall:>9,.0f} {target:>8,} {peak:>9,.0f} {peak / size:>8.1f}"
            if args.baseline:
                old, old_peak = timed(argv, {**os.environ, "GPUSHARE_READER": "pyyaml"})
                line += f"  {old:>7.1f} {old_peak:>9,.0f}  x{old / wall:.1f} faster"
            print(line, flush=True)
    if len(per_item["place, YAML"]) > 1:
        print("\nwhole-process cost per item (us) as the input grows (linear cost: the figures stay flat or fall)")
        for name, rows in per_item.items():
            print(f"{name:<16} " + "  ".join(f"{pods:>7,}: {cost * 1e6:>6.0f}" for pods, cost in rows))
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    return 0


def run(entry: Callable[[], int]) -> None:
    """A benchmark's main, ended by Ctrl-C with one line (exit 130) rather than a traceback."""
    try:
        sys.exit(entry())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    run(main)
