"""List, then watch, each kind `gpushare watch` keeps (`gpushare.kube.cluster.WATCHES`), into a `LiveState`.

One thread per list call reads the cluster (read-only: list and watch): it lists (paginated), then watches from
the list's resourceVersion, resuming from the last version it saw when a watch ends or breaks (a server restart),
listing again when the server says that version expired (410 Gone), and listing again every `resync` seconds to
compare the whole with what the events built. What they read goes to one queue; one thread applies it to the
state, a batch at a time under its lock, so the model has one writer.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpushare.kube.cluster import PAGE, WATCHES, Cluster, ClusterError, Expired, pages, watch_events
from gpushare.live.state import LiveState, Table, encoded

#: How long one watch call lasts before the server ends it (then it resumes from the last version seen).
WATCH_SECONDS = 240
#: Events applied under one hold of the lock, at most.
_BATCH = 2_000
#: How long a broken read waits before it tries again, at most.
_BACKOFF = 30.0


@dataclass(frozen=True)
class _Listed:
    index: int
    items: Table[bytes]
    arrived: float
    resync: bool


@dataclass(frozen=True)
class _Event:
    index: int
    kind: str
    obj: dict[str, Any]
    arrived: float


class Watcher:
    """The threads that keep `state` current from `cluster` until `stop`."""

    def __init__(
        self,
        cluster: Cluster,
        state: LiveState,
        *,
        resync: float = 600.0,
        watch_seconds: int = WATCH_SECONDS,
        page: int = PAGE,
        on_error: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.cluster, self.state = cluster, state
        self.resync, self.watch_seconds, self.page = resync, watch_seconds, page
        self.on_error = on_error
        self.inbox: queue.Queue[_Listed | _Event] = queue.Queue()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self._open: set[Any] = set()
        self._open_lock = threading.Lock()
        #: Arrival times of the last events (for the rate over ten seconds).
        self.arrivals: deque[float] = deque(maxlen=100_000)

    def start(self, *, reading: bool = True) -> None:
        """The reading threads and the one that applies; without `reading`, the applier alone, for events given
        by `deliver` (a benchmark's stream)."""
        for index in range(len(WATCHES)) if reading else ():
            thread = threading.Thread(target=self._follow, args=(index,), name=f"watch-{WATCHES[index].kind}")
            thread.daemon = True
            self.threads.append(thread)
        applier = threading.Thread(target=self._apply, name="apply", daemon=True)
        self.threads.append(applier)
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        """End every watch now (their connections shut), the threads after."""
        self.stopping.set()
        with self._open_lock:
            for raw in list(self._open):
                raw.stop()

    def events_per_second(self, now: float) -> float:
        recent = [t for t in list(self.arrivals) if now - t <= 10.0]
        return len(recent) / 10.0

    # --- reading -------------------------------------------------------------------------------------------------

    def _follow(self, index: int) -> None:
        listing = WATCHES[index]
        version: str | None = None
        listed_at = 0.0
        failures = 0
        first = True
        while not self.stopping.is_set():
            try:
                if version is None or time.monotonic() - listed_at >= self.resync:
                    version, listed_at = self._listed(index, resync=version is not None)
                    first = False
                for kind, obj in watch_events(self.cluster, listing, version, self.watch_seconds, self._opened):
                    if self.stopping.is_set():
                        return
                    seen = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                    version = seen or version
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self.deliver(index, kind, obj)
                    if time.monotonic() - listed_at >= self.resync:
                        break
                failures = 0
            except Expired:
                version = None
                self._relisted(listing.kind)
            except ClusterError as exc:
                if self.stopping.is_set():
                    return
                if first and not listing.required:  # a kind it may not read (RBAC): noted, asked again later
                    with self.state.lock:
                        self.state.skipped[listing.kind] = str(exc)
                        self.state.listed[index] = True
                    self.stopping.wait(self.resync)
                    continue
                failures += 1
                self.on_error(f"{listing.kind}s: {exc}")
                if failures % 3 == 0 and version is not None:  # a version the server may no longer serve
                    version = None
                    self._relisted(listing.kind)
                self.stopping.wait(min(_BACKOFF, 0.5 * 2**failures))

    def deliver(self, index: int, kind: str, obj: dict[str, Any]) -> None:
        """One event of listing `index` (ADDED, MODIFIED, DELETED), stamped with its arrival, for the applier."""
        now = time.monotonic()
        self.arrivals.append(now)
        self.inbox.put(_Event(index, kind, obj, now))

    def _opened(self, raw: Any) -> None:
        with self._open_lock:
            self._open = {r for r in self._open if not getattr(r, "_stop", False)}
            self._open.add(raw)
        if self.stopping.is_set():
            raw.stop()

    def _listed(self, index: int, resync: bool) -> tuple[str, float]:
        """List `index`, its objects encoded page by page as the state keeps them, for the applier; the list's
        resourceVersion and when it was listed. What was listed is the applier's alone: held here too, through the
        watch that follows, a rebuild could not let go of what it replaced (a fleet's names, 10 MB at 150,000
        pods)."""
        versions: list[str] = []
        items: Table[bytes] = Table()
        for found in pages(self.cluster, WATCHES[index], self.page, versions):
            encoded(index, found, into=items)
        listed_at = time.monotonic()
        self.inbox.put(_Listed(index, items, listed_at, resync))
        return versions[0], listed_at

    def _relisted(self, kind: str) -> None:
        with self.state.lock:
            self.state.counts.relists[kind] = self.state.counts.relists.get(kind, 0) + 1

    # --- applying ------------------------------------------------------------------------------------------------

    def _apply(self) -> None:
        state = self.state
        while not self.stopping.is_set():
            try:
                first = self.inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            batch = [first]
            while len(batch) < _BATCH:
                try:
                    batch.append(self.inbox.get_nowait())
                except queue.Empty:
                    break
            with state.lock:
                for item in batch:
                    if isinstance(item, _Listed):
                        state.replace(item.index, item.items, item.arrived)
                        if item.resync or all(state.listed):
                            state.counts.last_resync = time.time()
                    else:
                        state.event(item.index, item.kind, item.obj, item.arrived)
            del batch, first, item  # held while waiting for the next, a list would outlive its rebuild
