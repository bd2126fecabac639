"""`gpushare watch` as a process against a real kube-apiserver, scraped by a real Prometheus.

Pods bound and deleted and nodes added move the metrics within 2 s; the apiserver restarted while the watcher was
stopped (its watches then too old for the new watch cache: 410 Gone, a relist) leaves a model equal to a fresh
list's; PromQL over what Prometheus scraped returns what `doctor` and `capacity` say of the same moment, and the
chart's alerts fire on a planted double allocation; promtool passes the exposition; under the chart's RBAC the
watcher reads and nothing more (a write and a Secret refused); SIGTERM ends it cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import ControlPlane, free_port
from kube import api, create_node, gpu_node, service_account_kubeconfig
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client.parser import text_string_to_metric_families
from toolchain import PROMETHEUS, PROMTOOL, need_tool

from gpushare.generate.components.watch import DASHBOARD, rule_groups
from gpushare.generate.render import render
from gpushare.generate.stack import Stack
from gpushare.generate.template import resolve

pytestmark = pytest.mark.e2e
MINORS = (28, 36)
NS = "default"
LEDGER = ("gpushare_gpu_", "gpushare_node_", "gpushare_pool_", "gpushare_pending_gpu_pods{", "gpushare_template_")
TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "llm", "namespace": NS},
    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"aliyun.com/gpu-mem": "6"}}}]},
}


def gpushare(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpushare", *args], capture_output=True, text=True, timeout=timeout)


def gpu_pod(core: client.CoreV1Api, name: str, node: str | None, units: int, idx: int = 0) -> None:
    annotations = {}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}}}]
    }
    if node is not None:
        annotations = {
            "ALIYUN_COM_GPU_MEM_IDX": str(idx),
            "ALIYUN_COM_GPU_MEM_POD": str(units),
            "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
            "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(time.time_ns()),
        }
        spec["nodeName"] = node
    core.create_namespaced_pod(NS, {"metadata": {"name": name, "annotations": annotations}, "spec": spec})


class Watcher:
    """`gpushare watch` in a process of its own, and its HTTP answers."""

    def __init__(self, cluster: ControlPlane, kubeconfig: Path, template: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = cluster.workdir / f"watch-{self.port}.log"
        self.popen = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpushare",
                "watch",
                "--kubeconfig",
                str(kubeconfig),
                "--listen",
                f"127.0.0.1:{self.port}",
                "--template",
                str(template),
                "--debounce",
                "0.2",
                "--heavy-every",
                "0.5",
                "--doctor-every",
                "0.5",
                "--resync",
                "3600",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "wb"),  # noqa: SIM115 - the process's
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while self.get("/readyz")[0] != 200:
            assert self.popen.poll() is None and time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError as exc:
            return 0, str(exc)

    def series(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        status, text = self.get("/metrics")
        assert status == 200, f"/metrics: {status} {text}\n{self.log.read_text()[-3000:]}"
        return parse(text)

    def wait(self, check: Any, limit: float) -> float:
        """Seconds until `check(series)` holds, failing past `limit`."""
        started = time.monotonic()
        while True:
            if check(self.series()):
                return time.monotonic() - started
            assert time.monotonic() - started < limit, f"not within {limit}s:\n{self.log.read_text()[-3000:]}"
            time.sleep(0.05)

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(20)


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def ledger(found: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[Any, float]:
    """The series a fresh list must give alike (not the watch's own health, not ages)."""
    return {
        k: v
        for k, v in found.items()
        if any((k[0] + "{").startswith(p) or k[0].startswith(p) for p in LEDGER) and not k[0].endswith("_seconds")
    }


def allocated(node: str, gpu: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    return ("gpushare_gpu_memory_allocated_units", (("gpu", str(gpu)), ("node", node), ("unit", "1GiB")))


@pytest.fixture(scope="module")
def fleet(cluster: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[client.CoreV1Api, Path]]:
    core = api(cluster.kubeconfig)
    for name in ("w-a", "w-b"):
        create_node(core, *gpu_node(name, 2, 16, {"ack.node.gpu.schedule": "share"}))
    gpu_pod(core, "run-1", "w-a", 10, 0)
    gpu_pod(core, "wait-1", None, 20)
    template = tmp_path_factory.mktemp("watch") / "llm.yaml"
    template.write_text(yaml.safe_dump(TEMPLATE))
    yield core, template


def test_binds_deletions_and_new_nodes_move_the_metrics_within_2s(
    cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path]
) -> None:
    core, template = fleet
    watcher = Watcher(cluster, cluster.kubeconfig, template)
    try:
        assert watcher.series()[allocated("w-a", 0)] == 10
        gpu_pod(core, "run-2", "w-b", 7, 1)
        took = [watcher.wait(lambda s: s.get(allocated("w-b", 1)) == 7, 2.0)]
        core.delete_namespaced_pod("run-2", NS, grace_period_seconds=0)
        took.append(watcher.wait(lambda s: s.get(allocated("w-b", 1)) == 0, 2.0))
        create_node(core, *gpu_node("w-c", 4, 8))
        took.append(watcher.wait(lambda s: s.get(allocated("w-c", 3)) == 0, 2.0))
        gpu_pod(core, "run-3", "w-c", 5, 3)
        took.append(watcher.wait(lambda s: s.get(allocated("w-c", 3)) == 5, 2.0))
        print(f"metrics moved in {', '.join(f'{t:.2f}' for t in took)} s")
        assert watcher.stop() == 0  # SIGTERM: a clean end
        assert "stopped (SIGTERM)" in watcher.log.read_text()
    finally:
        watcher.stop()


def test_a_restart_and_an_expired_watch_leave_the_model_a_fresh_list_gives(
    cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path]
) -> None:
    core, template = fleet
    watcher = Watcher(cluster, cluster.kubeconfig, template)
    try:
        os.killpg(watcher.popen.pid, signal.SIGSTOP)  # it sees none of what follows as it happens
        cluster.restart_apiserver()  # its watches cut before anything changes: no event of what follows reaches it
        gpu_pod(core, "while-1", "w-a", 3, 1)
        gpu_pod(core, "wait-2", None, 2)
        core.delete_namespaced_pod("run-1", NS, grace_period_seconds=0)
        create_node(core, *gpu_node("w-d", 1, 24))
        gpu_pod(core, "while-2", "w-d", 9, 0)
        cluster.compact_etcd()  # the history its watches would resume from is gone
        cluster.restart_apiserver()  # and the new watch cache starts after it: they resume from a version too old
        os.killpg(watcher.popen.pid, signal.SIGCONT)
        fresh = gpushare("watch", "--kubeconfig", str(cluster.kubeconfig), "--once", "--template", str(template))
        assert fresh.returncode == 0, fresh.stderr
        want = ledger(parse(fresh.stdout))
        relisted = 'gpushare_watch_relists_total{kind="Pod"}'
        watcher.wait(lambda s: ledger(s) == want, 30.0)
        text = watcher.get("/metrics")[1]
        assert relisted in text, "no relist: the resumed watch was not refused as too old (410)"
        assert want[allocated("w-d", 0)] == 9 and want[allocated("w-a", 0)] == 0
    finally:
        watcher.stop()


