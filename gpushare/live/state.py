"""A live cluster's objects and their placement model, kept current event by event (`gpushare watch`).

The objects are those a snapshot reads (`gpushare.kube.cluster.WATCHES`), trimmed as a snapshot trims them and kept
compact (each one's JSON compressed against its kind's first: `pack`), so doctor and a rebuild read them as a
snapshot's files. The model is a placement `Simulation` built from them (pods decoded one at a time), then changed
through its API on each event: a pod bound is charged by its annotations (`bind`), one deleted given back
(`unbind`), a pending one queued (`enqueue`/`dequeue`), a Node added, changed or deleted (`put_node`,
`remove_node`). What the model reads of the other kinds (controllers and Services for spreading, Namespaces, quotas,
PriorityClasses, budgets, the ConfigMaps marking GPUs unhealthy) is read again by a rebuild, coalesced with the next
refresh: those objects change seldom, and a status-only update (a ReplicaSet's replica count) changes nothing
gpushare reads of them.

A bad object (a Node whose quantities cannot be read) is left out of the model and kept as a rejection, which the
metrics and doctor's findings report; it never ends the watch.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from gpushare import process
from gpushare.errors import GpushareError
from gpushare.kube.cluster import WATCHES
from gpushare.kube.documents import Source
from gpushare.kube.nodes import read_node
from gpushare.kube.shapes import trim
from gpushare.placement import Pod, Semantics, Simulation
from gpushare.planner.headroom import probe

_FINISHED = ("Succeeded", "Failed")
_POD = next(i for i, listing in enumerate(WATCHES) if listing.kind == "Pod")
_NODE = next(i for i, listing in enumerate(WATCHES) if listing.kind == "Node")
#: Node fields the model reads: a Node update that changes none of them (a kubelet's heartbeat) changes nothing.
_NODE_FIELDS = ("labels", "annotations")
_NODE_STATUS = ("allocatable", "capacity", "images", "addresses")
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
#: Each listing's first object, zlib's preset dictionary for the listing's others: a fleet's pods are alike, so a
#: pod of 500 bytes of JSON keeps in about 45 (`pack`). Set once per process, and never changed.
_DICTS: dict[int, bytes] = {}
#: Raw deflate: no zlib header, dictionary id or checksum (10 bytes an object, a sixth of a packed pod; the objects
#: never leave this process).
_RAW = -zlib.MAX_WBITS


def pack(index: int, obj: dict[str, Any]) -> bytes:
    """An object of listing `index` as the state keeps it: trimmed, compact JSON, compressed against the listing's
    first object."""
    raw = _encode(trim(obj))
    packer = zlib.compressobj(1, zlib.DEFLATED, _RAW, zdict=_DICTS.setdefault(index, raw))
    return packer.compress(raw) + packer.flush()


def unpack(index: int, data: bytes) -> dict[str, Any]:
    unpacker = zlib.decompressobj(_RAW, zdict=_DICTS[index])
    found: dict[str, Any] = _decode(unpacker.decompress(data) + unpacker.flush())
    return found


def decoded(held: list[tuple[int, str, bytes]]) -> Iterator[Source]:
    for index, key, raw in held:
        yield Source(unpack(index, raw), f"{WATCHES[index].kind}/{key}")


def encoded(index: int, items: list[dict[str, Any]]) -> dict[str, bytes]:
    """A page of listing `index`'s items as the state keeps them: those it keeps, trimmed, compact, by key (a
    page at a time: a fleet's pods are never all held as dicts at once)."""
    listing = WATCHES[index]
    return {key_of(obj): pack(index, obj) for obj in items if listing.keep(obj)}


def key_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def _node_view(obj: dict[str, Any]) -> tuple[Any, ...]:
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    return (
        *(meta.get(f) for f in _NODE_FIELDS),
        obj.get("spec"),
        *(status.get(f) for f in _NODE_STATUS),
    )


@dataclass
class Rejected:
    """An object the model could not take, and why (a finding, not a crash)."""

    kind: str
    name: str
    reason: str


@dataclass
class Counts:
    """The watcher's own health, as its metrics serve it."""

    events: dict[str, int] = field(default_factory=dict)
    relists: dict[str, int] = field(default_factory=dict)
    rebuilds: int = 0
    last_resync: float = 0.0


