"""A large List (or stream of documents) read on two cores: a forked copy of the process reads the second half of
the items while this one reads the first.

Reading a kubectl dump is nearly all of a large `validate` and half of a large `place`, and its items are read
one by one, each on its own: the halves need nothing from each other. The child reads from the same mapping of
the file (fork shares it), encodes each item it read, trimmed, with msgpack into an unnamed temporary file
(nothing is ever left behind), and exits; this process then decodes those at a few microseconds an item against
tens for reading them. Items come out in file order either way, with the same lines and objects.

The child is a `gpushare.process.Child`: it never runs this process's cleanups or writes anything but its temporary
file, and dies of SIGINT or SIGTERM as a plain process does. Should the child fail in any way, this process reads
the second half itself; an item the fast decoders leave to the strict
reader goes to it here, in order, as when read on one core.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import IO, Any, TypeVar

import msgspec

from gpushare import process
from gpushare.kube.listing import Buffer, Item, NotKubectl, give_back

Unit = TypeVar("Unit")

#: Files smaller than this are read on one core: a fork and the hand-over cost more than they save.
MIN_BYTES = 16 << 20
#: `GPUSHARE_READER=one-core` keeps large Lists on one core (for comparing the two).
ONE_CORE = "one-core"
#: Items the child encodes at once (each batch is one msgpack array, preceded by its length).
_BATCH = 4096
_LENGTH = struct.Struct("<Q")
#: The child's exit codes: the List is not kubectl's after all (read the file the strict way).
_NOT_KUBECTL = 3


def worthwhile(size: int) -> bool:
    """Whether a List of `size` bytes is read on two cores: a large file, a second core, and fork (Linux)."""
    if size < MIN_BYTES or os.environ.get("GPUSHARE_READER") == ONE_CORE:
        return False
    return process.cores() >= 2


def items(
    data: Buffer,
    units: Sequence[Unit],
    read: Callable[[Sequence[Unit], int], Iterator[Item]],
    start: Callable[[Unit], int],
    advance: Callable[[int], None],
) -> Generator[Item, None, None]:
    """Every unit's item, in order; for a large List, the first half read here while a child reads the second.
    `read` is given units and the line the first starts on, `start` says where a unit starts in `data`; `advance`
    is told the bytes read (while both halves are read, this half's stand for the child's as well).

    Each side counts the lines of its own half: the child from 1, and this process moves the child's items down
    by the lines of the first half, which it knows once it has read that half."""
    line = 1 + data[: start(units[0])].count(b"\n") if units else 1
    half = len(units) // 2
    child = _Child.start(data, lambda: read(units[half:], 1)) if worthwhile(len(data)) and half else None
    if child is None:
        for item in read(units, line):
            advance(len(item.text))
            yield item
        return
    try:
        done = 0  # bytes accounted for so far: both halves advance alike, so twice what this process read
        last = None
        for item in read(units[:half], line):
            step = min(2 * len(item.text), max(0, len(data) - done))
            done += step
            advance(step)
            last = item
            yield item
        if last is not None:  # where the child's half starts: past the last item read here
            line = last.line + data[last.end - len(last.text) : start(units[half])].count(b"\n")
        else:  # a half without an item (a stream's blocks of comments and empty documents)
            line += data[start(units[0]) : start(units[half])].count(b"\n")
        received = child.received(data, line - 1)
        for item in received if received is not None else read(units[half:], line):  # None: the child failed
            if item.end > done:
                advance(item.end - done)
                done = item.end
            yield item
    finally:
        child.close()


class _Child:
    def __init__(self, child: process.Child) -> None:
        self.child = child
        self.pid = child.pid

    @classmethod
    def start(cls, data: Buffer, read: Callable[[], Iterator[Item]]) -> _Child | None:
        child = process.Child.start(lambda output: _run(data, read, output))
        return None if child is None else cls(child)

    def received(self, data: Buffer, lines: int) -> Iterator[Item] | None:
        """The child's items (decoded from its file) moved down by `lines`, or None when it failed; NotKubectl when
        it found the List is not kubectl's."""
        code = self.child.exit_code()
        if code == _NOT_KUBECTL:
            raise NotKubectl
        if code != 0:
            return None
        return _decoded(self.child.output, data, lines)

    def close(self) -> None:
        self.child.close()


def _run(data: Buffer, read: Callable[[], Iterator[Item]], output: IO[bytes]) -> int:  # pragma: no cover - the child
    try:
        encoder = msgspec.msgpack.Encoder()
        batch: list[tuple[int, int, int, Any]] = []
        released = 0
        for item in read():
            batch.append((item.line, item.end - len(item.text), item.end, item.obj))
            released = give_back(data, item.end, released)
            if len(batch) == _BATCH:
                _write(output, encoder.encode(batch))
                batch = []
        _write(output, encoder.encode(batch))
        output.flush()
        return 0
    except NotKubectl:
        return _NOT_KUBECTL
    except BaseException:  # whatever it was, the parent reads this half itself
        return 1


def _write(output: IO[bytes], chunk: bytes) -> None:  # pragma: no cover - the child
    output.write(_LENGTH.pack(len(chunk)))
    output.write(chunk)


def _decoded(output: IO[bytes], data: Buffer, lines: int) -> Iterator[Item]:
    output.seek(0)
    decoder = msgspec.msgpack.Decoder(list[tuple[int, int, int, Any]])
    view = memoryview(data)
    while True:
        head = output.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return
        for line, start, end, obj in decoder.decode(output.read(_LENGTH.unpack(head)[0])):
            yield Item(view[start:end], line + lines, obj, end)
