"""A stand-in for the gpushare scheduler extender, written from its documented protocol, for the e2e tests.

The upstream extender (github.com/AliyunContainerService/gpushare-scheduler-extender) cannot be built here,
so this plays it behind the real kube-scheduler: the same HTTP verbs and Go-style JSON field names, the same
device model and choice, the same pod annotations. It is independent of the product on purpose (it does not
import gpushare), so a test that compares the two compares two readings of the protocol:

- `POST <prefix>/filter`: ExtenderArgs (`Pod`, `Nodes`, `NodeNames`) -> ExtenderFilterResult (`Nodes`,
  `NodeNames`, `FailedNodes`, `Error`). A node fits when its `aliyun.com/gpu-mem` capacity is above 0 and one
  healthy device has room for the pod's request (the sum of its containers' `aliyun.com/gpu-mem` limits); a
  request of 0 fits anywhere. Failed nodes say "Insufficient GPU Memory in one device".
- `POST <prefix>/bind`: ExtenderBindingArgs (`PodName`, `PodNamespace`, `PodUID`, `Node`) -> `{"Error": ...}`,
  HTTP 500 when it is not empty. The device is the smallest available one that fits, lowest index on ties; the
  pod gets `ALIYUN_COM_GPU_MEM_IDX/_POD/_DEV/_ASSIGNED=false/_ASSUME_TIME`, then the Binding is created.
- Devices: `aliyun.com/gpu-count` of them, each `capacity(gpu-mem) // gpu-count`; a device's use is the sum of
  `ALIYUN_COM_GPU_MEM_POD` over the GPU-sharing pods annotated with its index, both read as Go's Atoi reads them
  (a malformed index names no device, a malformed amount is 0), Succeeded and Failed pods left out;
  ConfigMap `kube-system/unhealthy-gpu-<node>`, key `gpus` ("0,2"), marks devices unhealthy.

It reads the API server on every call (no cache: slower than the real one, never stale) and keeps a log of
the calls it served, which the tests read.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

GPU_MEM = "aliyun.com/gpu-mem"
GPU_COUNT = "aliyun.com/gpu-count"
INSUFFICIENT = "Insufficient GPU Memory in one device"
#: Pods named so are the test's settle probes: the stand-in records the nodes kube-scheduler offered and refuses all.
SETTLE_PREFIX = "settle-"


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _atoi(value: Any) -> int | None:
    """Go's strconv.Atoi, as the extender reads its annotations: a sign and digits, else an error (None)."""
    text = None if value is None else str(value)
    return int(text) if text is not None and re.fullmatch(r"[+-]?[0-9]+", text) else None


def pod_request(pod: dict[str, Any]) -> int:
    """GPU memory the extender counts: containers only (init containers are not its business)."""
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        limits = ((container.get("resources") or {}).get("limits")) or {}
        total += _quantity(limits.get(GPU_MEM, 0))
    return total


