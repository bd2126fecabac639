"""This process: Python's cyclic collector paused over a large pass, and work handed to forked copies of the
process where a second core helps.

The collector: a command, or one placement run, allocates millions of small objects that live until it ends and
hold no reference cycles, so reference counting frees them. The collector, triggered by those allocations, would
walk the growing heap again and again to find nothing: 29% of a large `place`, a fifth of the engine's time on
100,000 pods (`paused`, `sweep`).

The copies (Linux: fork shares everything read so far, nothing is sent over): a copy writes its answer to an
unnamed temporary file (nothing is left behind) and exits by `os._exit`: it never returns into the caller's code,
never runs this process's cleanups, and dies of SIGINT or SIGTERM as a plain process does while this process
reports the interrupt. Whatever a copy fails to hand back, this process does itself, so a copy can only save time,
never change an answer or an error (`each`, `Child`, `cores`).
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import io
import os
import pickle
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

Item = TypeVar("Item")
Answer = TypeVar("Answer")

#: The signals that end a copy as they would a plain process.
ENDING = (signal.SIGINT, signal.SIGTERM)
_LENGTH = struct.Struct("<Q")
_INDEX = struct.Struct("<I")
#: Where cgroup v2 says how much CPU time this process's group may use: "<quota> <period>", or "max <period>".
CPU_MAX = "/sys/fs/cgroup/cpu.max"
#: Items `each` shares out at most: their numbers fill a pipe before any copy reads it (4 KiB, the least a pipe
#: holds); more are worked here alone.
MOST_ITEMS = 1024
#: Seconds between looks at the copies' answers while this process waits for them.
_POLL = 0.005


def cores() -> int:
    """The cores this process may run on, and may use at once where its cgroup caps its CPU time (a container's
    CPU limit: cgroup v2 `cpu.max`); 1 where copies are not made by fork (not Linux)."""
    if sys.platform != "linux":
        return 1
    usable = len(os.sched_getaffinity(0))
    try:
        quota, period = Path(CPU_MAX).read_text().split()[:2]
        if quota != "max":
            usable = min(usable, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return usable


class Child:
    """One forked copy running `work(output)`, whose return is its exit code."""

    def __init__(self, pid: int, output: IO[bytes]) -> None:
        self.pid = pid
        self.output = output
        self.status: int | None = None

    @classmethod
    def start(cls, work: Callable[[IO[bytes]], int]) -> Child | None:
        """The copy, or None where none could be made (no temporary file, no fork)."""
        try:
            output = tempfile.TemporaryFile()  # noqa: SIM115 - the child writes it, close() closes it
        except OSError:
            return None
        # An interrupt waits until each side is ready for it: one arriving while the child is still in Python's
        # after-fork hooks would print their traceback there.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:  # pragma: no cover - runs in the child, which reports by its exit code
            code = 1
            try:
                for ending in ENDING:
                    signal.signal(ending, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # an interrupt that came meanwhile ends it now
                code = work(output)
                output.flush()
            finally:  # whatever happens, the child never returns into this process's code
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if pid < 0:
            output.close()
            return None
        return cls(pid, output)

    def exit_code(self) -> int:
        """Waits for the copy to end; its exit code (negative: the signal that ended it)."""
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(self.status)

    def ended(self) -> bool:
        """Whether the copy has ended (reaped if so), without waiting."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def close(self) -> None:
        """Ends the copy if it still runs (its work is not wanted: an interrupt, an error) and reaps it."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.status = -1
        self.output.close()


def each(
    items: Sequence[Item],
    work: Callable[[Item], Answer],
    workers: int,
    shipped: Callable[[Answer], Answer] = lambda answer: answer,
    in_copy: Callable[[], None] = lambda: None,
    arrived: Callable[[Item, Answer], Answer] = lambda item, answer: answer,
) -> list[tuple[Answer, bool]]:
    """`work` on every item, in the items' order, with `workers - 1` forked copies working alongside this process:
    each, this one too, takes the next item no one has taken (the items' numbers are read from one pipe, so none is
    taken twice) until none is left. Each answer says whether it came from a copy: `shipped` there (what is worth
    sending), then crossed by pickle, so what it held of this process's objects are copies (compiled dataclasses
    rebuilt by their constructors), and `arrived` here (what the copy did not send, made again), as soon as this
    process is between items or waiting. An item a copy took and did not hand back (it failed, or raised) is
    worked here: its error, if any, is raised here. `in_copy` runs first in each copy: what it must not do there
    (write to the terminal, whose lock another thread of this process may have held when it forked)."""
    copies = min(workers, len(items)) - 1
    if copies < 1 or len(items) > MOST_ITEMS:
        return [(work(item), False) for item in items]
    taking, offering = os.pipe()
    inboxes: list[_Inbox] = []
    try:
        with os.fdopen(offering, "wb") as offered:  # every number written before any copy exists, then EOF
            offered.write(b"".join(_INDEX.pack(i) for i in range(len(items))))

        def taken() -> Iterator[int]:
            while len(record := os.read(taking, _INDEX.size)) == _INDEX.size:  # a pipe's small reads are atomic
                yield _INDEX.unpack(record)[0]

        def copy_works(output: IO[bytes]) -> int:  # pragma: no cover - runs in the copy
            gc.disable()  # a collection would walk (and so copy) every object the copy shares with this process
            in_copy()
            for i in taken():
                answer = _dumps((i, shipped(work(items[i]))))
                output.write(_LENGTH.pack(len(answer)) + answer)
                output.flush()
            return 0

        for _ in range(copies):
            child = Child.start(copy_works)
            if child is not None:
                inboxes.append(_Inbox(child))
        answers: dict[int, tuple[Answer, bool]] = {}

        def collect() -> None:
            for inbox in inboxes:
                for i, answer in inbox.ready():
                    answers[i] = (arrived(items[i], answer), True)

        for i in taken():
            answers[i] = (work(items[i]), False)
            collect()
        for inbox in inboxes:
            while not inbox.child.ended():
                collect()
                time.sleep(_POLL)
        collect()
        return [answers[i] if i in answers else (work(item), False) for i, item in enumerate(items)]
    finally:
        os.close(taking)
        for inbox in inboxes:
            inbox.child.close()


class _Inbox:
    """A copy's answers as it writes them: whole records only, read where they stand in its file (`os.pread`: the
    file's offset is the copy's, which it writes at)."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.at = 0

    def ready(self) -> Iterator[tuple[int, Any]]:
        fd = self.child.output.fileno()
        while len(head := os.pread(fd, _LENGTH.size, self.at)) == _LENGTH.size:
            size = _LENGTH.unpack(head)[0]
            record = os.pread(fd, size, self.at + _LENGTH.size)
            if len(record) < size:  # still being written, or cut short by the copy's end
                return
            self.at += _LENGTH.size + size
            yield pickle.loads(record)


