"""Every rule of the product, by target: the installer settings, workloads, Nodes, cluster facts, and a live
cluster's GPU-sharing ledger."""

from __future__ import annotations

from gpushare.policy.engine import Rule
from gpushare.policy.rules import cluster, ledger, nodes, settings, workloads

RULES: tuple[Rule, ...] = (*settings.RULES, *workloads.RULES, *nodes.RULES, *cluster.RULES, *ledger.RULES)
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
assert len(BY_ID) == len(RULES), "duplicate rule IDs"
