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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from gpushare import process
from gpushare.errors import GpushareError
from gpushare.kube.cluster import WATCHES
from gpushare.kube.documents import Source
from gpushare.kube.nodes import read_node
from gpushare.kube.shapes import trim
from gpushare.live.packing import Packer
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
#: Each listing's objects packed against its first: a fleet's pods are alike, so a pod of 500 bytes of JSON keeps in
#: about 45 (`pack`). One per listing for the process.
_PACKERS = tuple(Packer() for _ in WATCHES)
#: Where the model's live pods say they come from (`Pod.source`): the cluster (their namespace and name say which).
_WHERE = "cluster"

V = TypeVar("V")


class Table(Generic[V]):
    """A listing's objects (or their pods' models) by namespace, then name ("" for cluster-scoped ones). The name
    a pod's model holds is the key here, the same string: a key string of their own ("namespace/name", 80 bytes)
    and a name apart (64) were 21 MB at 150,000 pods."""

    __slots__ = ("_by",)

    def __init__(self) -> None:
        self._by: dict[str, dict[str, V]] = {}

    def get(self, namespace: str, name: str) -> V | None:
        found = self._by.get(namespace)
        return None if found is None else found.get(name)

    def put(self, namespace: str, name: str, value: V) -> None:
        """`value` under `name`, which becomes the key held (an entry there already is replaced, key and all)."""
        names = self._by.get(namespace)
        if names is None:
            names = self._by[namespace] = {}
        else:
            names.pop(name, None)
        names[name] = value

    def pop(self, namespace: str, name: str) -> V | None:
        names = self._by.get(namespace)
        if names is None:
            return None
        found = names.pop(name, None)
        if not names:
            del self._by[namespace]
        return found

    def find(self, key: str) -> V | None:
        """By its key as users write it: namespace/name, or a cluster-scoped object's name."""
        namespace, _, name = key.rpartition("/")
        return self.get(namespace, name)

    def entries(self) -> Iterator[tuple[str, str, V]]:
        for namespace, names in self._by.items():
            for name, value in names.items():
                yield namespace, name, value

    def values(self) -> Iterator[V]:
        for names in self._by.values():
            yield from names.values()


def key(namespace: str, name: str) -> str:
    """An object's key as users write it (and findings name it): namespace/name, or a cluster-scoped one's name."""
    return f"{namespace}/{name}" if namespace else name


def pack(index: int, obj: dict[str, Any]) -> bytes:
    """An object of listing `index` as the state keeps it: trimmed, compact JSON, compressed against the listing's
    first object."""
    return _PACKERS[index].pack(_encode(trim(obj)))


def unpack(index: int, data: bytes) -> dict[str, Any]:
    found: dict[str, Any] = _decode(_PACKERS[index].unpack(data))
    return found


def decoded(held: list[tuple[int, str, bytes]]) -> Iterator[Source]:
    for index, where, raw in held:
        yield Source(unpack(index, raw), f"{WATCHES[index].kind}/{where}")


def encoded(index: int, items: list[dict[str, Any]], into: Table[bytes] | None = None) -> Table[bytes]:
    """A page of listing `index`'s items as the state keeps them (added to `into`, a list's pages before it):
    those it keeps, trimmed, compact, by namespace and name (a page at a time: a fleet's pods are never all held
    as dicts at once)."""
    listing = WATCHES[index]
    table: Table[bytes] = Table() if into is None else into
    for obj in items:
        if listing.keep(obj):
            table.put(*named(obj), pack(index, obj))
    return table


