"""The fast engine agrees exactly with the reference engine, and both keep the invariants."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from placement_strategies import alike_scenario, scenario

from gpushare.domain.labels import SCHEDULE_LABEL
from gpushare.domain.minors import scoring_profile
from gpushare.errors import InputError
from gpushare.placement import PlacementResult, Semantics, place

# examples per run: the hypothesis profile (tests/conftest.py: dev 100, CI 2,000)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def snapshot(result: PlacementResult) -> dict[str, Any]:
    return {
        "placements": result.placements,
        "pending": result.pending,
        "preempted": result.preempted,
        "invalid": result.invalid,
        "nodes": [
            (
                n.name,
                n.cpu_used,
                n.memory_used,
                n.pods_used,
                n.gpu_mem_used,
                sorted(n.other_used.items()),
                [(g.used, g.core_used, g.pods) for g in n.gpus],
            )
            for n in result.nodes
        ],
    }


def check_invariants(result: PlacementResult, before: PlacementResult, semantics: Semantics) -> None:
    """New placements never push a node or GPU past its capacity (running pods may already have: `before` is the
    fleet with only them), never use an unhealthy GPU, never mix memory-only and compute pods on a node."""
    placed = {p.key for p in result.placements}
    touched = {a.node for a in result.placements}
    for node, old in zip(result.nodes, before.nodes, strict=True):
        if node.name not in touched:
            continue
        for used, cap, was in (
            (node.cpu_used, node.cpu, old.cpu_used),
            (node.memory_used, node.memory, old.memory_used),
            (node.pods_used, node.pods, old.pods_used),
            (node.gpu_mem_used, node.gpu_mem, old.gpu_mem_used),
        ):
            assert used <= max(cap, was), f"{node.name} over capacity"
        for name, used in node.other_used.items():
            assert used <= max(node.other.get(name, 0), old.other_used.get(name, 0)), f"{node.name} over {name}"
        for gpu, old_gpu in zip(node.gpus, old.gpus, strict=True):
            assert gpu.used <= max(gpu.total, old_gpu.used)
            assert gpu.core_used <= max(gpu.core_total, old_gpu.core_used)
            if not gpu.healthy:
                assert gpu.used == old_gpu.used, f"unhealthy GPU used on {node.name}"
        if semantics.name == "ack" and not (old.mem_only_pods and old.compute_pods):
            assert not (node.mem_only_pods and node.compute_pods), f"modes mixed on {node.name}"
    for pending in result.pending:
        assert pending.key not in placed
        if pending.error:  # the filters passed, the bind failed
            assert not pending.reasons and not pending.by_node
            continue
        assert pending.reasons or pending.nodes == 0
        assert sum(count for _, count in pending.reasons) >= pending.nodes
        assert len(pending.by_node) == pending.nodes and all(r.plugin and r.reasons for _, r in pending.by_node)
    for assignment in result.placements:
        assert len({index for index, _ in assignment.gpus}) == len(assignment.gpus)


@SETTINGS
@given(scenario())
def test_fast_engine_equals_reference(case: dict[str, Any]) -> None:
    profile = scoring_profile(case["minor"], case["api"])
    # the pods name no scheduler: every semantics serves default-scheduler here (not-served pods: test_place_cli)
    semantics = Semantics(
        case["semantics"], case["placement"], case["unit"], case["cgpu_cap"], profile, "default-scheduler"
    )
    labels = [n.get("metadata", {}).get("labels") or {} for n in case["nodes"]]
    if case["unit"] == "128MiB" and any(node_labels.get(SCHEDULE_LABEL) == "core_mem" for node_labels in labels):
        for engine in ("fast", "reference"):  # 128MiB units on core_mem nodes: refused (GN309), by both engines
            with pytest.raises(InputError, match="GN309"):
                place(case["nodes"], case["pods"], semantics=semantics, engine=engine, input_unit=case["input_unit"])
        semantics = replace(semantics, gpu_memory_unit="1GiB")
        case = {**case, "unit": "1GiB", "input_unit": "1GiB"}
    runs = {
        engine: place(
            case["nodes"],
            case["pods"],
            existing=case["existing"],
            semantics=semantics,
            engine=engine,
            node_order=case["node_order"],
            input_unit=case["input_unit"],
            explain=True,
        )
        for engine in ("fast", "reference")
    }
    fast, ref = runs["fast"], runs["reference"]
    before = place(case["nodes"], [], existing=case["existing"], semantics=semantics, input_unit=case["input_unit"])
    assert snapshot(fast) == snapshot(ref)
    # without --explain the fast engine counts pending pods' reasons from its indexes: the same counts
    plain = place(
        case["nodes"],
        case["pods"],
        existing=case["existing"],
        semantics=semantics,
        engine="fast",
        node_order=case["node_order"],
        input_unit=case["input_unit"],
    )
    assert [(p.key, p.message, p.nominated) for p in plain.pending] == [
        (p.key, p.message, p.nominated) for p in ref.pending
    ]
    check_invariants(fast, before, semantics)


@SETTINGS
@given(alike_scenario())
def test_fast_engine_equals_reference_on_alike_nodes(case: dict[str, Any]) -> None:
    """Identical nodes tie often: both engines report the same ties and break them the same way."""
    semantics = Semantics(
        "upstream",
        gpu_memory_unit="GiB",
        scheduler=scoring_profile(case["minor"], case["api"]),
        scheduler_name="default-scheduler",
    )
    fast, ref = (place(case["nodes"], case["pods"], semantics=semantics, engine=e) for e in ("fast", "reference"))
    assert snapshot(fast) == snapshot(ref)  # pending reasons included, counted from the indexes (no explain)