@dataclass
class StandIn:
    kubeconfig: Path
    calls: list[tuple[str, str]] = field(default_factory=list)  # (verb, pod)
    errors: list[str] = field(default_factory=list)  # what a verb failed on, for the test to show
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Binds one at a time, as the extender allocates a device under its node's lock and records the pod in its
    #: cache before answering: a bind running beside another would not see its device taken (the pod's nodeName
    #: is set only by the Binding, after the annotations).
    binding: threading.Lock = field(default_factory=threading.Lock)
    offered: dict[str, set[str]] = field(default_factory=dict)  # settle probe -> nodes kube-scheduler offered it
    #: pod -> the nodes of each filter call, in the order kube-scheduler lists them (its filters' finishing order)
    filtered: dict[str, list[list[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        api = config.new_client_from_config(config_file=str(self.kubeconfig))
        self.core = client.CoreV1Api(api)
        self.plain = api.sanitize_for_serialization

    # --- the device model ---------------------------------------------------------------------------------
    def devices(self, node_name: str) -> list[tuple[int, int, bool]] | None:
        """(index, free, healthy) per device, or None when the node shares no GPU memory."""
        node = self.plain(self.core.read_node(node_name))
        capacity = (node.get("status") or {}).get("capacity") or {}
        total, count = _quantity(capacity.get(GPU_MEM, 0)), _quantity(capacity.get(GPU_COUNT, 0))
        if total <= 0 or count <= 0:
            return None
        per_device = total // count
        used = [0] * count
        pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node_name}").items
        for pod in (self.plain(p) for p in pods):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            if pod_request(pod) <= 0:  # the extender's cache holds GPU-sharing pods only
                continue
            annotations = (pod.get("metadata") or {}).get("annotations") or {}
            index = _atoi(annotations.get("ALIYUN_COM_GPU_MEM_IDX"))
            if index is not None and 0 <= index < count:
                used[index] += max(0, _atoi(annotations.get("ALIYUN_COM_GPU_MEM_POD")) or 0)
        unhealthy: set[int] = set()
        try:
            data = self.core.read_namespaced_config_map(f"unhealthy-gpu-{node_name}", "kube-system").data or {}
            unhealthy = {int(i) for i in re.findall(r"\d+", str(data.get("gpus", "")))}
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
        return [(i, per_device - used[i], i not in unhealthy) for i in range(count)]

    def choose(self, node_name: str, request: int) -> int | None:
        """Best fit: the healthy device with the least room that still holds the request; lowest index on ties."""
        devices = self.devices(node_name)
        if devices is None:
            return None
        fitting = [(free, i) for i, free, healthy in devices if healthy and free >= request]
        return min(fitting)[1] if fitting else None

    # --- the verbs ------------------------------------------------------------------------------------------
    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        pod = args.get("Pod") or {}
        request = pod_request(pod)
        names = args.get("NodeNames")
        if names is None:
            names = [n["metadata"]["name"] for n in ((args.get("Nodes") or {}).get("items") or [])]
        meta = pod.get("metadata") or {}
        with self.lock:
            self.filtered.setdefault(f"{meta.get('namespace')}/{meta.get('name')}", []).append(list(names))
        if str(meta.get("name", "")).startswith(SETTLE_PREFIX):
            with self.lock:
                self.offered.setdefault(f"{meta.get('namespace')}/{meta.get('name')}", set()).update(names)
            return {"Nodes": None, "NodeNames": [], "FailedNodes": dict.fromkeys(names, "settle probe"), "Error": ""}
        fits, failed = [], {}
        for name in names:
            if request == 0 or self.choose(name, request) is not None:
                fits.append(name)
            else:
                failed[name] = INSUFFICIENT
        self.record("filter", f"{meta.get('namespace')}/{meta.get('name')}")
        return {"Nodes": None, "NodeNames": fits, "FailedNodes": failed, "Error": ""}

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        namespace, name, node = args["PodNamespace"], args["PodName"], args["Node"]
        self.record("bind", f"{namespace}/{name}")
        try:
            pod = self.plain(self.core.read_namespaced_pod(name, namespace))
        except ApiException as exc:
            if exc.status != 404:
                raise
            # deleted while kube-scheduler was binding it (a test clearing its scenario): the bind fails, as the
            # extender's would, and the test has nothing to learn from it
            return {"Error": f"pod {namespace}/{name} not found"}
        with self.binding:
            return self._bind(pod, namespace, name, node, args.get("PodUID"))

    def _bind(self, pod: dict[str, Any], namespace: str, name: str, node: str, uid: Any) -> dict[str, Any]:
        request = pod_request(pod)
        index = self.choose(node, request) if request > 0 else None  # allocateGPUID looks only for a request > 0
        if index is None:
            return {"Error": "The node can't place the pod"}
        capacity = (self.plain(self.core.read_node(node)).get("status") or {}).get("capacity") or {}
        dev_total = _quantity(capacity.get(GPU_MEM, 0)) // max(1, _quantity(capacity.get(GPU_COUNT, 1)))
        self.core.patch_namespaced_pod(
            name,
            namespace,
            {
                "metadata": {
                    "annotations": {
                        "ALIYUN_COM_GPU_MEM_IDX": str(index),
                        "ALIYUN_COM_GPU_MEM_POD": str(request),
                        "ALIYUN_COM_GPU_MEM_DEV": str(dev_total),
                        "ALIYUN_COM_GPU_MEM_ASSIGNED": "false",
                        "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(time.time_ns()),
                    }
                }
            },
        )
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        # the API answers a Binding with a Status the generated client cannot read: take the response as it is
        self.core.create_namespaced_pod_binding(name, namespace, binding, _preload_content=False)
        return {"Error": ""}

    def record(self, verb: str, pod: str) -> None:
        with self.lock:
            self.calls.append((verb, pod))

    # --- the server -----------------------------------------------------------------------------------------
    def serve(self, port: int, prefix: str = "/gpushare-scheduler") -> ThreadingHTTPServer:
        """Listen on 127.0.0.1:`port` in a daemon thread; `shutdown()` the returned server to stop."""
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                args = json.loads(self.rfile.read(length) or b"{}")
                verb = self.path.removeprefix(prefix).strip("/")
                handler = {"filter": standin.filter, "bind": standin.bind}.get(verb)
                try:
                    if handler is None:
                        result, status = {"Error": f"unknown verb {verb}"}, 404
                    else:
                        result = handler(args)
                        status = 500 if result.get("Error") else 200
                except Exception as exc:  # the scheduler reads the error; the test reads the log
                    result, status = {"Error": f"{type(exc).__name__}: {exc}"}, 500
                    # a pod or node deleted (or being deleted) while the scheduler still held it (a scenario's
                    # cleanup racing a retry of a pending pod) fails that call, as it would the real extender's;
                    # anything else is a fault
                    if getattr(exc, "status", None) not in (404, 409):  # gone, or being deleted
                        standin.errors.append(f"{verb}: {result['Error']}")
                body = json.dumps(result).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                body = b"stand-in"
                self.send_response(200 if self.path == "/version" else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet: the calls are recorded instead
                return

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server
