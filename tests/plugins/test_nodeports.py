"""NodePorts (framework/plugins/nodeports): host ports conflict on a node by protocol, port and address, where
0.0.0.0 (or no hostIP) is every address; the cases of upstream's TestNodePorts (nodeports/node_ports_test.go), then
whole runs through both engines and both semantics, and the sidecar ports the minors differ on."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.domain.minors import scoring_profile
from gpushare.kube.podspec import HostPort
from gpushare.placement import Semantics, place
from gpushare.placement.plugins.nodeports import REASON, conflicts


def ports(*specs: str) -> list[HostPort]:
    """'UDP/127.0.0.1/8080' -> HostPort, as the pod-spec reader fills them in."""
    found = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        found.append(HostPort(protocol, ip, int(port)))
    return found


# TestNodePorts: (name, the new pod's ports, the ports pods on the node hold, fits)
CASES = [
    ("nothing running", [], [], True),
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    (
        "first tcp port conflict",
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        False,
    ),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        False,
    ),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        False,
    ),
]


@pytest.mark.parametrize(("name", "wanted", "used", "fits"), CASES, ids=[c[0] for c in CASES])
def test_conflicts_as_upstream_node_ports(name: str, wanted: list[str], used: list[str], fits: bool) -> None:
    held = ports(*used)
    assert (not any(conflicts(held, p) for p in ports(*wanted))) is fits


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "2"}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity, "allocatable": capacity}}


def pod(name: str, port: dict[str, Any] | None, sidecar: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": "1"}}}
    if port is not None:
        container["ports"] = [{"containerPort": 80, **port}]
    body: dict[str, Any] = {"containers": [container], **spec}
    if sidecar is not None:
        body["initContainers"] = [
            {"name": "side", "restartPolicy": "Always", "ports": [{"containerPort": 81, **sidecar}]}
        ]
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": body}


def semantics(name: str, minor: int = 36) -> Semantics:
    return Semantics(name, scheduler_name="default-scheduler", scheduler=scoring_profile(minor))  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize("name", ["upstream", "ack"])
def test_a_second_pod_on_the_same_host_port_goes_elsewhere_then_waits(engine: str, name: str) -> None:
    pods = [pod(f"p{i}", {"hostPort": 8080}) for i in range(3)] + [pod("udp", {"hostPort": 8080, "protocol": "UDP"})]
    result = place([node("a"), node("b")], pods, semantics=semantics(name), engine=engine)
    where = {a.name: a.node for a in result.placements}
    assert sorted(where.get(p, "") for p in ("p0", "p1")) == ["a", "b"] and "udp" in where
    (pending,) = result.pending
    assert (pending.name, pending.reasons) == ("p2", ((REASON, 2),))


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_a_running_pod_holds_its_port_on_one_address(engine: str) -> None:
    running = pod("old", {"hostPort": 9000, "hostIP": "10.0.0.1"}, nodeName="a")
    new = [pod("any", {"hostPort": 9000}), pod("other-ip", {"hostPort": 9000, "hostIP": "10.0.0.2"})]
    result = place([node("a")], new, existing=[running], semantics=semantics("upstream"), engine=engine)
    assert [a.name for a in result.placements] == ["other-ip"]
    assert result.pending[0].name == "any" and result.pending[0].reasons == ((REASON, 1),)


@pytest.mark.parametrize(("minor", "counted"), [(28, False), (32, False), (33, True), (36, True)])
def test_sidecar_ports_count_from_1_33(minor: int, counted: bool) -> None:
    """kubernetes#132040 (1.34, 1.33.6): a sidecar's (restartPolicy Always) host port is the pod's; an ordinary init
    container's never is (it has exited before the containers start)."""
    running = pod("old", None, sidecar={"hostPort": 7000}, nodeName="a")
    plain_init = pod("init-only", None, nodeName="a")
    plain_init["spec"]["initContainers"] = [{"name": "i", "ports": [{"containerPort": 1, "hostPort": 7001}]}]
    new = [pod("same", {"hostPort": 7000}), pod("after-init", {"hostPort": 7001})]
    result = place([node("a")], new, existing=[running, plain_init], semantics=semantics("upstream", minor))
    placed = [a.name for a in result.placements]
    assert placed == (["after-init"] if counted else ["same", "after-init"])
