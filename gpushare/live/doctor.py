"""`doctor`: a cluster's GPU-sharing ledger checked by the rules (GL6xx), with its Nodes' own rules (GN3xx), on a
live read or on a snapshot's files. Read-only; reports like `validate`."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from gpushare.domain import kinds, products
from gpushare.kube.cluster import PAGE, READS, Cluster, ClusterError, Listing, pages
from gpushare.kube.documents import Source
from gpushare.kube.ledger import ASSUME_TIMEOUT, Grammar, read_ledger
from gpushare.policy import neverruns
from gpushare.policy.engine import ClusterFacts, Subject, evaluate
from gpushare.policy.rules import RULES
from gpushare.policy.validate import NotChecked, Report

#: The schedulerName values served unless told: ACK's managed scheduler and the open-source secondary one.
SERVED = (products.DEFAULT_SCHEDULER_NAME, products.SECONDARY_SCHEDULER_NAME)
_TARGETS = ("node", "gpu-pod", "gpu-node", "ledger")
#: Rules that say a node runs no device plugin or cGPU installer pod: they need kube-system's pods to be read.
_NEED_AGENTS = ("GL606", "GL608")
#: What a live doctor reads: the snapshot's Nodes, bound Pods, kube-system ConfigMaps and DaemonSets.
LEDGER_KINDS = ("Node", "Pod", "ConfigMap", "DaemonSet")


def _listings() -> list[Listing]:
    """The snapshot's list calls the ledger needs: its Nodes, pods (bound, and waiting: validate's errors on those
    that never run), kube-system ConfigMaps and DaemonSets: what doctor reads of a snapshot's files."""
    found = [*READS["nodes.json"], *READS["existing.json"], *READS["pending.json"], *READS["daemonsets.json"]]
    return [listing for listing in found if listing.kind in LEDGER_KINDS]


def read_live(kubeconfig: str | None, context: str | None = None) -> tuple[list[Source], str | None]:
    """The objects the ledger needs, read from a live cluster (each list paginated), and its version."""
    cluster = Cluster(kubeconfig, context)
    found: list[Source] = []
    for listing in _listings():
        for items in pages(cluster, listing, PAGE):
            found += cluster.sources([item for item in items if listing.keep(item)])
    try:
        version: str | None = str(cluster.call(cluster.version_api.get_code).git_version)
    except ClusterError:
        version = None
    return found, version


def snapshot_version(sources: Iterable[Source]) -> str | None:
    """The server version a snapshot's manifest (snapshot.json) recorded, if one is among the files."""
    for src in sources:
        if src.kind == kinds.SNAPSHOT and src.obj.get("version"):
            return str(src.obj["version"])
    return None


def doctor(
    sources: Sequence[Source],
    *,
    kube_version: str | None = None,
    served: Sequence[str] = SERVED,
    assume_timeout: float = ASSUME_TIMEOUT,
    now_ns: int | None = None,
    semantics: Grammar = "ack",
) -> Report:
    """The ledger's findings: every GL rule on each GPU pod, GPU node and the ledger, and the Node rules. `semantics`
    says whose reading of a bound pod's annotations counts (`gpushare.kube.ledger`): ACK's scheduler's, or the
    open-source extender's, as `place --semantics` charges them."""
    now = now_ns if now_ns is not None else time.time_ns()
    ledger = read_ledger(sources, served, now, assume_timeout, semantics)
    facts = ClusterFacts(
        kube_version=kube_version or snapshot_version(sources),
        ledger=ledger,
        nodes=[n.info for n in ledger.nodes.values()],
    )
    subjects = [Subject("node", f"Node/{n.info.name}", n.info.source, n.info) for n in ledger.nodes.values()]
    subjects += [Subject("gpu-node", f"Node/{n.info.name}", n.info.source, n) for n in ledger.nodes.values()]
    subjects += [Subject("gpu-pod", f"Pod/{p.key}", p.workload.source, p) for p in ledger.pods]
    subjects.append(Subject("ledger", "cluster", None, ledger))
    rules = [r for r in RULES if r.target in _TARGETS]
    not_checked = []
    if not ledger.agents_read:  # a namespace's pods alone: that a node runs no plugin is not known, not a fact
        rules = [r for r in rules if r.id not in _NEED_AGENTS]
        not_checked.append(
            NotChecked(
                "which device plugin and cGPU installer pods run on each node",
                ", ".join(_NEED_AGENTS),
                "the input holds no kube-system pods or DaemonSets",
                "a full snapshot (gpushare snapshot, or kubectl get nodes,pods,daemonsets -A -o yaml)",
            )
        )
    findings = evaluate(subjects, facts, rules)
    # the pods still to be scheduled that never will be (validate's errors on them, as place reports them)
    waiting = ClusterFacts(nodes=facts.nodes, semantics=semantics)
    for view in ledger.waiting:
        findings += neverruns.of_workload(view, waiting)
    read = sum(1 for s in sources if s.kind in LEDGER_KINDS)
    known = {listing.kind for listings in READS.values() for listing in listings} | {kinds.SNAPSHOT}
    ignored = [f"{s.where}: {s.kind or '(no kind)'}" for s in sources if s.kind not in known]
    return Report(findings, read, ignored, not_checked)