class _Pickler(pickle.Pickler):
    """Dataclasses by their constructors: a compiled class has no `__dict__` for pickle to fill, and a frozen one
    refuses the attributes set one by one."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, type) or not dataclasses.is_dataclass(obj):
            return NotImplemented
        fields = dataclasses.fields(obj)
        if not all(f.init for f in fields):
            return NotImplemented
        return type(obj), tuple(getattr(obj, f.name) for f in fields)


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


# --- the cyclic collector -------------------------------------------------------------------------------------------


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block and back on after it, if it was on; nested pauses leave it to the outer.

    What the block made and kept (a fleet's model, a placement) is then all in the youngest generation, and the
    first allocation after the collector is back would walk it whole (a third of a second for a model of 100,000
    pods, each time a planner answer returns to Python). It is moved to the oldest generation unwalked instead
    (`gc.freeze` then `gc.unfreeze`, where nothing else was frozen): its cycles, if any, are freed by the next full
    collection."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def sweep() -> None:
    """Free the cycles made since the last sweep (youngest generation only) while the collector is paused: a
    streaming pass holds little at once but leaves cycles behind it (json's indenting encoder makes a ring of
    closures per call), which, never collected, would grow with the stream instead of staying flat."""
    if not gc.isenabled():
        gc.collect(0)


# --- the C allocator ------------------------------------------------------------------------------------------------

#: mallopt's parameter for the most arenas glibc's malloc makes (malloc.h).
_M_ARENA_MAX = -8


def few_arenas(most: int = 2) -> bool:
    """glibc's malloc at most `most` arenas, for a long-running process with many threads (`gpushare watch` reads
    each kind in a thread of its own): by default each thread that contends gets an arena of its own (up to eight
    per core), which keeps what that thread freed; at most two, the watch's peak at 150,000 pods was 3 MB lower.
    Called before the threads start. False where the C library has no such setting (not glibc): nothing done."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    return bool(mallopt(_M_ARENA_MAX, most))
