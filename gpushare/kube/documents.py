"""Kubernetes documents as users have them: files, directories, standard input; YAML or JSON; Lists expanded.

Every object keeps where it came from (file and line of the object itself, also inside a `List`), so a
finding or an invalid pod can point at it, in text and in SARIF alike.
"""

from __future__ import annotations

import io
import mmap
import os
import re
import stat
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, TextIO, TypeAlias

import yaml

from gpushare import progress
from gpushare.errors import InputError, shown
from gpushare.kube import layout, shapes

if TYPE_CHECKING:
    from gpushare.kube import listing

try:
    _Base: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader


class DuplicateKey(yaml.YAMLError):
    """A mapping names a key twice: kubectl refuses such a file (`already defined`), so do we."""

    def __init__(self, key: str, first: int, again: int) -> None:
        super().__init__(key)
        self.key, self.first, self.again = key, first, again


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """The safe loader, refusing duplicate keys as kubectl's YAML reader does. A merge key (`<<`) may still supply
    keys the mapping then sets itself: that is what merging is for. Each mapping is checked as written, before
    merging rewrites it (the constructor flattens a mapping before anything else reads it)."""

    def construct_document(self, node: yaml.Node) -> Any:
        self._checked: set[int] = set()  # mappings of this document already checked (a merge source is reused)
        return super().construct_document(node)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        if len(node.value) > 1 and id(node) not in self._checked:
            self._checked.add(id(node))
            seen: dict[tuple[str, str], int] = {}
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    written = (key.tag, key.value)
                    if written in seen:
                        raise DuplicateKey(key.value, seen[written], key.start_mark.line + 1)
                    seen[written] = key.start_mark.line + 1
        super().flatten_mapping(node)


#: Nodes YAML aliases may add to one document beyond those written: generous for anchors in real manifests, a
#: bound on "billion laughs" (a few lines of nested aliases that expand to gigabytes when read).
MAX_ALIAS_EXPANSION = 1_000_000

#: How deep a document may nest: in open flow brackets, and in block indentation (the spaces and `- `, `? `, `: `
#: before a line's content, a level each at most). Far beyond any Kubernetes object (kubectl indents by two), and
#: well within what reading takes: PyYAML's composer recurses in C and, some 30,000 levels down, crashes the
#: process; msgspec, `repr` and the JSON writers recurse within Python's limit of 1,000.
MAX_DEPTH = 256
MAX_INDENT = 512
_DEEP_BLOCK = re.compile(rb"(?m)^(?:[ \t]|[-?:][ \t]){" + str(MAX_INDENT).encode() + rb"}")
_MARKS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
#: A line so far all indentation: what of a line a chunk leaves unfinished is kept, else only that content started.
_INDENTATION = re.compile(rb"(?:[ \t]|[-?:][ \t])*[-?:]?")
#: How much text is measured at a time.
_WINDOW = 1 << 20


class TooDeep(Exception):
    """A document nests deeper than MAX_DEPTH brackets or MAX_INDENT columns."""


class _Nesting:
    """How deep text read so far nests, fed a chunk at a time: raises TooDeep past the bounds. A closing bracket
    never takes the count below zero, so one in a string cannot hide the brackets that follow. Brackets are counted
    at C speed, a window at a time (a Python loop over them took 9 s for 100 MiB of JSON, this 0.9 s); where a part
    closed within a window sits among open ones, its depth is added to theirs, so that may refuse somewhat sooner
    than the bound, which no Kubernetes object comes near."""

    def __init__(self) -> None:
        self.flow = 0
        self.line = b""  # the last chunk's unfinished line: its indentation so far, or `x` once its content started

    def feed(self, chunk: str | bytes) -> None:
        data = chunk.encode("utf-8", "surrogatepass") if isinstance(chunk, str) else chunk
        for at in range(0, len(data), _WINDOW):  # a window at a time: what is copied to measure stays small
            self._feed(data[at : at + _WINDOW])

    def _feed(self, data: bytes) -> None:
        text = self.line + data
        if _DEEP_BLOCK.search(text) is not None:
            raise TooDeep
        rest = text[text.rfind(b"\n") + 1 :]
        self.line = rest if _INDENTATION.fullmatch(rest) else b"x"
        # The brackets alone, `(` and `)`; each pass takes out the innermost pairs, so the passes count the depth of
        # what closes within the window, and what is left is closings, then openings.
        marks = data.translate(_MARKS, _NOT_BRACKETS)
        passes = 0
        while b"()" in marks:
            passes += 1
            if passes > MAX_DEPTH:
                raise TooDeep
            marks = marks.replace(b"()", b"")
        closing = marks.count(b")")
        depth = max(0, self.flow - closing) + len(marks) - closing
        if max(self.flow, depth) + passes > MAX_DEPTH:  # at most: a closed part may sit inside the open ones
            raise TooDeep
        self.flow = depth