class LiveState:
    """The objects of each watched list and the model made of them; every method is called with `lock` held by
    the one thread that applies events (`gpushare.live.watcher`), the refresher reads under the same lock."""

    def __init__(self, semantics: Semantics, templates: list[Source] | None = None) -> None:
        self.semantics = semantics
        self.templates = list(templates or ())
        self.lock = threading.RLock()
        #: Per listing (its index in WATCHES): object key -> msgspec JSON of the trimmed object.
        self.objects: list[dict[str, bytes]] = [{} for _ in WATCHES]
        self.listed = [False] * len(WATCHES)
        self.skipped: dict[str, str] = {}
        self.fleet: Simulation | None = None
        #: Pod key -> the pod as read (its spec's request; the model may charge a copy), bound or pending.
        self.pods: dict[str, Pod] = {}
        #: Bound pods whose node the model does not hold (yet): node name -> pod keys.
        self.orphans: dict[str, set[str]] = {}
        self.rejected: dict[tuple[str, str], Rejected] = {}
        self.stale = True
        #: Bumped by every change the model takes: the refresher recomputes what it serves when it moves.
        self.version = 0
        #: When the oldest change not yet served arrived (monotonic), for the lag.
        self.oldest_unserved: float | None = None
        self.counts = Counts()

    # --- what it holds -------------------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return all(self.listed)

    def held(self) -> list[tuple[int, str, bytes]]:
        """Every object held as (listing, key, packed): taken under the lock, cheap; read outside it (`decoded`)."""
        return [(index, key, raw) for index, objects in enumerate(self.objects) for key, raw in objects.items()]

    # --- changes -------------------------------------------------------------------------------------------------

    def replace(self, index: int, fresh: dict[str, bytes], now: float) -> None:
        """A list (the first, or again after 410 Gone or at a resync), its objects `encoded`: they replace what was
        held of it, the differences applied as events would be."""
        listing = WATCHES[index]
        self.skipped.pop(listing.kind, None)
        held = self.objects[index]
        if self.fleet is None or not self.listed[index]:
            self.objects[index] = fresh
            self.listed[index] = True
            self.version += 1  # a first list: no event waits on it (the lag is the events')
            if listing.kind not in ("DaemonSet",):
                self.stale = True
            return
        for key in [k for k in held if k not in fresh]:
            self._change(index, key, held.pop(key), None, now)
        for key, raw in fresh.items():
            old = held.get(key)
            if old != raw:
                held[key] = raw
                self._change(index, key, old, raw, now)

    def event(self, index: int, kind: str, obj: dict[str, Any], now: float) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) of listing `index`."""
        listing = WATCHES[index]
        self.counts.events[listing.kind] = self.counts.events.get(listing.kind, 0) + 1
        key = key_of(obj)
        held = self.objects[index]
        old = held.get(key)
        raw = pack(index, obj) if kind != "DELETED" and listing.keep(obj) else None
        if raw == old:
            return
        if raw is None:
            held.pop(key, None)
        else:
            held[key] = raw
        self._change(index, key, old, raw, now)

    def _change(self, index: int, key: str, old: bytes | None, new: bytes | None, now: float) -> None:
        listing = WATCHES[index]
        self._touched(now)
        if self.fleet is None or self.stale:
            self.stale = True
            return
        try:
            self._follow(listing.kind, key, old, new)
        except Exception as exc:  # an object no reader foresaw: kept out, said, and the model made afresh
            self.rejected[(listing.kind, key)] = Rejected(listing.kind, key, f"{type(exc).__name__}: {exc}")
            self.stale = True

    def _follow(self, kind: str, key: str, old: bytes | None, new: bytes | None) -> None:
        assert self.fleet is not None
        self.fleet.settle()  # the cluster's changes are for good: the refreshes' questions rolled theirs back
        self.rejected.pop((kind, key), None)
        if kind == "Pod":
            self._pod(key, None if new is None else unpack(_POD, new))
        elif kind == "Node":
            self._node(key, None if old is None else unpack(_NODE, old), None if new is None else unpack(_NODE, new))
        elif kind != "DaemonSet":  # what the model reads of the cluster's other objects: read again
            self.stale = True

    def _touched(self, now: float) -> None:
        self.version += 1
        if self.oldest_unserved is None:
            self.oldest_unserved = now

    def _pod(self, key: str, obj: dict[str, Any] | None) -> None:
        fleet = self.fleet
        assert fleet is not None
        gone = self.pods.pop(key, None)
        if gone is not None:
            if gone.node is None:
                fleet.dequeue(gone)
            elif key in self.orphans.get(gone.node, ()):
                self.orphans[gone.node].discard(key)
            else:
                fleet.unbind(gone)
        if obj is None or (obj.get("status") or {}).get("phase") in _FINISHED:
            return
        # Said where it is by its key itself, the string the state's tables hold already (one of its own per pod
        # was 80 bytes a pod of a fleet's model).
        pod = fleet.read_pod(Source(obj, key))
        if pod is None:
            return
        self.pods[key] = pod
        if pod.node is None:
            fleet.enqueue(pod)
        elif fleet.has_node(pod.node):
            fleet.bind(pod, fleet.node(pod.node))
        else:
            self.orphans.setdefault(pod.node, set()).add(key)

    def _node(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        fleet = self.fleet
        assert fleet is not None
        if old is not None and new is not None and fleet.has_node(name) and _node_view(old) == _node_view(new):
            return
        src = None if new is None else Source(new, f"Node/{name}")
        if src is None or not self._readable(src):
            if fleet.has_node(name):  # its pods are still in the API until the garbage collector deletes them
                self.orphans.setdefault(name, set()).update(pod.key for pod in fleet.remove_node(name))
            return
        try:
            fleet.put_node(src)
        except GpushareError as exc:
            self.rejected[("Node", name)] = Rejected("Node", name, str(exc))
            return
        for key in self.orphans.pop(name, set()):
            orphan = self.pods.get(key)
            if orphan is not None:
                fleet.bind(orphan, fleet.node(name))

    def _readable(self, src: Source) -> bool:
        """Whether the model can take a Node: one whose quantities cannot be read is kept out, a rejection."""
        info = read_node(src)
        if info is None or not info.problems:
            return True
        problem = info.problems[0]
        self.rejected[("Node", info.name)] = Rejected(
            "Node", info.name, f"{problem.field}: {problem.value!r} cannot be read"
        )
        return False

    # --- the model -----------------------------------------------------------------------------------------------

    def rebuild(self) -> None:
        """The model made afresh from the objects held (the first time, and after a change it does not follow
        event by event): the Nodes and the cluster's other objects read whole, then each pod, decoded one at a time,
        bound or queued as its event would be (the model never holds the fleet's pods as documents at once). A model
        that cannot be made keeps the last one, and says why."""
        with process.paused():  # the model holds no cycles: the collector would walk it as it grows
            self._rebuild()

    def _rebuild(self) -> None:
        self.rejected = {}  # each object asked again
        nodes: list[Source] = []
        others: list[Source] = []
        for index, (listing, objects) in enumerate(zip(WATCHES, self.objects, strict=True)):
            if listing.kind in ("Pod", "DaemonSet"):
                continue
            for key, raw in objects.items():
                src = Source(unpack(index, raw), f"{listing.kind}/{key}")
                if listing.kind != "Node":
                    others.append(src)
                elif self._readable(src):
                    nodes.append(src)
        try:
            probes = [probe(t) for t in self.templates]
            fleet = Simulation.from_sources(nodes, others, [], self.semantics, templates=probes, consume=True)
        except Exception as exc:  # a model that cannot be made keeps the last one, and says why
            self.rejected[("Model", "")] = Rejected("Model", "", str(exc))
            self.stale = False
            return
        fleet.charge()
        self.fleet, self.pods, self.orphans = fleet, {}, {}
        self.stale = False
        for key, raw in self.objects[_POD].items():
            try:
                self._pod(key, unpack(_POD, raw))
            except Exception as exc:  # as an event's: kept out and said
                self.rejected[("Pod", key)] = Rejected("Pod", key, f"{type(exc).__name__}: {exc}")
        self.counts.rebuilds += 1

    def running(self) -> list[Pod]:
        """The running pods as read (their spec's requests), those on a node the model holds."""
        return [p for p in self.pods.values() if p.node is not None and p.key not in self.orphans.get(p.node, ())]

    def served(self, now: float) -> float:
        """The refresher served the state as it is: the lag of what it served (seconds since the oldest change in
        it arrived)."""
        lag = 0.0 if self.oldest_unserved is None else max(0.0, now - self.oldest_unserved)
        self.oldest_unserved = None
        return lag
