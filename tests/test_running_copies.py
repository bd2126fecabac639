"""Running pods modelled as copies of one read before (`inputs._Alike`) are the pods a whole read makes.

A fleet's pods are replicas of a few templates, and the model's build reads a pod whose spec and metadata equal an
earlier one's (but for its name, node, the extender's annotations and start time) as a copy of it. Here random
fleets of such replicas, some changed in one field that does matter, are built both ways: the model must not
tell them apart.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpushare.domain import labels
from gpushare.domain.products import SECONDARY_SCHEDULER_NAME
from gpushare.kube.documents import Source
from gpushare.kube.workloads import read_workload
from gpushare.placement.inputs import _TRIAL, _Alike, build, to_pod, unit_ratio
from gpushare.placement.model import Semantics
from gpushare.placement.pluginsets import profile

TEMPLATES: list[dict[str, Any]] = [
    {
        "metadata": {"namespace": "ml", "labels": {"app": "serve", "pod-template-hash": "abc"}},
        "spec": {
            "schedulerName": SECONDARY_SCHEDULER_NAME,
            "containers": [{"name": "c", "resources": {"limits": {labels.GPU_MEM: 4}}}],
        },
    },
    {
        "metadata": {"namespace": "ml", "labels": {"app": "train"}},
        "spec": {
            "schedulerName": SECONDARY_SCHEDULER_NAME,
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "containers": [{"name": "c", "image": "t:1", "resources": {"limits": {labels.GPU_MEM: 8, "cpu": "2"}}}],
        },
    },
    {
        "metadata": {"namespace": "other", "labels": {"app": "serve", "pod-template-hash": "abc"}},
        "spec": {
            "schedulerName": SECONDARY_SCHEDULER_NAME,
            "containers": [{"name": "c", "resources": {"limits": {labels.GPU_MEM: 4}}}],
        },
    },
]

#: Changes to a replica that its model must show (each makes it differ from its template).
CHANGES = {
    "memory": lambda obj: obj["spec"]["containers"][0]["resources"]["limits"].update({labels.GPU_MEM: 2}),
    "label": lambda obj: obj["metadata"]["labels"].update({"app": "other"}),
    "owner": lambda obj: obj["metadata"].update(
        {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}]}
    ),
    "priority": lambda obj: obj["spec"].update({"priority": 1000}),
    "selector": lambda obj: obj["spec"].update({"nodeSelector": {"pool": "a"}}),
    "node name not a string": lambda obj: obj["spec"].update({"nodeName": 7}),
    "no node": lambda obj: obj["spec"].pop("nodeName"),
    "invalid": lambda obj: obj["spec"]["containers"][0]["resources"]["limits"].update({labels.GPU_MEM: "x"}),
    "succeeded": lambda obj: obj.update({"status": {"phase": "Succeeded"}}),
    "uid": lambda obj: obj["metadata"].update({"uid": "u-1"}),
}

replica = st.tuples(
    st.integers(0, len(TEMPLATES) - 1),
    st.integers(0, 3),  # node
    st.one_of(st.none(), st.sampled_from(sorted(CHANGES))),
    st.one_of(st.none(), st.integers(0, 3)),  # the GPU index annotation
    st.one_of(st.none(), st.sampled_from(["4", "8", "x", "-1"])),  # the GPU memory annotation
)


def _pod(i: int, template: int, node: int, change: str | None, index: int | None, memory: str | None) -> Source:
    obj = copy.deepcopy(TEMPLATES[template])
    obj = {"apiVersion": "v1", "kind": "Pod", **obj}
    obj["metadata"]["name"] = f"p-{i}"
    notes = {}
    if index is not None:
        notes[labels.ANN_IDX] = str(index)
    if memory is not None:
        notes[labels.ANN_POD_MEM] = memory
    if notes:
        obj["metadata"]["annotations"] = notes
    obj["spec"]["nodeName"] = f"n{node}"
    obj["status"] = {"phase": "Running", "startTime": f"2026-11-27T10:00:{i % 60:02d}Z"}
    if change is not None:
        CHANGES[change](obj)
    return Source(obj, "pods.yaml", i + 1)


def _node(i: int) -> Source:
    capacity = {labels.GPU_MEM: 32, labels.GPU_COUNT: 2, "cpu": "32", "memory": "128Gi", "pods": "110"}
    meta = {"name": f"n{i}", "labels": {labels.SCHEDULE_LABEL: "true"}}
    return Source({"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"capacity": capacity}}, "n")


@settings(max_examples=150, deadline=None)
@given(st.lists(replica, min_size=1, max_size=40), st.sampled_from(["ack", "upstream"]))
def test_a_replica_read_as_a_copy_is_the_pod_read_whole(replicas: list[Any], name: str) -> None:
    semantics = Semantics(name=name)
    pods = [_pod(i, *r) for i, r in enumerate(replicas)]
    model = build([_node(i) for i in range(4)], pods, [], semantics)
    plugins, ratio = profile(semantics), unit_ratio(semantics.gpu_memory_unit, semantics)
    whole = []
    for src in pods:
        view = read_workload(src)
        if view is not None and src.obj.get("status", {}).get("phase") != "Succeeded":
            whole.append(to_pod(view, plugins, ratio))
    assert model.existing == whole


def test_copies_stop_being_looked_for_where_few_pods_are_copies() -> None:
    """Documents read whole (each pod's own volume names, uid) are never copies: after its trial the search stops,
    and every pod is still read."""
    semantics = Semantics()
    pods = [_pod(i, 0, 0, "uid", None, None) for i in range(_TRIAL + 50)]
    for i, src in enumerate(pods):
        src.obj["metadata"]["uid"] = f"u-{i}"
    alike = _Alike(profile(semantics), unit_ratio(semantics.gpu_memory_unit, semantics))
    plugins, ratio = profile(semantics), unit_ratio(semantics.gpu_memory_unit, semantics)
    for src in pods:
        assert alike.copy(src) is None
        view = read_workload(src)
        assert view is not None
        alike.keep(src, to_pod(view, plugins, ratio))
    assert not alike.on and alike.hits == 0
    assert len(build([_node(0)], pods, [], semantics).existing) == len(pods)


def test_replicas_of_one_template_are_copies_of_the_first() -> None:
    semantics = Semantics()
    plugins, ratio = profile(semantics), unit_ratio(semantics.gpu_memory_unit, semantics)
    alike = _Alike(plugins, ratio)
    for i in range(20):
        src = _pod(i, 0, i % 4, None, i % 2, "4")
        pod = alike.copy(src)
        if pod is None:
            view = read_workload(src)
            assert view is not None
            alike.keep(src, to_pod(view, plugins, ratio))
        else:
            assert (pod.name, pod.node, pod.gpu_held) == (f"p-{i}", f"n{i % 4}", ((i % 2, 4),))
    assert alike.hits == 19
