"""Every rule of the product, by target: the installer settings, workloads, Nodes, cluster facts."""

from __future__ import annotations

from gpushare.rules import Rule
from gpushare.ruleset import cluster, nodes, settings, workloads

RULES: tuple[Rule, ...] = (*settings.RULES, *workloads.RULES, *nodes.RULES, *cluster.RULES)
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
assert len(BY_ID) == len(RULES), "duplicate rule IDs"
