"""A live cluster copied to files for offline work: what `place`, `capacity`, `validate`, `diff` and `doctor` read.

Read-only: list calls only, paginated (`limit`/`continue`) so neither the API server nor gpushare holds a whole
fleet's pods at once; each page's items are trimmed to what gpushare reads (no managedFields; a pod to its shape)
and written out at once, in kubectl's JSON List layout, which the fast reader cuts item by item. The files go to a
staging directory that replaces the target only once every list call has finished: an unreachable server, a
refused token, a list cut midway (its continue token expired) or Ctrl-C leave nothing behind.

    nodes.json      Nodes (`--nodes`)
    existing.json   bound pods, kube-system's unhealthy-gpu-<node> ConfigMaps and scheduler configurations, and
                    what placement reads besides
                    (ReplicaSets, StatefulSets, ReplicationControllers, Services, Namespaces, ResourceQuotas,
                    PriorityClasses, PodDisruptionBudgets) (`--existing`)
    pending.json    pods no node holds yet, not finished (the pending workloads)
    daemonsets.json DaemonSets (the device plugins and the cGPU installer, which `doctor` checks)
    snapshot.json   when, from which server and version, what each file holds, and what could not be read
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpushare import process
from gpushare.domain import kinds
from gpushare.kube.cluster import PAGE, READS, Cluster, ClusterError, Listing, pages
from gpushare.kube.shapes import trim
from gpushare.output import Plan, Staged, plan, staged_tree

_HEAD = b'{\n    "apiVersion": "v1",\n    "items": ['
_TAIL = b'\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n'


def _item(obj: dict[str, Any]) -> bytes:
    """One item as kubectl lays it out in a List: json.dumps with an indent of 4, at the items' depth."""
    text = json.dumps(obj, indent=4, ensure_ascii=False)
    return ("\n" + "\n".join(f"        {line}" for line in text.splitlines())).encode("utf-8")


@dataclass
class Snapshot:
    """What was written: objects per file and kind, the server's version, and what could not be read."""

    output: Path
    version: str | None
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    plan: Plan | None = None


def take(
    kubeconfig: str | None,
    output: str | Path,
    *,
    context: str | None = None,
    force: bool = False,
    page: int = PAGE,
    expect_minor: int | None = None,
    tick: Callable[[int], None] = lambda _: None,
) -> Snapshot:
    """Copy the cluster into `output` (a directory, written whole or not at all). `expect_minor`: refuse a cluster
    of another Kubernetes minor (a ClusterError naming both). `tick(n)` is told of each page's items."""
    plan(output, tree=True, force=force)  # a target it may not write is refused before the cluster is read
    cluster = Cluster(kubeconfig, context)
    version = _version(cluster, expect_minor)
    taken = Snapshot(Path(output), version)
    with staged_tree(output, force) as staged:
        for name, listings in READS.items():
            taken.counts[name] = _write_list(staged, name, listings, cluster, page, taken.skipped, tick)
        manifest = {
            "apiVersion": kinds.API_VERSION,
            "kind": kinds.SNAPSHOT,
            "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "server": cluster.api.configuration.host,
            "version": version,
            "files": taken.counts,
            "skipped": taken.skipped,
        }
        staged.write("snapshot.json", json.dumps(manifest, indent=2) + "\n")
    taken.plan = staged.plan
    return taken


def _version(cluster: Cluster, expect_minor: int | None) -> str | None:
    try:
        version = str(cluster.call(cluster.version_api.get_code).git_version)
    except ClusterError:
        if expect_minor is not None:
            raise
        return None
    if expect_minor is not None:
        found = version.lstrip("v").split(".")
        minor = int("".join(c for c in found[1] if c.isdigit()) or -1) if len(found) > 1 else -1
        if minor != expect_minor:
            raise ClusterError(f"the cluster runs Kubernetes {version}, not 1.{expect_minor} (--kube-version)")
    return version


def _write_list(
    staged: Staged,
    name: str,
    listings: tuple[Listing, ...],
    cluster: Cluster,
    page: int,
    skipped: list[str],
    tick: Callable[[int], None],
) -> dict[str, int]:
    counts: dict[str, int] = {}
    with staged.stream(name) as append:
        append(_HEAD)
        first = True
        for listing in listings:
            started = False
            try:
                for items in pages(cluster, listing, page):
                    started = True
                    tick(len(items))
                    for item in items:
                        if not listing.keep(item):
                            continue
                        append((b"" if first else b",") + _item(trim(item)))
                        first = False
                        counts[listing.kind] = counts.get(listing.kind, 0) + 1
                    process.sweep()  # each item written left a cycle behind (the collector is paused)
            except ClusterError as exc:
                if started:  # a list cut midway would leave a part of it: the snapshot is not written
                    raise ClusterError(
                        f"listing {listing.kind}s was cut midway, take the snapshot again: {exc}"
                    ) from None
                if listing.required:
                    raise
                skipped.append(f"{listing.kind}s not read ({exc})")
        append(_TAIL)
    return counts
