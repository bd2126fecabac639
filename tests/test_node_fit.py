"""Node-level fit as kube-scheduler counts it (noderesources/fit.go computePodResourceRequest, framework/types.go
calculateResource): a pod asks max(sum of its containers, its largest init container) of every resource, for the
pod being placed and for every pod already on the node, before the extender looks at single GPUs."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.placement import Semantics, place


def served(name: str) -> Semantics:
    """The pods here name no scheduler: the scheduler gpushare serves is the default one."""
    return Semantics(name, scheduler_name="default-scheduler")  # type: ignore[arg-type]


def node(name: str, gpus: int = 2, per_gpu: int = 8, **extra: str) -> dict[str, Any]:
    capacity = {
        "cpu": "8",
        "memory": "32Gi",
        "pods": "110",
        "aliyun.com/gpu-mem": str(gpus * per_gpu),
        "aliyun.com/gpu-count": str(gpus),
        **extra,
    }
    return {"kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity, "allocatable": capacity}}


def pod(name: str, containers: list[dict[str, Any]], init: list[dict[str, Any]] = (), **spec: Any) -> dict[str, Any]:  # type: ignore[assignment]
    def c(i: int, limits: dict[str, Any]) -> dict[str, Any]:
        return {"name": f"c{i}", "resources": {"limits": limits, "requests": limits}}

    body: dict[str, Any] = {"containers": [c(i, x) for i, x in enumerate(containers)], **spec}
    if init:
        body["initContainers"] = [c(i, x) for i, x in enumerate(init)]
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": body}


@pytest.mark.parametrize("semantics", ["upstream", "ack"])
def test_an_init_container_larger_than_the_node_keeps_the_pod_pending(semantics: str) -> None:
    # containers ask 4 units (one GPU of 8 holds them); the init container asks 20: more than the node's 16
    big_init = pod("p", [{"aliyun.com/gpu-mem": "4"}], init=[{"aliyun.com/gpu-mem": "20"}])
    result = place([node("a")], [big_init], semantics=served(semantics))
    (pending,) = result.pending
    assert pending.reasons == (("Insufficient aliyun.com/gpu-mem", 1),)
    # the same pod without the init container lands, on the first GPU that holds it
    placed = place([node("a")], [pod("p", [{"aliyun.com/gpu-mem": "4"}])], semantics=served(semantics)).placements
    assert [(a.name, a.node, a.gpus) for a in placed] == [("p", "a", ((0, 4),))]


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_running_pods_count_their_init_containers_at_node_level(engine: str) -> None:
    # the running pod holds 2 units on GPU 0 (its containers) but 12 at node level (its init container):
    # 16 - 12 = 4 left on the node, though the GPUs have 6 + 8 free
    running = pod("old", [{"aliyun.com/gpu-mem": "2"}], init=[{"aliyun.com/gpu-mem": "12"}], nodeName="a")
    running["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "2"}  # as bound
    new = [pod("fits", [{"aliyun.com/gpu-mem": "4"}]), pod("too-big", [{"aliyun.com/gpu-mem": "1"}])]
    result = place([node("a")], new, existing=[running], semantics=served("upstream"), engine=engine)
    assert [a.name for a in result.placements] == ["fits"]
    assert result.placements[0].gpus == ((0, 4),)  # best fit: GPU 0 has 6 free, GPU 1 has 8
    assert result.pending[0].reasons == (("Insufficient aliyun.com/gpu-mem", 1),)
    assert result.nodes[0].gpu_mem_used == 16 and [g.used for g in result.nodes[0].gpus] == [6, 0]


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_cpu_and_extended_resources_use_the_same_rule(engine: str) -> None:
    nodes = [node("a", **{"example.com/fpga": "1"}), node("b")]
    init_cpu = pod("init-cpu", [{"cpu": "1"}], init=[{"cpu": "9"}])  # 9 cores at node level: no node has them
    fpga = pod("fpga", [{"cpu": "1", "example.com/fpga": "1"}])  # only node a has an FPGA
    second_fpga = pod("fpga-2", [{"cpu": "1"}], init=[{"example.com/fpga": "1"}])  # the init container wants it
    result = place(nodes, [init_cpu, fpga, second_fpga], semantics=served("upstream"), engine=engine)
    assert [(a.name, a.node) for a in result.placements] == [("fpga", "a")]
    reasons = {p.name: dict(p.reasons) for p in result.pending}
    assert reasons["init-cpu"] == {"Insufficient cpu": 2}
    assert reasons["fpga-2"] == {"Insufficient example.com/fpga": 2}


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_gpu_memory_without_a_gpu_count_makes_no_device_for_the_extender(engine: str) -> None:
    """The extender's NodeInfo makes one device per gpu-count: a node advertising gpu-mem alone never takes a GPU
    pod (its filter says no device has room), and the run says why; ACK's device plugin reports both, and such a node
    is taken there as one GPU."""
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "16"}
    bare = {"kind": "Node", "metadata": {"name": "bare"}, "status": {"capacity": capacity, "allocatable": capacity}}
    pods = [pod("gpu", [{"aliyun.com/gpu-mem": "1"}]), pod("cpu-only", [{"cpu": "1"}])]
    upstream = place([bare], pods, semantics=served("upstream"), engine=engine)
    assert [a.name for a in upstream.placements] == ["cpu-only"]
    assert upstream.pending[0].reasons == (("Insufficient GPU Memory in one device", 1),)
    assert any("bare: aliyun.com/gpu-mem without aliyun.com/gpu-count" in w for w in upstream.warnings)
    ack = place([bare], pods, semantics=served("ack"), engine=engine)
    assert [(a.name, a.gpus) for a in ack.placements] == [("gpu", ((0, 1),)), ("cpu-only", ())]
    assert not ack.warnings


@pytest.mark.parametrize(
    ("annotations", "upstream_used", "ack_used"),
    [
        ({"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "6"}, [0, 6], [0, 6]),
        (
            {"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "3"},
            [0, 3],
            [0, 3],
        ),  # the annotation, not the limit
        # no ALIYUN_COM_GPU_MEM_POD: the extender reads 0 on device 1; ACK reads no allocation, and the dry run puts
        # the pod where a bind would (the fullest device that holds it: both are empty, the first)
        ({"ALIYUN_COM_GPU_MEM_IDX": "1"}, [0, 0], [6, 0]),
        ({"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "six"}, [0, 0], [6, 0]),
        ({"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "-2"}, [0, 0], [0, 0]),
        ({"ALIYUN_COM_GPU_MEM_IDX": " 1", "ALIYUN_COM_GPU_MEM_POD": "6"}, [0, 0], [6, 0]),  # Atoi takes no space
        ({"ALIYUN_COM_GPU_MEM_IDX": "0,1", "ALIYUN_COM_GPU_MEM_POD": "6"}, [0, 0], [6, 0]),  # nor a list
        ({"ALIYUN_COM_GPU_MEM_IDX": "7", "ALIYUN_COM_GPU_MEM_POD": "6"}, [0, 0], [0, 0]),  # nor a device the node lacks
        # ACK's own allocation (JSON: container -> device -> units), which the extender does not read
        ({"scheduler.framework.gpushare.allocation": '{"0":{"1":6}}'}, [0, 0], [0, 6]),
    ],
)
def test_a_bound_pod_holds_on_its_device_what_its_annotations_say(
    annotations: dict[str, str], upstream_used: list[int], ack_used: list[int]
) -> None:
    """Each scheduler's cache counts a bound pod by its annotations (`kube.ledger.held`: the extender by Atoi,
    GetGPUIDFromAnnotation and GetGPUMemoryFromPodAnnotation; ACK its allocation, else the extender's share),
    kube-scheduler's node level by its limits."""
    running = pod("old", [{"aliyun.com/gpu-mem": "6"}], nodeName="a")
    running["metadata"]["annotations"] = annotations
    upstream = place([node("a")], [], existing=[running], semantics=served("upstream"))
    assert [g.used for g in upstream.nodes[0].gpus] == upstream_used
    assert upstream.nodes[0].gpu_mem_used == 6
    ack = place([node("a")], [], existing=[running], semantics=served("ack"))
    assert [g.used for g in ack.nodes[0].gpus] == ack_used


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_a_pod_created_with_its_node_named_is_bound_past_the_scheduler(engine: str) -> None:
    """spec.nodeName set at creation: kube-scheduler never queues the pod and the extender never annotates it. It
    counts at node level from then on but on no device, so the next pod's best fit is GPU 0 again (both devices have
    8 free); one naming a node that does not exist stays pending. ACK assigns it a device as a bind would."""
    created = [
        pod("first", [{"aliyun.com/gpu-mem": "8"}]),
        pod("preset", [{"aliyun.com/gpu-mem": "6"}], nodeName="a"),
        pod("next", [{"aliyun.com/gpu-mem": "2"}]),
        pod("lost", [{"aliyun.com/gpu-mem": "1"}], nodeName="gone"),
    ]
    result = place([node("a"), node("b")], created, semantics=served("upstream"), engine=engine)
    where = {a.name: (a.node, a.gpus) for a in result.placements}
    # first: both nodes empty, tied; preset lands on a whatever it holds, with no device
    assert where["preset"] == ("a", ())
    assert [p.name for p in result.pending] == ["lost"]
    node_a = next(n for n in result.nodes if n.name == "a")
    assert node_a.gpu_mem_used == 6 + sum(8 for name in ("first",) if where[name][0] == "a") + (
        2 if where["next"][0] == "a" else 0
    )
    assert any("preset sets spec.nodeName a: bound at creation" in w for w in result.warnings)
    assert any("lost sets spec.nodeName gone: no such node" in w for w in result.warnings)
    alone = place([node("a")], created[1:3], semantics=served("upstream"), engine=engine)
    assert [(a.name, a.gpus) for a in alone.placements] == [("preset", ()), ("next", ((0, 2),))]
    ack = place([node("a")], created[1:3], semantics=served("ack"), engine=engine)
    assert [(a.name, a.gpus) for a in ack.placements] == [("preset", ((0, 6),)), ("next", ((0, 2),))]


