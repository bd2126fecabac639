"""Trimming objects to what gpushare reads (`kube/shapes.py`) changes no answer: every rule's case gives the same
findings, and random fleets the same placements, from the objects whole and trimmed. A rule or plugin that starts
to read a field the shape drops fails here."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from placement_strategies import scenario
from test_placement_properties import snapshot
from test_rules import CASES, READINGS

from gpushare.domain.minors import scoring_profile
from gpushare.errors import InputError
from gpushare.kube.shapes import trim
from gpushare.placement import Semantics, place
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.validate import validate


def findings(objects: list[dict[str, Any]], flags: dict[str, str], rule_id: str) -> list[tuple[Any, ...]]:
    # what only a live read or a change gives the cluster rules: as test_rules gives them
    report = validate(objects, ClusterFacts(**flags, **READINGS.get(rule_id, {})))
    return [(f.rule.id, f.subject, f.field, repr(f.value), f.allowed) for f in report.findings]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_every_rule_finds_the_same_on_trimmed_objects(rule_id: str) -> None:
    objects, flags = CASES[rule_id]
    whole = findings(objects, flags, rule_id)
    assert rule_id in {f[0] for f in whole}
    assert findings([trim(o) for o in objects], flags, rule_id) == whole


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_placements_are_the_same_on_trimmed_objects(case: dict[str, Any]) -> None:
    semantics = Semantics(
        case["semantics"],
        case["placement"],
        "1GiB",
        case["cgpu_cap"],
        scoring_profile(case["minor"], case["api"]),
        "default-scheduler",
    )

    def run(cut: bool) -> Any:
        docs = {k: [trim(o) if cut else o for o in case[k]] for k in ("nodes", "pods", "existing")}
        try:
            result = place(docs["nodes"], docs["pods"], existing=docs["existing"], semantics=semantics, explain=True)
        except InputError as exc:
            return str(exc)
        return snapshot(result)

    assert run(cut=True) == run(cut=False)
