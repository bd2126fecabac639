"""The fast engine agrees exactly with the reference engine, and both keep the invariants."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from placement_strategies import scenario

from gpushare.placement import PlacementResult, Semantics, place

SETTINGS = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def snapshot(result: PlacementResult) -> dict[str, Any]:
    return {
        "placements": result.placements,
        "pending": result.pending,
        "invalid": result.invalid,
        "nodes": [
            (
                n.name,
                n.cpu_used,
                n.memory_used,
                n.pods_used,
                n.gpu_mem_used,
                [(g.used, g.core_used, g.pods) for g in n.gpus],
            )
            for n in result.nodes
        ],
    }


def check_invariants(result: PlacementResult, semantics: Semantics) -> None:
    placed = {p.key for p in result.placements}
    for node in result.nodes:
        assert node.cpu_used <= node.cpu and node.memory_used <= node.memory and node.pods_used <= node.pods
        assert node.gpu_mem_used <= node.gpu_mem
        for gpu in node.gpus:
            assert gpu.used <= gpu.total
            assert gpu.core_used <= gpu.core_total
            if not gpu.healthy:
                assert gpu.used == 0, f"unhealthy GPU used on {node.name}"
        if semantics.name == "ack":
            assert not (node.mem_only_pods and node.compute_pods), f"modes mixed on {node.name}"
    for pending in result.pending:
        assert pending.key not in placed
        assert pending.reasons or pending.nodes == 0
        assert sum(count for _, count in pending.reasons) >= pending.nodes
        assert len(pending.by_node) == pending.nodes and all(r.plugin and r.reasons for _, r in pending.by_node)
    for assignment in result.placements:
        assert len({index for index, _ in assignment.gpus}) == len(assignment.gpus)


@SETTINGS
@given(scenario())
def test_fast_engine_equals_reference(case: dict[str, Any]) -> None:
    semantics = Semantics(case["semantics"], case["placement"])
    fast = place(case["nodes"], case["pods"], semantics=semantics, engine="fast", explain=True)
    ref = place(case["nodes"], case["pods"], semantics=semantics, engine="reference", explain=True)
    assert snapshot(fast) == snapshot(ref)
    check_invariants(fast, semantics)