@pytest.mark.parametrize(
    "containers,init",
    [([{"aliyun.com/gpu-mem": "0"}], []), ([{"cpu": "1"}], [{"aliyun.com/gpu-mem": "2"}])],
    ids=["zero-in-limits", "init-container-only"],
)
def test_a_pod_naming_gpu_memory_but_asking_none_never_binds_upstream(
    containers: list[dict[str, Any]], init: list[dict[str, Any]]
) -> None:
    """The API server takes the pod and kube-scheduler tries it: it counts an init container's gpu-mem at node level
    and asks the extender about any pod naming aliyun.com/gpu-mem (IsInterested reads init containers too); the
    extender's filter passes a pod asking 0 over its containers, and its bind finds a device only for a request
    above 0: HTTP 500 on every retry, the pod pending with that error. Where no node has the init container's
    gpu-mem at node level, the filters leave it pending first. ACK's scheduler is not public: there the pod is
    placed, and validate warns."""
    from gpushare.policy.validate import validate

    asks_none = pod("asks-none", containers, init=init)
    upstream = place([node("a")], [asks_none], semantics=served("upstream"))
    (pending,) = upstream.pending
    assert pending.message == "failed bind with extender at URL <the extender's urlPrefix>/bind, code 500"
    assert not upstream.placements and not upstream.invalid
    assert [f.rule.id for f in upstream.findings] == ["GW217"] and "never runs" in upstream.findings[0].allowed
    if init:
        too_big = pod("too-big", containers, init=[{"aliyun.com/gpu-mem": "17"}])
        (pending,) = place([node("a")], [too_big], semantics=served("upstream")).pending
        assert pending.message.startswith("0/1 nodes are available: 1 Insufficient aliyun.com/gpu-mem.")
    ack = place([node("a")], [asks_none], semantics=served("ack"))
    assert [a.name for a in ack.placements] == ["asks-none"] and not ack.invalid
    assert [f.rule.id for f in ack.findings] == ["GW217"]  # placed, as ACK's scheduler is not public: said all the same
    findings = validate([asks_none]).findings
    assert [(f.rule.id, f.rule.severity) for f in findings if f.rule.id == "GW217"] == [("GW217", "error")]


