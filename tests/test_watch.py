"""`gpushare watch` without a cluster: a model kept current event by event equals one built afresh from the same
objects (pods bound, deleted, queued and bound by the scheduler; nodes added, relabelled, deleted, one that cannot
be read), a bad object is a rejection and never a crash, and the HTTP server serves its five paths (GET only, with
content negotiation, timeouts), /capacity as `capacity -o json` answers on the same objects."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from helpers import gpu_deployment
from prometheus_client.parser import text_string_to_metric_families

from gpushare.domain.labels import NODE_POOL_LABEL
from gpushare.kube.cluster import WATCHES
from gpushare.kube.documents import Source
from gpushare.live import serve
from gpushare.live.metrics import TEXT, Moment, exposition, families
from gpushare.live.state import LiveState, encoded
from gpushare.placement import Semantics

NODE = next(i for i, listing in enumerate(WATCHES) if listing.kind == "Node")
POD = next(i for i, listing in enumerate(WATCHES) if listing.kind == "Pod")
LEDGER = ("gpushare_gpu_", "gpushare_node_", "gpushare_pool_", "gpushare_pending_", "gpushare_template_")


def node(name: str, gpus: int = 2, per_gpu: int = 16, pool: str | None = None) -> dict[str, Any]:
    capacity = {"cpu": "32", "memory": "64Gi", "pods": "110"}
    capacity |= {"aliyun.com/gpu-mem": str(gpus * per_gpu), "aliyun.com/gpu-count": str(gpus)}
    meta = {"name": name, "labels": {"kubernetes.io/hostname": name, **({NODE_POOL_LABEL: pool} if pool else {})}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"capacity": capacity}}


def pod(name: str, units: int, where: str | None = None, gpu: int = 0, phase: str = "Pending") -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}}}]},
        "status": {"phase": phase},
    }
    if where is not None:
        doc["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": str(gpu), "ALIYUN_COM_GPU_MEM_POD": str(units)}
        doc["spec"]["nodeName"] = where
        doc["status"]["phase"] = "Running"
    return doc


def template() -> dict[str, Any]:
    return gpu_deployment("llm", "ml", 6)


def listed(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], templates: bool = True) -> LiveState:
    """A state as the first lists leave it (every kind listed), built."""
    state = LiveState(Semantics(), [Source(template(), "llm.yaml")] if templates else [])
    for index in range(len(WATCHES)):
        items = nodes if index == NODE else pods if index == POD else []
        state.replace(index, encoded(index, copy.deepcopy(items)), 0.0)
    state.rebuild()
    return state


def samples(state: LiveState) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The ledger's series (the watch's own health left out) of a state, with the templates' headroom."""
    view = serve.Live(state, None).refresh(heavy=True)
    found = {}
    for family in text_string_to_metric_families(view.exposition[TEXT].body().decode()):
        for s in family.samples:
            if s.name.startswith(LEDGER) and not s.name.endswith("_oldest_seconds"):  # an age: the clock's
                found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


START_NODES = [node("a", pool="p1"), node("b", 1, 24, pool="p1")]
START_PODS = [pod("r1", 10, "a", 0), pod("r2", 4, "a", 1), pod("r3", 20, "b", 0), pod("w1", 12)]


def test_events_keep_the_model_equal_to_a_fresh_one() -> None:
    """Every kind of change, then the same objects read afresh: the same series, value for value."""
    state = listed(START_NODES, START_PODS)
    events: list[tuple[int, str, dict[str, Any]]] = [
        (POD, "ADDED", pod("r4", 6, "a", 1)),  # a running pod created
        (POD, "DELETED", pod("r2", 4, "a", 1)),  # one deleted
        (POD, "ADDED", pod("w2", 8)),  # a pod waits
        (POD, "MODIFIED", pod("w2", 8, "a", 0)),  # the scheduler bound it
        (POD, "MODIFIED", pod("r3", 20, "b", 0) | {"status": {"phase": "Succeeded"}}),  # it ended
        (NODE, "ADDED", node("c", 4, 8, pool="p2")),  # a node added
        (POD, "ADDED", pod("r5", 5, "c", 3)),  # a pod on it
        (NODE, "MODIFIED", node("c", 4, 8, pool="p3")),  # relabelled: its pod moves with it
        (POD, "ADDED", pod("r6", 3, "d", 0)),  # bound to a node the model does not hold yet
        (NODE, "ADDED", node("d", 1, 8)),  # then the node arrives
        (NODE, "DELETED", node("b", 1, 24)),  # a node deleted
    ]
    for index, kind, obj in events:
        state.event(index, kind, copy.deepcopy(obj), 1.0)
    assert not state.stale  # followed event by event: no rebuild
    live = samples(state)
    final_pods = [
        pod("r1", 10, "a", 0),
        pod("r3", 20, "b", 0) | {"status": {"phase": "Succeeded"}},
        pod("w1", 12),
        pod("r4", 6, "a", 1),
        pod("w2", 8, "a", 0),
        pod("r5", 5, "c", 3),
        pod("r6", 3, "d", 0),
    ]
    fresh = samples(listed([node("a", pool="p1"), node("c", 4, 8, pool="p3"), node("d", 1, 8)], final_pods))
    assert live == fresh
    used = {k[1]: v for k, v in live.items() if k[0] == "gpushare_gpu_memory_allocated_units"}
    assert used[(("gpu", "0"), ("node", "a"), ("unit", "1GiB"))] == 18  # r1 and w2
    assert used[(("gpu", "3"), ("node", "c"), ("unit", "1GiB"))] == 5
    assert used[(("gpu", "0"), ("node", "d"), ("unit", "1GiB"))] == 3
    assert ("gpushare_pool_gpu_memory_free_bytes", (("pool", "p3"),)) in live
    assert state.counts.rebuilds == 1  # the first build only (samples' fresh state is another)