def named(obj: dict[str, Any]) -> tuple[str, str]:
    """An object's namespace ("" for a cluster-scoped one) and name, the strings its document holds."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    return str(meta.get("namespace") or ""), name if isinstance(name, str) else str(name or "")


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
        #: Per listing (its index in WATCHES): each object, packed (`pack`), by namespace and name.
        self.objects: list[Table[bytes]] = [Table() for _ in WATCHES]
        self.listed = [False] * len(WATCHES)
        self.skipped: dict[str, str] = {}
        self.fleet: Simulation | None = None
        #: Each pod as read (its spec's request; the model may charge a copy), bound or pending.
        self.pods: Table[Pod] = Table()
        #: Bound pods whose node the model does not hold (yet): node name -> their (namespace, name).
        self.orphans: dict[str, set[tuple[str, str]]] = {}
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
        return [
            (index, key(namespace, name), raw)
            for index, objects in enumerate(self.objects)
            for namespace, name, raw in objects.entries()
        ]

    # --- changes -------------------------------------------------------------------------------------------------

    def replace(self, index: int, fresh: Table[bytes], now: float) -> None:
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
        for namespace, name, _ in [e for e in held.entries() if fresh.get(e[0], e[1]) is None]:
            self._change(index, namespace, name, held.pop(namespace, name), None, now)
        for namespace, name, raw in fresh.entries():
            old = held.get(namespace, name)
            if old != raw:
                held.put(namespace, name, raw)
                self._change(index, namespace, name, old, raw, now)

    def event(self, index: int, kind: str, obj: dict[str, Any], now: float) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) of listing `index`."""
        listing = WATCHES[index]
        self.counts.events[listing.kind] = self.counts.events.get(listing.kind, 0) + 1
        namespace, name = named(obj)
        held = self.objects[index]
        old = held.get(namespace, name)
        raw = pack(index, obj) if kind != "DELETED" and listing.keep(obj) else None
        if raw == old:
            return
        if raw is None:
            held.pop(namespace, name)
        else:
            held.put(namespace, name, raw)
        self._change(index, namespace, name, old, raw, now)

    def _change(self, index: int, namespace: str, name: str, old: bytes | None, new: bytes | None, now: float) -> None:
        kind = WATCHES[index].kind
        self._touched(now)
        if self.fleet is None or self.stale:
            self.stale = True
            return
        try:
            self._follow(kind, namespace, name, old, new)
        except Exception as exc:  # an object no reader foresaw: kept out, said, and the model made afresh
            self._reject(kind, key(namespace, name), f"{type(exc).__name__}: {exc}")
            self.stale = True

    def _reject(self, kind: str, where: str, reason: str) -> None:
        self.rejected[(kind, where)] = Rejected(kind, where, reason)

    def _follow(self, kind: str, namespace: str, name: str, old: bytes | None, new: bytes | None) -> None:
        assert self.fleet is not None
        self.fleet.settle()  # the cluster's changes are for good: the refreshes' questions rolled theirs back
        if self.rejected:
            self.rejected.pop((kind, key(namespace, name)), None)
        if kind == "Pod":
            self._pod(namespace, name, None if new is None else unpack(_POD, new))
        elif kind == "Node":
            self._node(name, None if old is None else unpack(_NODE, old), None if new is None else unpack(_NODE, new))
        elif kind != "DaemonSet":  # what the model reads of the cluster's other objects: read again
            self.stale = True

    def _touched(self, now: float) -> None:
        self.version += 1
        if self.oldest_unserved is None:
            self.oldest_unserved = now

    def _pod(self, namespace: str, name: str, obj: dict[str, Any] | None) -> None:
        """Pod `namespace`/`name` changed to `obj` (None: deleted). `name` is the string the state's tables hold:
        the model's pod is given it (`Pod.name`), not one of its own."""
        fleet = self.fleet
        assert fleet is not None
        gone = self.pods.pop(namespace, name)
        if gone is not None:
            if gone.node is None:
                fleet.dequeue(gone)
            elif (namespace, name) in self.orphans.get(gone.node, ()):
                self.orphans[gone.node].discard((namespace, name))
            else:
                fleet.unbind(gone)
        if obj is None or (obj.get("status") or {}).get("phase") in _FINISHED:
            return
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta["name"] = name
        pod = fleet.read_pod(Source(obj, _WHERE))
        if pod is None:
            return
        self.pods.put(namespace, name, pod)
        if pod.node is None:
            fleet.enqueue(pod)
        elif fleet.has_node(pod.node):
            fleet.bind(pod, fleet.node(pod.node))
        else:
            self.orphans.setdefault(pod.node, set()).add((namespace, name))

    def _node(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        fleet = self.fleet
        assert fleet is not None
        if old is not None and new is not None and fleet.has_node(name) and _node_view(old) == _node_view(new):
            return
        src = None if new is None else Source(new, f"Node/{name}")
        if src is None or not self._readable(src):
            if fleet.has_node(name):  # its pods are still in the API until the garbage collector deletes them
                self.orphans.setdefault(name, set()).update((p.namespace, p.name) for p in fleet.remove_node(name))
            return
        try:
            fleet.put_node(src)
        except GpushareError as exc:
            self._reject("Node", name, str(exc))
            return
        for namespace, pod_name in self.orphans.pop(name, set()):
            orphan = self.pods.get(namespace, pod_name)
            if orphan is not None:
                fleet.bind(orphan, fleet.node(name))

    def _readable(self, src: Source) -> bool:
        """Whether the model can take a Node: one whose quantities cannot be read is kept out, a rejection."""
        info = read_node(src)
        if info is None or not info.problems:
            return True
        problem = info.problems[0]
        self._reject("Node", info.name, f"{problem.field}: {problem.value!r} cannot be read")
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
            for namespace, name, raw in objects.entries():
                src = Source(unpack(index, raw), f"{listing.kind}/{key(namespace, name)}")
                if listing.kind != "Node":
                    others.append(src)
                elif self._readable(src):
                    nodes.append(src)
        try:
            probes = [probe(t) for t in self.templates]
            fleet = Simulation.from_sources(nodes, others, [], self.semantics, templates=probes, consume=True)
        except Exception as exc:  # a model that cannot be made keeps the last one, and says why
            self._reject("Model", "", str(exc))
            self.stale = False
            return
        fleet.charge()
        # The Nodes' documents let go before the pods are read: kept, the blocks they free at the end sat among the
        # model's (9 MB of holes at 5,000 Nodes); freed now, the pods' model fills them.
        del nodes, others
        self.fleet, self.pods, self.orphans = fleet, Table(), {}
        self.stale = False
        # Each pod's name as decoded now is the one kept (by the model, and as the key here): allocated into the
        # blocks the Nodes' documents freed, where the list's, let go by its readers (`watcher`), goes (10 MB at
        # 150,000 pods).
        kept: Table[bytes] = Table()
        for namespace, name, raw in self.objects[_POD].entries():
            obj = unpack(_POD, raw)  # packed here from JSON: it reads back
            name = named(obj)[1]
            kept.put(namespace, name, raw)
            try:
                self._pod(namespace, name, obj)
            except Exception as exc:  # as an event's: kept out and said
                self._reject("Pod", key(namespace, name), f"{type(exc).__name__}: {exc}")
        self.objects[_POD] = kept
        self.counts.rebuilds += 1

    def running(self) -> list[Pod]:
        """The running pods as read (their spec's requests), those on a node the model holds."""
        orphans = self.orphans
        return [
            p for p in self.pods.values() if p.node is not None and (p.namespace, p.name) not in orphans.get(p.node, ())
        ]

    def served(self, now: float) -> float:
        """The refresher served the state as it is: the lag of what it served (seconds since the oldest change in
        it arrived)."""
        lag = 0.0 if self.oldest_unserved is None else max(0.0, now - self.oldest_unserved)
        self.oldest_unserved = None
        return lag