def quota(hard: dict[str, str], used: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu", "namespace": "ml"},
        "spec": {"hard": hard, **spec},
    }
    if used is not None:
        body["status"] = {"hard": hard, "used": used}
    return body


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_the_api_server_refuses_a_pod_past_its_namespaces_quota(engine: str) -> None:
    """ResourceQuota admission at creation: a pod that would take requests.aliyun.com/gpu-mem past the quota is never
    created, whatever room the nodes have; later, smaller pods still fit the quota. Without status.used the running
    pods of the namespace are what the controller would have counted."""
    running = pod("old", [{"aliyun.com/gpu-mem": "3"}], nodeName="a")
    running["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "3"}
    new = [pod("p1", [{"aliyun.com/gpu-mem": "4"}]), pod("p2", [{"aliyun.com/gpu-mem": "4"}])]
    new.append(pod("p3", [{"aliyun.com/gpu-mem": "1"}]))
    limit = quota({"requests.aliyun.com/gpu-mem": "8"})
    result = place([node("a"), node("b")], new, existing=[running, limit], semantics=served("upstream"), engine=engine)
    assert sorted(a.name for a in result.placements) == ["p1", "p3"]
    (refused,) = result.invalid
    assert refused.name == "p2" and refused.reason == (
        'pods "p2" is forbidden: exceeded quota: gpu, requested: requests.aliyun.com/gpu-mem=4, '
        "used: requests.aliyun.com/gpu-mem=7, limited: requests.aliyun.com/gpu-mem=8"
    )
    # the controller's status wins where it is given (it counted nothing here): 4 + 4 reach the limit, 1 more not
    stated = quota({"requests.aliyun.com/gpu-mem": "8", "pods": "10"}, used={"requests.aliyun.com/gpu-mem": "0"})
    free = place([node("a"), node("b")], new, existing=[running, stated], semantics=served("upstream"), engine=engine)
    assert sorted(a.name for a in free.placements) == ["p1", "p2"] and [i.name for i in free.invalid] == ["p3"]
    scoped = quota({"requests.aliyun.com/gpu-mem": "1"}, scopes=["BestEffort"])
    unchecked = place([node("a")], new[:1], existing=[scoped], semantics=served("ack"), engine=engine)
    assert len(unchecked.placements) == 1
    assert any("ResourceQuota ml/gpu: not checked: scopes" in w for w in unchecked.warnings)


@pytest.mark.parametrize(("minor", "fits"), [(28, True), (29, False), (36, False)])
def test_a_sidecar_adds_to_the_containers_and_to_later_init_containers_from_1_29(minor: int, fits: bool) -> None:
    """PodRequests with SidecarContainers (1.29 on): a sidecar (init container with restartPolicy Always) runs beside
    the containers, so cpu 1 + sidecar 2 = 3 after start and sidecar 2 + the next init container 2 = 4 while it runs:
    4 cpus. Before, every init container alone: max(1, 2, 2) = 2."""
    from gpushare.domain.minors import scoring_profile

    asks = pod("p", [{"cpu": "1", "aliyun.com/gpu-mem": "1"}], init=[{"cpu": "2"}, {"cpu": "2"}])
    asks["spec"]["initContainers"][0]["restartPolicy"] = "Always"
    cpus3 = node("a", cpu="3")
    semantics = Semantics("upstream", scheduler_name="default-scheduler", scheduler=scoring_profile(minor))
    result = place([cpus3], [asks], semantics=semantics)
    assert bool(result.placements) is fits
    if not fits:
        assert result.pending[0].reasons == (("Insufficient cpu", 1),)


def test_a_pod_naming_its_node_is_bound_whatever_scheduler_it_names_and_a_malformed_node_name_is_refused() -> None:
    named = pod("named", [{"aliyun.com/gpu-mem": "2"}], nodeName="a", schedulerName="another-scheduler")
    odd = pod("odd", [{"aliyun.com/gpu-mem": "2"}], nodeName=["a"])
    result = place([node("a")], [named, odd], semantics=served("upstream"))
    assert [a.name for a in result.placements] == ["named"] and not result.not_served
    (invalid,) = result.invalid
    assert invalid.name == "odd" and invalid.reason.startswith("spec.nodeName: ['a'] is not allowed; expected a node")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", (0, True)),
        ("007", (7, True)),
        ("+3", (3, True)),
        ("-1", (-1, True)),
        (str(2**63 - 1), (2**63 - 1, True)),
        (str(2**63), (2**63 - 1, False)),  # beyond Go's int: Atoi's range error, the value clamped
        (str(-(2**63)), (-(2**63), True)),
        (str(-(2**63) - 1), (-(2**63), False)),
        ("0" * 20 + "5", (5, True)),  # leading zeros, however many
        ("7" * 5000, (2**63 - 1, False)),
        ("-" + "7" * 5000, (-(2**63), False)),
        ("", (0, False)),
        (" 1", (0, False)),
        ("1 ", (0, False)),
        ("0,1", (0, False)),
        ("\uff11", (0, False)),  # a fullwidth digit: a digit to Python, not to Go
        ("\u00b2", (0, False)),  # superscript two, likewise
        (4, (4, True)),
    ],
)
def test_annotations_are_read_as_go_atoi_reads_them(text: object, value: tuple[int, bool]) -> None:
    """strconv.Atoi: a syntax error returns 0, a range error the nearest bound, both with an error."""
    from gpushare.kube.ledger import go_atoi

    assert go_atoi(text) == value