def test_a_change_of_what_spreading_reads_rebuilds_once_at_the_next_refresh() -> None:
    state = listed(START_NODES, START_PODS)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ml"}, "spec": {}}
    index = next(i for i, listing in enumerate(WATCHES) if listing.kind == "Service")
    state.event(index, "ADDED", service, 1.0)
    state.event(POD, "ADDED", pod("r9", 1, "a", 1), 1.0)
    assert state.stale
    before = state.counts.rebuilds
    serve.Live(state, None).refresh()
    assert state.counts.rebuilds == before + 1 and not state.stale
    assert samples(state) == samples(listed(START_NODES, [*START_PODS, pod("r9", 1, "a", 1)]))


def test_a_status_only_update_changes_nothing() -> None:
    state = listed(START_NODES, START_PODS)
    version = state.version
    heartbeat = node("a", pool="p1")
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "now"}]
    heartbeat["metadata"]["resourceVersion"] = "99"
    state.event(NODE, "MODIFIED", heartbeat, 1.0)
    assert state.fleet is not None and not state.stale
    assert samples(state) == samples(listed(START_NODES, START_PODS))
    assert state.version == version + 1  # the object changed (kept as read); the model did not


def test_a_node_that_cannot_be_read_is_a_rejection_not_a_crash() -> None:
    state = listed(START_NODES, START_PODS)
    bad = node("x")
    bad["status"]["capacity"]["aliyun.com/gpu-mem"] = "lots"
    state.event(NODE, "ADDED", bad, 1.0)
    state.event(POD, "ADDED", pod("on-x", 2, "x", 0), 1.0)
    assert ("Node", "x") in state.rejected
    view = serve.Live(state, None).refresh()
    text = view.exposition[TEXT].body().decode()
    assert 'gpushare_watch_rejected_objects{kind="Node"} 1.0' in text
    assert 'node="x"' not in text
    state.event(NODE, "MODIFIED", node("x"), 2.0)  # mended: taken, with its pod
    assert ("Node", "x") not in state.rejected
    assert samples(state)[("gpushare_gpu_memory_allocated_units", (("gpu", "0"), ("node", "x"), ("unit", "1GiB")))] == 2


def test_a_relist_applies_what_the_events_missed() -> None:
    """After 410 Gone the kind is listed again: what changed meanwhile is applied as events would be."""
    state = listed(START_NODES, START_PODS)
    state.replace(POD, encoded(POD, [pod("r1", 10, "a", 0), pod("w1", 12), pod("n1", 7, "b", 0)]), 3.0)
    assert not state.stale
    assert samples(state) == samples(listed(START_NODES, [pod("r1", 10, "a", 0), pod("w1", 12), pod("n1", 7, "b", 0)]))


def test_the_metrics_library_and_the_served_ones_agree() -> None:
    state = listed(START_NODES, START_PODS, templates=False)
    assert state.fleet is not None
    direct = exposition(families(Moment(state.fleet, state.fleet.trial()))).decode()
    served = serve.Live(state, None).refresh().exposition[TEXT].body().decode()
    pick = [line for line in direct.splitlines() if line.startswith("gpushare_gpu_memory_allocated_units")]
    assert pick and all(line in served.splitlines() for line in pick)