#: Files a directory argument contributes.
SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Source:
    """One Kubernetes object and its origin: a file and the line the object starts on, or a cluster object."""

    obj: dict[str, Any]
    file: str
    line: int | None = None

    @property
    def where(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")


#: What the library takes as Kubernetes objects: dicts, Sources, or one object or List alone.
Objects: TypeAlias = Iterable[Mapping[str, Any] | Source] | Mapping[str, Any]


def from_objects(objects: Objects, argument: str) -> list[Source]:
    """Objects a library caller passes (`validate(objects)`, `place(nodes, pods)`) as Sources: dicts as
    `yaml.safe_load` gives them, a `kubectl get -o yaml` List (expanded, alone or among others) or one object
    alone, and Sources as they are. Anything else is refused naming the argument: iterating a mapping's keys or a
    string's letters would otherwise pass for an empty fleet."""
    if isinstance(objects, (Mapping, Source)):
        objects = [objects]
    elif isinstance(objects, (str, bytes)) or not isinstance(objects, Iterable):
        raise InputError(argument, objects, "Kubernetes objects: dicts as yaml.safe_load gives them, or a List")
    found: list[Source] = []
    for i, obj in enumerate(objects):
        if isinstance(obj, Source):
            found.append(obj)
            continue
        if not isinstance(obj, Mapping):
            raise InputError(f"{argument}[{i}]", obj, "a Kubernetes object (a dict as yaml.safe_load gives it)")
        items = obj.get("items") if str(obj.get("kind", "")).endswith("List") else None
        for j, item in enumerate(items if isinstance(items, list) else [obj]):
            where = f"{argument}[{i}]" if items is None else f"{argument}[{i}].items[{j}]"
            if not isinstance(item, Mapping):
                raise InputError(where, item, "a Kubernetes object (a mapping)")
            found.append(Source(dict(item), where))
    return found


def _items(node: yaml.Node, data: dict[str, Any]) -> list[tuple[Any, int]]:
    """The objects of a document with their lines: the `items` of a List, each at its own line, else the document."""
    items = data.get("items") if str(data.get("kind", "")).endswith("List") else None
    if not isinstance(items, list):
        return [(data, node.start_mark.line + 1)]
    item_nodes: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "items" and isinstance(value, yaml.SequenceNode):
                item_nodes = list(value.value)
    lines = [n.start_mark.line + 1 for n in item_nodes]
    if len(lines) != len(items):  # pragma: no cover - a merge key reshaped the list
        lines = [node.start_mark.line + 1] * len(items)
    return list(zip(items, lines, strict=True))


def check_aliases(node: yaml.Node, name: str, field: str = "file") -> None:
    """Refuse a document whose aliases expand past MAX_ALIAS_EXPANSION nodes, counted on the composed graph (each
    node once, its expanded size memoised) before anything is constructed."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, done = stack.pop()
        key = id(current)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(current, yaml.SequenceNode):
            children = list(current.value)
        elif isinstance(current, yaml.MappingNode):
            children = [part for pair in current.value for part in pair]
        if done:
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] - len(sizes) > MAX_ALIAS_EXPANSION:
                raise InputError(
                    field,
                    name,
                    f"YAML whose aliases expand to at most {MAX_ALIAS_EXPANSION:,} nodes (the document at line "
                    f"{node.start_mark.line + 1} expands further)",
                )
            continue
        stack.append((current, True))
        stack += [(c, False) for c in children if id(c) not in sizes]


class _Readable(Protocol):
    def read(self, size: int = -1) -> Any: ...


class _Stream:
    """A file as libyaml reads it, chunk by chunk, so no input is held whole as text: whether an anchor and an alias
    may have occurred so far (else nothing can expand), and the bytes read, for progress."""

    def __init__(self, raw: _Readable, advance: Callable[[int], None]) -> None:
        self.raw, self.advance = raw, advance
        self.star = self.amp = False
        self.name = getattr(raw, "name", None)
        self.nesting = _Nesting()

    def read(self, size: int = -1) -> Any:
        chunk = self.raw.read(size)
        self.nesting.feed(chunk)
        if chunk:
            self.star = self.star or b"*" in chunk
            self.amp = self.amp or b"&" in chunk
            self.advance(len(chunk))
        return chunk

    @property
    def aliases(self) -> bool:
        return self.star and self.amp


def compose_all(source: str | bytes | _Stream, name: str, field: str = "file") -> Iterator[tuple[yaml.Node, Any]]:
    """Each document of a YAML or JSON text or stream: its node (for lines) and its data, aliases bounded and
    duplicate keys refused."""
    loader = _Loader(source)
    text_aliases = isinstance(source, str | bytes) and _has(source, "*") and _has(source, "&")
    try:
        if isinstance(source, str | bytes):  # a stream is measured as it is read
            _Nesting().feed(source)
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if text_aliases or (isinstance(source, _Stream) and source.aliases):
                check_aliases(node, name, field)
            yield node, loader.construct_document(node)
    except DuplicateKey as exc:
        raise InputError(
            field,
            name,
            f"YAML without duplicate keys ({shown(exc.key)} at {name}:{exc.again} is already defined at "
            f"line {exc.first}; kubectl refuses it too)",
        ) from None
    except TooDeep:
        allowed = f"YAML nested at most {MAX_DEPTH} brackets and {MAX_INDENT} columns of indentation deep"
        raise InputError(field, name, allowed) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        at = f"{name}:{mark.line + 1}" if mark is not None else name
        raise InputError(field, name, f"valid YAML (error at {at})") from None
    finally:
        loader.dispose()


def _has(text: str | bytes, char: str) -> bool:
    return (char in text) if isinstance(text, str) else (char.encode() in text)


def _sources(documents: Iterator[tuple[yaml.Node, Any]], name: str) -> Iterator[Source]:
    for node, data in documents:
        if data is None:
            continue
        if not isinstance(data, dict):
            raise InputError("file", name, f"Kubernetes objects (a mapping at {name}:{node.start_mark.line + 1})")
        for item, line in _items(node, data):
            if isinstance(item, dict):
                yield Source(shapes.trim(item), name, line)


def _listed(
    data: listing.Buffer, head: bytes, name: str, advance: Callable[[int], None], stream: bool = False
) -> list[Source] | None:
    """A List read item by item, or with `stream` a YAML stream read document by document (`listing`); None when
    `data` is neither after all. An mmap'd file's pages are handed back as the items are read, so memory holds what
    is kept, not the file as well."""
    from gpushare.kube import forked, listing  # msgspec and rapidyaml, loaded when a file is read (not by render)

    items: Generator[listing.Item, None, None]
    documents = False
    found_json = listing.json_list(data) if head.lstrip()[:1] == b"{" else None
    if found_json is None and head.lstrip()[:1] == b"{":
        obj = listing.json_object(data)
        return None if obj is None else [Source(obj, name, listing.json_line(data))]
    found_yaml = listing.yaml_list(data) if found_json is None else None
    if found_yaml is not None and not _envelope_is_list(found_yaml[0], name):
        found_yaml = None
    found_stream = listing.yaml_stream(data) if stream and found_json is None and found_yaml is None else None
    if found_json is not None:
        read = partial(listing.json_items, data, found_json.between)
        items = forked.items(data, found_json.spans, read, listing.span_start, advance)
    elif found_yaml is not None:
        items = forked.items(data, found_yaml[1], partial(listing.yaml_items, data), listing.span_start, advance)
    elif found_stream is not None:
        documents = True
        items = forked.items(data, found_stream, partial(listing.yaml_documents, data), listing.span_start, advance)
    else:
        return None
    result: list[Source] = []
    released = 0
    anchors: set[bytes] = set()  # named by the items read so far by PyYAML, each alone
    # a YAML item's object may start below its `-`; a JSON item's and a document's start where their text does
    line: Callable[[listing.Item], int] = listing.item_line if found_yaml is not None else attrgetter("line")
    try:
        for item in items:
            if item.obj is not None:
                result.append(Source(item.obj, name, line(item)))
            elif documents:
                result += _strict_document(bytes(item.text), name, item.line)
            else:  # an item the fast path leaves to PyYAML is a one-entry sequence
                text = bytes(item.text)
                if b"&" in text:  # a List is one document, whose anchors PyYAML refuses to see named twice
                    named = set(_ANCHOR.findall(text))
                    if named & anchors:
                        raise listing.NotKubectl
                    anchors |= named
                obj = _strict_item(text, name)
                if obj is not None:
                    result.append(Source(obj, name, line(item)))
            released = listing.give_back(data, item.end, released)
    except listing.NotKubectl:
        return None
    finally:
        items.close()  # a child still reading is stopped now, not when the generator is collected
    return result


#: An anchor's name, or text that looks like one (which only costs the file a strict reading).
_ANCHOR = re.compile(rb"&([^ \t\r\n,\[\]{}]+)")


def _envelope_is_list(envelope: bytes, name: str) -> bool:
    """Whether a YAML List's text without its items is one List document; not when it is no YAML, or names a key
    twice: the strict reader reads the file then, and says where."""
    from gpushare.kube import listing

    try:
        return [listing.is_list(d) for _, d in compose_all(envelope, name)] == [True]
    except InputError:
        return False


def _strict_document(chunk: bytes, name: str, line: int) -> list[Source]:
    """A stream's document read by PyYAML, its objects' lines counted from the document's. One PyYAML refuses has
    the whole file read the strict way, which says where the error is in the file."""
    try:
        return [Source(s.obj, name, (s.line or 1) + line - 1) for s in _sources(compose_all(chunk, name), name)]
    except InputError:
        from gpushare.kube import listing

        raise listing.NotKubectl from None


def _strict_item(chunk: bytes, name: str) -> dict[str, Any] | None:
    """One `- ` entry read by PyYAML. It may name an anchor of another item, or be wrong: the whole file is then
    read the strict way, which resolves the one and says where the other is."""
    try:
        for _, entries in compose_all(chunk, name):
            entry = entries[0] if isinstance(entries, list) else None
            return shapes.trim(entry) if isinstance(entry, dict) else None
    except InputError:
        from gpushare.kube import listing

        raise listing.NotKubectl from None
    return None


#: `GPUSHARE_READER=pyyaml` reads every file with the strict reader, as before the List reader: for comparing the two
#: (benchmarks/inputs.py) and as a way around the List reader should it ever misread a file.
READER_ENV = "GPUSHARE_READER"

#: Bytes read to tell a List or a JSON object (read item by item) from any other file (read as a stream, when small).
_PEEK = 1 << 12


def read_documents(
    path: str | Path, text: str | None = None, *, stream: IO[Any] | None = None, show_progress: bool = False
) -> list[Source]:
    """Every Kubernetes object in a file (List items expanded), each with the file and line it starts at, trimmed
    to what gpushare reads (`shapes`). A List (in kubectl's layout or with its fields in another order), a JSON
    object, and a stream of `layout.STREAM_BYTES` or more are read item by item or document by document
    (`listing`); any other file as a stream, never held whole as text. A terminal shows progress in bytes for a
    large input; `text` or `stream` stand in for the file."""
    name = str(path)
    if text is not None and os.environ.get(READER_ENV) == "pyyaml":
        return list(_sources(compose_all(text, name), name))
    if text is not None:
        encoded = text.encode()
        listed = _listed(encoded, encoded[:_PEEK], name, lambda _: None, len(encoded) >= layout.STREAM_BYTES)
        return listed if listed is not None else list(_sources(compose_all(text, name), name))
    try:
        handle = stream if stream is not None else open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError("file", name, f"a readable YAML file ({exc.strerror})") from None
    raw = getattr(handle, "buffer", handle)  # standard input as bytes
    size = _size(handle)
    try:
        with progress.progress(size or 0, "B", show_progress and size is not None, step=True) as advance:
            head = _bytes(raw.read(_PEEK))
            # the layout alone decides: a small file that is no List is read without loading the fast readers
            large = size is not None and size >= layout.STREAM_BYTES
            if (large or layout.looks_listed(head)) and os.environ.get(READER_ENV) != "pyyaml":
                data = _mapped(handle) or head + _bytes(raw.read())
                listed = _listed(data, head, name, advance, large)
                if listed is not None:
                    return listed
                if isinstance(data, mmap.mmap):  # read as a stream from its mapping: never held whole as text
                    data.seek(0)
                    return list(_sources(compose_all(_Stream(data, lambda _: None), name), name))
                return list(_sources(compose_all(data, name), name))
            return list(_sources(compose_all(_Stream(_Rejoined(head, raw), advance), name), name))
    except OSError as exc:
        raise InputError("file", name, f"a readable YAML file ({exc.strerror})") from None
    finally:
        if stream is None:
            handle.close()


def _mapped(handle: IO[Any]) -> mmap.mmap | None:
    """A regular file mapped read-only, or None (standard input, a pipe, an empty file)."""
    try:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _bytes(chunk: str | bytes) -> bytes:
    return chunk.encode() if isinstance(chunk, str) else bytes(chunk)


class _Rejoined:
    """A stream whose first bytes were read to tell its layout, given back in front of the rest."""

    def __init__(self, head: bytes, raw: IO[Any]) -> None:
        self.head, self.raw = head, raw
        self.name = getattr(raw, "name", None)

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return _bytes(self.raw.read(size))
        cut = len(self.head) if size < 0 else size
        chunk, self.head = self.head[:cut], self.head[cut:]
        return chunk


def _size(handle: IO[Any]) -> int | None:
    try:
        return os.fstat(handle.fileno()).st_size or None
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def read_paths(paths: list[str], stdin: TextIO | None = None, show_progress: bool = False) -> list[Source]:
    """Documents from files, directories (their *.yaml, *.yml, *.json, sorted) and `-` (standard input)."""
    result: list[Source] = []
    for raw in paths:
        if raw == "-":
            result += read_documents("<stdin>", stream=stdin or sys.stdin, show_progress=show_progress)
            continue
        path = Path(raw)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
                result += read_documents(file, show_progress=show_progress)
        elif path.exists():
            result += read_documents(path, show_progress=show_progress)
        else:
            raise InputError("file", raw, "an existing file, directory or -")
    return result