def prometheus(cluster: ControlPlane, target: str, rules: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = cluster.workdir / f"prometheus-{port}.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(rules)],
                "scrape_configs": [{"job_name": "gpushare", "static_configs": [{"targets": [target]}]}],
            }
        )
    )
    log = open(cluster.workdir / f"prometheus-{port}.log", "wb")  # noqa: SIM115 - the process's
    popen = subprocess.Popen(
        [
            str(need_tool(PROMETHEUS)),
            f"--config.file={config}",
            f"--storage.tsdb.path={cluster.workdir / f'tsdb-{port}'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=5) as response:
                if response.status == 200:
                    return popen, url
        except OSError:
            pass
        assert popen.poll() is None and time.monotonic() < deadline, "Prometheus did not start"
        time.sleep(0.2)


def query(url: str, promql: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/api/v1/query?query={urllib.parse.quote(promql)}", timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def chart_rules(tmp: Path, minor: int) -> Path:
    """The chart's PrometheusRule (alerts firing at once: forMinutes 0) as promtool's and Prometheus' rules file."""
    rendered = render(
        format="chart",
        kube_version=f"1.{minor}",
        watch_enabled=True,
        watch_image_repository="example.com/gpushare",
        watch_alerts_for_minutes=0,
        watch_alerts_headroom_below=1000,
    )
    groups = rule_groups(Stack(rendered.settings).ctx)
    path = tmp / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": resolve(groups)}))
    checked = subprocess.run([str(need_tool(PROMTOOL)), "check", "rules", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return path


def test_prometheus_scrapes_it_and_promql_says_what_doctor_and_capacity_say(
    cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path], tmp_path: Path
) -> None:
    core, template = fleet
    gpu_pod(core, "twice-1", "w-b", 12, 0)
    gpu_pod(core, "twice-2", "w-b", 9, 0)  # GPU 0 of w-b: 21 of 16 (double allocation, GL602)
    watcher = Watcher(cluster, cluster.kubeconfig, template)
    server, url = prometheus(cluster, f"127.0.0.1:{watcher.port}", chart_rules(tmp_path, cluster.minor))
    try:
        checked = subprocess.run(
            [str(need_tool(PROMTOOL)), "check", "metrics"],
            input=watcher.get("/metrics")[1],
            capture_output=True,
            text=True,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        deadline = time.monotonic() + 90
        while not query(url, 'gpushare_doctor_findings{rule="GL602"}') or not query(
            url, "gpushare_template_headroom_replicas"
        ):
            assert server.poll() is None and time.monotonic() < deadline, "Prometheus scraped nothing"
            time.sleep(0.5)
        time.sleep(2)  # a scrape of the settled state
        doctor = gpushare("doctor", "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
        by_rule: dict[str, int] = {}
        for finding in json.loads(doctor.stdout)["findings"]:
            by_rule[finding["rule"]] = by_rule.get(finding["rule"], 0) + 1
        scraped = {r["metric"]["rule"]: int(float(r["value"][1])) for r in query(url, "gpushare_doctor_findings")}
        assert scraped == by_rule and by_rule.get("GL602") == 1
        capacity = gpushare(
            "capacity",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--template",
            str(template),
            "--max-moves",
            "0",
            "-o",
            "json",
        )
        asked = json.loads(capacity.stdout)["templates"][0]
        (headroom,) = query(url, "gpushare_template_headroom_replicas")
        assert headroom["metric"]["template"] == asked["name"] and int(float(headroom["value"][1])) == asked["more"]
        used = sum(float(r["value"][1]) for r in query(url, "gpushare_gpu_memory_allocated_units"))
        inspect = gpushare("inspect", "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
        held = sum(g["used"] for n in json.loads(inspect.stdout)["nodes"] for g in n["gpus"])
        assert used == held
        for panel in DASHBOARD["panels"]:  # the dashboard's queries, asked of the real Prometheus
            for target in panel["targets"]:
                query(url, target["expr"])
        deadline = time.monotonic() + 30
        while True:  # the chart's alert, evaluated by Prometheus on what it scraped
            with urllib.request.urlopen(f"{url}/api/v1/alerts", timeout=10) as response:
                alerts = {a["labels"]["alertname"]: a["state"] for a in json.loads(response.read())["data"]["alerts"]}
            if alerts.get("GpushareDoubleAllocation") == "firing" and alerts.get("GpushareHeadroomLow") == "firing":
                break
            assert time.monotonic() < deadline, alerts
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(10)
        watcher.stop()
        core.delete_namespaced_pod("twice-1", NS, grace_period_seconds=0)
        core.delete_namespaced_pod("twice-2", NS, grace_period_seconds=0)


def watch_access_kubeconfig(cluster: ControlPlane, core: client.CoreV1Api) -> Path:
    """`watch_access`'s kubeconfig, made once for the cluster."""
    path = cluster.workdir / "watch.kubeconfig"
    return path if path.exists() else watch_access(cluster, core)


def watch_access(cluster: ControlPlane, core: client.CoreV1Api) -> Path:
    """The chart's watch ServiceAccount, ClusterRole and binding as rendered, and a kubeconfig with its token."""
    rendered = render(
        format="manifests",
        kube_version=f"1.{cluster.minor}",
        watch_enabled=True,
        watch_image_repository="example.com/gpushare",
    )
    objects = [o for o in rendered.objects if o["metadata"]["name"].endswith("-watch")]
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "Service", "ServiceAccount"]
    return service_account_kubeconfig(cluster, core, objects, "watch")


def test_under_the_charts_access_it_watches_and_cannot_write(
    cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path]
) -> None:
    core, template = fleet
    access = watch_access_kubeconfig(cluster, core)
    watcher = Watcher(cluster, access, template)
    try:
        found = watcher.series()
        assert allocated("w-a", 0) in found and not [k for k in found if k[0] == "gpushare_watch_rejected_objects"]
        deadline = time.monotonic() + 10
        while "ready:" not in watcher.log.read_text():  # said once the first refresh is served
            assert time.monotonic() < deadline, watcher.log.read_text()
            time.sleep(0.1)
        ready = next(line for line in watcher.log.read_text().splitlines() if "ready:" in line)
        assert "not read" not in ready  # every kind it lists, its access lets it list and watch
        gpu_pod(core, "seen-1", "w-a", 2, 1)
        watcher.wait(lambda s: (s.get(allocated("w-a", 1)) or 0) >= 2, 5.0)
        reader = api(access)
        for attempt in (
            lambda: reader.create_namespaced_config_map(NS, {"metadata": {"name": "written-by-watch"}}),
            lambda: reader.patch_node("w-a", {"metadata": {"labels": {"x": "y"}}}),
            lambda: reader.list_secret_for_all_namespaces(),
        ):
            with pytest.raises(ApiException) as refused:
                attempt()
            assert refused.value.status == 403
    finally:
        watcher.stop()


def test_a_bad_object_in_the_stream_is_a_finding_never_a_crash(
    cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path]
) -> None:
    """A pod whose allocation annotation no reader can parse and a node reporting an absurd GPU memory reach the
    watch as events: it keeps serving, and doctor's findings on them are on /metrics (GL601, GN314)."""
    core, template = fleet
    watcher = Watcher(cluster, cluster.kubeconfig, template)
    try:
        gpu_pod(core, "garbled", "w-a", 2, 0)
        core.patch_namespaced_pod("garbled", NS, {"metadata": {"annotations": {"ALIYUN_COM_GPU_MEM_IDX": "zero"}}})
        node, status = gpu_node("w-huge", 1, 16)
        for reported in ("capacity", "allocatable"):
            status["status"][reported]["aliyun.com/gpu-mem"] = "1e15"
        create_node(core, node, status)
        finding = 'gpushare_doctor_findings{rule="%s",severity="error"}'

        def found(s: dict[Any, float]) -> bool:
            rules = {dict(k[1]).get("rule") for k in s if k[0] == "gpushare_doctor_findings"}
            return {"GL601", "GN314"} <= rules

        watcher.wait(found, 20.0)
        assert watcher.popen.poll() is None and watcher.get("/healthz")[0] == 200
        assert finding % "GL601" in watcher.get("/metrics")[1]
        started = time.monotonic()
        assert watcher.stop() == 0 and time.monotonic() - started < 10  # SIGTERM: well within a pod's 30 s
    finally:
        watcher.stop()
        core.delete_namespaced_pod("garbled", NS, grace_period_seconds=0)
        core.delete_node("w-huge")


def test_in_a_pod_it_reads_with_its_service_account(
    cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No kubeconfig and a ServiceAccount's token mounted as kubelet mounts it: the in-cluster configuration (the
    chart's Deployment runs so), under the chart's own access: it lists, and a write is refused."""
    from gpushare.kube import cluster as kube_cluster

    core, _ = fleet
    access = yaml.safe_load(watch_access_kubeconfig(cluster, core).read_text())
    mounted = tmp_path / "serviceaccount"
    mounted.mkdir()
    (mounted / "token").write_text(access["users"][0]["user"]["token"])
    (mounted / "ca.crt").write_bytes(cluster.pki.ca.read_bytes())
    monkeypatch.setattr(kube_cluster, "SERVICE_ACCOUNT", mounted)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(cluster.port))
    assert kube_cluster.in_a_pod()
    inside = kube_cluster.Cluster(None)
    assert "w-a" in {n.metadata.name for n in inside.core.list_node().items}
    with pytest.raises(ApiException) as refused:
        inside.core.create_namespaced_config_map(NS, {"metadata": {"name": "written-in-a-pod"}})
    assert refused.value.status == 403


def test_from_python(cluster: ControlPlane, fleet: tuple[client.CoreV1Api, Path]) -> None:
    """`gpushare.live.serve.watch`, the library's watch: the same answers as the command's, in the caller's process."""
    from gpushare.live.metrics import TEXT
    from gpushare.live.serve import watch

    core, _ = fleet
    gpu_pod(core, "from-python", "w-a", 3, 0)
    running = watch(str(cluster.kubeconfig))
    try:
        assert running.wait_ready(60)
        view = running.live.view
        assert view is not None
        found = parse(view.exposition[TEXT].body().decode())
        assert found[allocated("w-a", 0)] == sum(
            int(p.metadata.annotations.get("ALIYUN_COM_GPU_MEM_POD", 0))
            for p in core.list_namespaced_pod(NS).items
            if p.spec.node_name == "w-a" and (p.metadata.annotations or {}).get("ALIYUN_COM_GPU_MEM_IDX") == "0"
        )
        assert found[allocated("w-a", 0)] >= 3  # this test's own pod among them
        assert running.live.explain(f"{NS}/wait-1") is not None
    finally:
        running.stop()
        core.delete_namespaced_pod("from-python", NS, grace_period_seconds=0)