# --- the HTTP server -----------------------------------------------------------------------------------------------


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[serve.Live, str]]:
    state = listed(START_NODES, START_PODS)
    live = serve.Live(state, None)
    httpd = serve.server(live, "127.0.0.1", 0)
    import threading

    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield live, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def get(url: str, accept: str = "", method: str = "GET") -> tuple[int, str, str]:
    request = urllib.request.Request(url, method=method, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def test_not_ready_until_the_first_refresh(running: tuple[serve.Live, str]) -> None:
    live, url = running
    assert get(f"{url}/readyz")[0] == 503
    assert get(f"{url}/metrics")[0] == 503
    live.refresh(heavy=True)
    assert get(f"{url}/readyz")[0] == 200


def test_metrics_in_the_format_asked(running: tuple[serve.Live, str]) -> None:
    live, url = running
    live.refresh(heavy=True)
    status, kind, text = get(f"{url}/metrics")
    assert status == 200 and kind.startswith("text/plain") and "# EOF" not in text
    assert 'gpushare_template_headroom_replicas{template="Deployment/ml/llm"}' in text
    status, kind, text = get(f"{url}/metrics", accept="application/openmetrics-text; version=1.0.0")
    assert status == 200 and kind.startswith("application/openmetrics-text") and text.endswith("# EOF\n")


def test_only_the_five_paths_and_only_get(running: tuple[serve.Live, str]) -> None:
    live, url = running
    live.refresh(heavy=True)
    assert get(f"{url}/")[0] == 404
    assert get(f"{url}/metrics/../secrets")[0] == 404
    assert get(f"{url}/metrics", method="POST")[0] == 405
    assert get(f"{url}/explain?pod=nopod")[0] == 400
    assert get(f"{url}/explain?pod=ml/none")[0] == 404
    status, _, body = get(f"{url}/capacity?template=nothing")
    assert status == 404 and json.loads(body)["templates"] == ["Deployment/ml/llm"]


def test_explain_a_pending_and_a_running_pod(running: tuple[serve.Live, str]) -> None:
    live, url = running
    live.refresh()
    status, _, body = get(f"{url}/explain?pod=ml/w1")
    doc = json.loads(body)
    assert status == 200 and doc["kind"] == "PlacementReport"
    (placed,) = doc["placements"]
    assert placed["name"] == "w1" and not doc["pending"]
    doc = json.loads(get(f"{url}/explain?pod=ml/r1")[2])
    assert doc["running"] == {"node": "a", "gpus": [{"index": 0, "units": 10}], "modelled": True}


def test_capacity_is_capacitys_answer(running: tuple[serve.Live, str], tmp_path: Path) -> None:
    """/capacity?template=llm equals `gpushare capacity -o json` on the same objects, template for template."""
    live, url = running
    live.refresh(heavy=True)
    served = json.loads(get(f"{url}/capacity?template=llm")[2])
    files = {"nodes.yaml": START_NODES, "existing.yaml": START_PODS[:3], "pending.yaml": START_PODS[3:]}
    for name, objects in files.items():
        (tmp_path / name).write_text(yaml.safe_dump_all(objects))
    (tmp_path / "llm.yaml").write_text(yaml.safe_dump(template()))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpushare",
            "capacity",
            "--nodes",
            str(tmp_path / "nodes.yaml"),
            "--existing",
            str(tmp_path / "existing.yaml"),
            str(tmp_path / "pending.yaml"),
            "--template",
            str(tmp_path / "llm.yaml"),
            "--max-moves",
            "0",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    asked = json.loads(result.stdout)
    assert served["templates"] == asked["templates"] and served["templates"][0]["more"] > 0


def test_an_idle_connection_is_let_go(running: tuple[serve.Live, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve._Quiet, "timeout", 0.5)
    _, url = running
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
        assert sock.recv(1024) == b""  # closed by the server
        assert time.monotonic() - started < 4


# --- the command's refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--listen", "9445"], "--listen"),
        (["--listen", "host:99999"], "--listen"),
        (["--templates-dir", "/nonexistent"], "--templates-dir"),
        (["--debounce", "0"], "--debounce"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], "kubeconfig"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpushare", "watch", *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr, result.stderr


def test_the_lines_kept_per_node_are_prometheus_clients_own() -> None:
    """The served exposition (per-GPU lines kept per node, formatted again only for nodes that changed) is byte for
    byte what prometheus_client writes for the same families, in both formats, before and after a change."""
    from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_text

    from gpushare.live.metrics import OPENMETRICS, NodeLines, _registry, encodings, figures

    state = listed(START_NODES, START_PODS, templates=False)
    lines = NodeLines()
    for step in range(2):
        assert state.fleet is not None
        moment = Moment(state.fleet, state.fleet.trial())
        served = encodings(figures(moment, lines))
        whole = families(moment)
        assert served[TEXT].body() == exposition(whole)
        assert served[OPENMETRICS].body() == openmetrics_text(_registry(whole))
        if step == 0:
            kept = lines.kept["b"]
            state.event(POD, "ADDED", pod("r7", 2, "a", 1), 1.0)
    assert lines.kept["b"] is kept  # b did not change: its lines were not made again


def test_a_template_that_is_none_is_refused_before_the_cluster_is_asked(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(yaml.safe_dump(node("a")))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpushare",
            "watch",
            "--kubeconfig",
            "/nonexistent",
            "--template",
            str(tmp_path / "node.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "--template kind: 'Node'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_address_in_use_is_refused_before_anything_starts() -> None:
    from gpushare.errors import InputError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=r"--listen.*free to listen on"):
            serve.start(object(), Semantics(), [], listen=("127.0.0.1", port))  # type: ignore[arg-type]  # never asked


def test_doctors_pass_is_the_same_in_a_forked_copy_and_where_none_can_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy reads the objects where they are; without one, the list is taken when the pass starts (with the
    lock held) and read when the answer is asked: an event applied in between is not in it."""
    from gpushare import process

    garbled = pod("r9", 4, "a", 0)
    garbled["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"] = "zero"
    forked = serve.Live(listed(START_NODES, [*START_PODS, garbled]), None)
    forked.doctor_now()
    assert forked._findings  # something for the two to agree on
    monkeypatch.setattr(process.Child, "start", classmethod(lambda cls, work: None))
    here = serve.Live(listed(START_NODES, [*START_PODS, garbled]), None)
    with here.state.lock:
        answer = here._doctor_started()
    here.state.event(POD, "DELETED", garbled, 1.0)
    here._doctor(answer)
    assert here._findings == forked._findings
    here.doctor_now()
    assert here._findings != forked._findings  # the garbled pod deleted: its finding gone


def test_pods_read_one_by_one_share_what_they_ask_for_as_long_as_the_watch_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods alike share one Ask (and labels, node names); when the table of shared values is full it starts
    afresh, so pods read after it still share (they did not: sharing stopped, and a long watch's new pods each
    held their own)."""
    from gpushare.placement import inputs

    monkeypatch.setattr(inputs, "_SHARED_MOST", 30)
    state = listed(START_NODES, [])
    assert state.fleet is not None
    docs = [pod(f"n{i}", 2 + i % 2, "a") for i in range(40)]
    for i, doc in enumerate(docs):  # labels of its own: each read whole, not as a copy of one read before
        doc["metadata"]["labels"] = {"i": str(i)}
    read = [state.fleet.read_pod(Source(doc, f"Pod/ml/n{i}")) for i, doc in enumerate(docs)]
    assert all(p is not None for p in read)
    asks = {id(p.ask) for p in read[-4:] if p is not None}
    assert len(asks) == 2  # two kinds of pod (2 and 3 units), each Ask once among the last ones read


def test_each_pods_name_is_one_string_the_tables_and_the_models() -> None:
    """A pod's name is held once: the key of the state's tables and its model's name, read by a rebuild or by an
    event alike (a key string of its own and a name apart were 21 MB at 150,000 pods)."""
    state = listed(START_NODES, START_PODS)
    state.event(POD, "ADDED", pod("r4", 6, "a", 1), 1.0)
    state.event(POD, "MODIFIED", pod("w1", 12, "a", 0), 1.0)
    held = {name: name for _, name, _ in state.objects[POD].entries()}
    read = list(state.pods.entries())
    assert len(read) == len(held) == 5
    for namespace, name, model in read:
        assert model.name is name and held[name] is name and model.namespace == namespace
    assert state.pods.find("ml/r4") is state.pods.get("ml", "r4") is not None
    assert state.pods.find("ml/gone") is None and state.objects[NODE].find("a") is not None


def test_the_applier_holds_nothing_it_applied() -> None:
    """A list applied is the state's alone: the applier waiting for the next item still held the last batch, and
    with it a first list, whose names and table a rebuild then could not let go of (10 MB at 150,000 pods)."""
    import gc

    from gpushare.live.watcher import Watcher, _Listed

    state = LiveState(Semantics())
    watcher = Watcher(cast(Any, None), state)  # no cluster read: the applier alone, fed by hand
    watcher.start(reading=False)
    try:
        listed_nodes = encoded(NODE, [node("a")])
        watcher.inbox.put(_Listed(NODE, listed_nodes, 0.0, False))
        deadline = time.monotonic() + 5
        held: list[Any] = [None]
        while held and time.monotonic() < deadline:
            time.sleep(0.05)
            held = [r for r in gc.get_referrers(listed_nodes) if r is not state.objects and r is not held]
        assert state.objects[NODE] is listed_nodes and not held
    finally:
        watcher.stop()
