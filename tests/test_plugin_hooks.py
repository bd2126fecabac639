"""A score plugin added to a profile: the fast engine places as the reference engine does whether or not the
plugin declares how the score index holds it (`Plugin.score_hook`); without a hook the fast engine scores node by
node, and `--explain` says so. The plugins here are written for the test, as a contributor would add one."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from placement_strategies import scenario
from test_placement_properties import snapshot

from gpushare.domain.minors import scoring_profile
from gpushare.placement import LOCAL, Node, Plugin, Pod, Profile, Semantics, Simulation, profile

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _toy(node: Node) -> int:
    """A score from 0 to 100 that depends on the node's name only: unlike any plugin kube-scheduler has."""
    return zlib.crc32(node.name.encode()) % 101


class Toy(Plugin):
    """Prefers nodes by a hash of their name; declares no hook, so no index knows it."""

    name = "ToyScore"

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return [_toy(n) for n in feasible]


class IndexedToy(Toy):
    """The same score, declared to the score index as a node's own score that no bind changes."""

    name = "IndexedToyScore"

    def score_hook(self) -> str | None:
        return LOCAL

    def node_score(self, node: Node, pod: Pod) -> int:
        return _toy(node)


def _with(plugin: Plugin, weight: int, semantics: Semantics) -> Profile:
    base = profile(semantics)
    return replace(base, scores=(*base.scores, (plugin, weight)))


def _nodes(count: int) -> list[dict[str, Any]]:
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "1"}
    return [
        {"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": capacity, "allocatable": capacity}}
        for i in range(count)
    ]


def _pod(name: str) -> dict[str, Any]:
    limits = {"aliyun.com/gpu-mem": "4"}
    return {
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }


UPSTREAM = Semantics("upstream", gpu_memory_unit="GiB", scheduler_name="default-scheduler")


def test_the_toy_decides_where_a_pod_lands_in_both_engines() -> None:
    """On identical empty nodes every kube-scheduler plugin ties: a heavy toy picks the node it scores highest."""
    nodes = _nodes(6)
    best = max((f"n{i}" for i in range(6)), key=lambda name: zlib.crc32(name.encode()) % 101)
    for plugin in (Toy(), IndexedToy()):
        custom = _with(plugin, 10, UPSTREAM)
        for engine in ("fast", "reference"):
            result = Simulation.of(nodes, [_pod("p")], semantics=UPSTREAM, profile=custom).run(engine=engine)
            assert [a.node for a in result.placements] == [best], (plugin.name, engine)


def test_explain_says_which_score_plugin_no_index_holds() -> None:
    nodes, pods = _nodes(3), [_pod("p"), _pod("q")]
    said = "score plugin ToyScore declares no hook for the fast path's score index"
    toy = _with(Toy(), 1, UPSTREAM)
    unindexed = Simulation.of(nodes, pods, semantics=UPSTREAM, profile=toy).run(engine="fast", explain=True)
    assert any(said in w for w in unindexed.warnings)
    indexed = Simulation.of(nodes, pods, semantics=UPSTREAM, profile=_with(IndexedToy(), 1, UPSTREAM))
    assert not any("declares no hook" in w for w in indexed.run(engine="fast", explain=True).warnings)
    quiet = Simulation.of(nodes, pods, semantics=UPSTREAM, profile=_with(Toy(), 1, UPSTREAM))
    assert not any("declares no hook" in w for w in quiet.run(engine="fast").warnings)  # said under --explain only


@SETTINGS
@given(scenario(), st.sampled_from([Toy, IndexedToy]), st.integers(1, 5))
def test_a_toy_score_plugin_places_as_the_reference_engine(case: dict[str, Any], kind: type[Toy], weight: int) -> None:
    semantics = Semantics(
        "upstream",
        case["placement"],
        case["unit"] if case["unit"] != "128MiB" else "1GiB",
        case["cgpu_cap"],
        scoring_profile(case["minor"], case["api"]),
        "default-scheduler",
    )
    unit = semantics.gpu_memory_unit if case["input_unit"] == case["unit"] else case["input_unit"]
    custom = _with(kind(), weight, semantics)
    runs = [
        Simulation.of(
            case["nodes"], case["pods"], existing=case["existing"], semantics=semantics, input_unit=unit, profile=custom
        ).run(engine=engine, node_order=case["node_order"], explain=True)
        for engine in ("fast", "reference")
    ]
    assert snapshot(runs[0]) == snapshot(runs[1])
