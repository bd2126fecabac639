"""Every rule of the product, by target: the installer settings, workloads, Nodes, cluster facts, and a live
cluster's GPU-sharing ledger.

`RULES` and `BY_ID` gather them on first use (PEP 562): a fleet question that checks nodes only (`placement` asks
the node rules) does not load the settings', the cluster's and the ledger's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpushare.policy.engine import Rule

    RULES: tuple[Rule, ...]
    BY_ID: dict[str, Rule]


def __getattr__(name: str) -> Any:
    if name not in ("RULES", "BY_ID"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from gpushare.policy.rules import cluster, ledger, nodes, settings, workloads

    rules = (*settings.RULES, *workloads.RULES, *nodes.RULES, *cluster.RULES, *ledger.RULES)
    by_id = {r.id: r for r in rules}
    assert len(by_id) == len(rules), "duplicate rule IDs"
    globals().update(RULES=rules, BY_ID=by_id)
    return globals()[name]
