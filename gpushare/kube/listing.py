"""Lists as kubectl writes them (`kubectl get ... -o json` and `-o yaml`), read one item at a time at C speed.

A fleet dump is one List document of tens of thousands of items. Composed whole by a YAML library it costs
tens of times its size in memory and about 4 ms a pod; here each item is cut out of the text, decoded by
msgspec (JSON; only the fields in `shapes`) or rapidyaml then msgspec (YAML), and kept trimmed, so memory
follows what gpushare keeps and a pod costs tens of microseconds.

A JSON List with its items' braces on lines of their own (kubectl's layout, `json.dumps` with an indent) is cut
by that layout, on both cores; any other, by msgspec, whole (see `json_list`). A YAML List is cut by kubectl's
layout, which is exact: `items:` at column 0 and each item a `- ` line at column 0 (kubectl sorts keys, so `apiVersion`,
`items`, `kind`, `metadata`; other writers put `kind` and `metadata` first, which is read alike). A large YAML
stream is cut into its documents at its `---` and `...` lines (`yaml_stream`), a JSON object read as one item.
Anything else, and any item the fast decoders cannot take exactly as PyYAML would, goes to the strict reader
(`documents`), which is also the one that says where an error is. YAML is
read by rapidyaml only where its YAML 1.2 typing cannot differ from PyYAML's YAML 1.1 (see `ambiguous`); a
file kubectl wrote has no such value, as its writer quotes them. Like kubectl's own JSON reader, the fast
readers take the last of a repeated key; the strict reader refuses one.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypedDict

import msgspec

from gpushare.kube import shapes
from gpushare.kube.layout import ITEM_LINE, YAML_HEAD, YAML_ITEM

try:
    import ryml
except ImportError:  # pragma: no cover - no rapidyaml wheel for this platform: YAML takes the strict reader
    ryml = None
try:
    import re2
except ImportError:  # pragma: no cover - no google-re2 wheel for this platform: the guard runs on `re`
    re2 = None

#: ... or one that is neither an item, nor a comment, nor blank: where the items end.
_ENDING_LINE = rb"[^-\t\n\x0b\x0c\r #]|-[^ \n]"
#: An item's line, and one that ends the items, where a line at column 0 starts (`_yaml_line` tells them apart).
_ITEM_AT = re.compile(ITEM_LINE)
_ENDING_AT = re.compile(_ENDING_LINE)

#: A plain YAML scalar whose type PyYAML (YAML 1.1, the strict reader) and rapidyaml (YAML 1.2) may read apart,
#: or a construct the fast path leaves to PyYAML: it sends the item to the strict reader. It looks wherever a
#: plain scalar starts in block YAML (a line, after `- `, after `: `), so it may also match in a block or
#: quoted string: that only costs speed. The number forms are PyYAML's implicit int, float and timestamp
#: patterns and the exponents rapidyaml reads as numbers, minus those both read alike (`0`, `-12`, `1.5`);
#: quantities (`500m`, `8Gi`), versions and addresses match none of them.
#:
#: The patterns are read alike by RE2 and Python's `re`. RE2 runs them in one linear pass over the item, five
#: times faster than `re`, which is left for where google-re2 has no wheel. As a match only has to exist, what
#: would be lookahead is matched instead.
_END = rb"[ \t]*(?:$|[ \t]#|:[ \t]|:$)"
#: YAML 1.1's booleans and nulls that YAML 1.2 reads as strings (`true`, `false` and `null` both read alike).
_WORDS = rb"(?:[yY](?:es)?|YES|[nN]o?|NO|[oO](?:n|ff)|O(?:N|FF)|True|TRUE|False|FALSE|Null|NULL|~)"
_NUMBERS = b"|".join(
    (
        rb"[-+]?0[bB][01_]+",  # binary
        rb"[-+]?0[xX][0-9a-fA-F_]+",  # hex
        rb"[-+]?0[0-9_]+(?:\.[0-9_]*)?",  # octal, 00.5
        rb"\+[0-9.][0-9._:eE+-]*",  # a plus sign
        rb"[-+]?[0-9][0-9]*_[0-9_.]*",  # underscores
        rb"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?",  # sexagesimal
        rb"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+",  # exponents
        rb"[-+]?[0-9][0-9_]*\.",  # 5. (the end that follows starts with no digit)
        rb"[-+]?\.[0-9_]+",  # .5
        rb"[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)",
        rb"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*",  # timestamps
    )
)
#: The scalar's forms, each with the characters it can start with (None: it is one literal).
_SCALARS: tuple[tuple[bytes | None, bytes], ...] = (
    (rb"[yYnNoOtTfF~]", _WORDS + _END),
    (rb"[-+.0-9]", rb"(?:" + _NUMBERS + rb")" + _END),
    # YAML 1.1 has no `nan` or `inf` without the dot: rapidyaml reads them as its special floats, and writes them
    # `.nan` and `.inf` in JSON
    (rb"[-+nNiI]", rb"[-+]?(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)" + _END),
    # a key both read alike as a value: PyYAML keeps it a number, a boolean or null, JSON's keys are strings (and an
    # empty key, PyYAML's null); `.`, as managedFields writes it, is a string to both
    (rb"[-+0-9tfn:]", rb"(?:[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?|true|false|null)?[ \t]*:(?:[ \t]|$)"),
    (None, rb"[&*!%@`?|>]"),  # anchors, aliases, tags, directives, complex keys
    (None, rb"<<"),  # merge keys
    (None, rb"[\[{](?:[^\]}]|$)"),  # flow collections with content
    (None, rb"(?:---|\.\.\.)(?:[ \t]|$)"),  # document markers
)


#: A character PyYAML refuses anywhere in its input, or takes for a line break, where the fast decoders pass it
#: through as written: a C0 or C1 control (not a line feed or a carriage return; C1's are 0xC2 0x80-0x9F in UTF-8,
#: NEL among them), DEL, U+FFFE and U+FFFF, and the line and paragraph separators; and a tab, which PyYAML takes in
#: some places and refuses in others (to indent a line), where rapidyaml takes it anywhere.
_UNPRINTABLE = rb"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]|\xef\xbf[\xbe\xbf]|\xe2\x80[\xa8\xa9]"


def guards(engine: Any = re2) -> list[Any]:
    """The guard's patterns compiled by RE2 (the `re2` module) or, with None, by `re`; they match where a plain
    scalar starts: the first line, every other line (a key or a `- ` entry), after a key; and a character PyYAML
    refuses, wherever it is.

    RE2 takes one pattern and one pass. Backtracking `re` takes one pattern for each start, as each begins with a
    literal its search skips ahead to at C speed; possessive indentation, so a line's is not tried again shorter;
    and each form entered by its first character, so a key that starts like one fails at once (together, ten
    times faster)."""
    tight = b"" if engine is not None else b"+"
    line = rb"[ \t]*" + tight + rb"(?:-[ \t]+" + tight + rb")*" + tight
    starts = (rb"\A" + line, rb"\n" + line, rb":[ \t]+" + tight)
    scalar = b"|".join(
        body if first is None or engine is not None else rb"(?=" + first + rb")" + body for first, body in _SCALARS
    )
    if engine is None:
        return [
            *(re.compile(rb"(?m)" + start + rb"(?:" + scalar + rb")") for start in starts),
            re.compile(_UNPRINTABLE),
        ]
    return [linear(rb"(?m)(?:" + b"|".join(starts) + rb")(?:" + scalar + rb")|" + _UNPRINTABLE, engine)]


def linear(pattern: bytes, engine: Any = re2) -> Any:
    """`pattern` compiled by RE2 where google-re2 is installed (a linear scan, reading a byte as a character as
    `re` does on bytes), else by `re`."""
    if engine is None:
        return re.compile(pattern)
    options = engine.Options()
    options.encoding = engine.Options.Encoding.LATIN1
    return engine.compile(pattern, options)


_GUARDS = guards()
#: A line at column 0 that ends the items (RE2 finds it in a third of the time `re` takes).
AFTER_ITEMS = rb"(?m)^(?:" + _ENDING_LINE + rb")"
_YAML_AFTER = linear(AFTER_ITEMS)
#: The line break before a line at column 0 that is neither blank, a comment nor indented: an item's or one that ends
#: the items. Cutting a block at these finds both in the one pass; RE2 finds them in 40% of the time `re` takes
#: to look ahead for the two kinds of line (which RE2 cannot), and only these few lines are then looked at.
_YAML_LINE = linear(rb"\n[^\t\n\x0b\x0c\r #]")


def ambiguous(chunk: bytes, patterns: Sequence[Any] = _GUARDS) -> bool:
    """Whether the YAML text has a plain scalar PyYAML and rapidyaml may type apart, or a construct left to PyYAML."""
    return any(guard.search(chunk) is not None for guard in patterns)


#: The file's bytes: `bytes`, or an `mmap` whose pages the reader hands back as it goes.
Buffer = bytes | mmap.mmap


#: How far reading runs ahead of handing an mmap'd file's pages back.
RELEASE = 1 << 24


def give_back(data: Buffer, end: int, released: int) -> int:
    """Hand an mmap'd file's pages before `end` back to the system once 16 MiB were read since the last time, so
    memory holds what is kept, not the file as well; the offset released up to."""
    if isinstance(data, mmap.mmap) and end - released > RELEASE:
        released = end - end % mmap.PAGESIZE
        data.madvise(mmap.MADV_DONTNEED, 0, released)
    return released


class NotKubectl(Exception):
    """The text is not laid out as the fast reader needs after all: read the whole file the strict way."""


@dataclass(frozen=True)
class Item:
    """One List item: its text, the line it starts on, and the object when the fast path read it."""

    text: bytes | memoryview
    line: int
    obj: dict[str, Any] | None  # None: for the strict reader (the text is then a YAML `- ` entry)
    end: int  # where the item ends in the file: what was read so far


#: What decoding an item's JSON raises when the fast path cannot take it: malformed JSON, text that is no UTF-8 (a
#: byte the file has, or rapidyaml's bytes for an escaped lone surrogate such as `"\ud800"`), or nesting deeper than
#: Python's recursion allows.
UNDECODABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
_ANY = msgspec.json.Decoder()
_SHAPED: dict[str, msgspec.json.Decoder[Any]] = {k: msgspec.json.Decoder(v) for k, v in shapes.SHAPES.items()}


def decode(raw: str | bytes | memoryview, kind_hint: str | None = None) -> dict[str, Any]:
    """One JSON object, trimmed as `shapes.trim` would: shaped kinds decode only their fields."""
    decoder = _SHAPED.get(kind_hint or "")
    if decoder is not None:
        try:
            obj = decoder.decode(raw)
            if obj.get("kind") == kind_hint:
                return shapes.cgpu_env_only(obj)
        except msgspec.ValidationError:
            pass  # a field of another type than its shape's: decoded whole and trimmed the lenient way
    obj = _ANY.decode(raw)
    if not isinstance(obj, dict):
        raise NotKubectl
    return shapes.trim(obj)


class _Envelope(TypedDict, total=False):
    kind: Any
    items: list[msgspec.Raw]  # each item's text, not decoded


_ENVELOPE = msgspec.json.Decoder(_Envelope)

#: A JSON List whose items' braces open and close on lines of their own at one indentation, as kubectl and
#: `json.dumps(indent=n)` lay them out: its head, up to the first item's brace (the indentation in group 1). kubectl
#: writes `apiVersion` alone before `items`; other writers may put `kind` and a flat `metadata` there too. What the
#: head says is read with the tail (`json_list`); the pattern only bounds it.
_JSON_HEAD = re.compile(
    rb'\A\s*\{\s*(?:"(?:apiVersion|kind)"\s*:\s*"[^"\\]*"\s*,\s*|"metadata"\s*:\s*\{[^\[\]{}]*\}\s*,\s*)*'
    rb'"items"\s*:\s*\[[ \t]*\n([ \t]*)\{'
)
#: Its tail, after the last item's brace: the List's other fields, at most flat objects (metadata).
_JSON_TAIL = rb"\}(\s*\][^\[\]{}]*(?:\{[^\[\]{}]*\}[^\[\]{}]*)*\}\s*)\Z"
#: How far from the end of the file the tail is looked for.
_TAIL_BYTES = 1 << 16
#: The blocks of items a laid-out List is cut into: each side of the two-core reader takes whole blocks and
#: finds the items in them itself.
_BLOCKS = 64


@dataclass(frozen=True)
class JsonList:
    """A JSON List cut into spans of its text: each one item or, with `between` (the text between two items in
    the List's layout), a block of items that is cut apart as it is read."""

    spans: list[tuple[int, int]]
    between: bytes | None = None


def json_list(data: Buffer) -> JsonList | None:
    """Where the items are, if `data` is a JSON List.

    A List laid out with each item's braces at one indentation is cut by that layout, a block at a time as it is
    read, on both cores. The cut is exact: the head and the tail are the List's own, and each item between two
    cuts must decode as one whole JSON value, which a cut inside an item leaves unbalanced (NotKubectl). Any
    other layout is cut by msgspec, whole, at its parsing speed, before either half is read."""
    head = _JSON_HEAD.match(data)
    if head is not None:
        indent = head.group(1)
        tail = re.search(rb"\n" + re.escape(indent) + _JSON_TAIL, data[-_TAIL_BYTES:])
        if tail is not None and b'"items"' not in tail.group(1):
            try:  # the List without its items: its head to the items' bracket, and its tail
                envelope = _ENVELOPE.decode(data[: head.start(1) - 1] + tail.group(1))
            except msgspec.MsgspecError:
                envelope = {}
            if _list_kind(envelope) and envelope.get("items") == []:
                between = b"\n" + indent + b"},\n" + indent + b"{"
                blocks = _blocks(data, head.end() - 1, len(data) - len(tail.group(1)), *_separated(between))
                return JsonList(blocks, between)
    try:
        whole = _ENVELOPE.decode(data)
    except (msgspec.MsgspecError, RecursionError):  # not JSON, or nested too deep for msgspec: the strict reader's
        return None
    if not _list_kind(whole) or "items" not in whole:
        return None
    spans: list[tuple[int, int]] = []
    end = 0
    for raw in whole["items"]:
        text = memoryview(raw)
        end = data.find(text[:64], end) + len(text)  # between two items there is only a comma and space
        spans.append((end - len(text), end))
    return JsonList(spans)


def json_object(data: Buffer) -> dict[str, Any] | None:
    """A JSON file of one object (`kubectl get pod p -o json`), read by msgspec as a JSON List's items are, so the
    object is the same whether it stands alone or in a List. None (the strict reader's) for one that is no JSON
    object, is a List, or names a key twice: the strict reader refuses that, and says where, as kubectl does."""
    try:
        obj = _ANY.decode(data)
    except (msgspec.MsgspecError, *UNDECODABLE):
        return None
    if not isinstance(obj, dict) or _list_kind(obj):
        return None
    try:  # an object is small: the standard library's reader, in C, finds a repeated key in a few microseconds
        json.loads(data[:], object_pairs_hook=_unrepeated)
    except (ValueError, RecursionError):
        return None
    return shapes.trim(obj)


def _unrepeated(pairs: list[tuple[str, Any]]) -> None:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("a repeated key")


#: The white space before a JSON text's first brace.
_SPACE = re.compile(rb"[ \t\r\n]*")


def json_line(data: Buffer) -> int:
    """The line a JSON text's first value starts on, where PyYAML places it."""
    at = _SPACE.match(data)
    return 1 + data[: at.end() if at is not None else 0].count(b"\n")


#: Where the item before a separator that was found ends, and where the next one starts.
Around = Callable[[Any], tuple[int, int]]


def _blocks(data: Buffer, start: int, end: int, find: Any, around: Around) -> list[tuple[int, int]]:
    """The items in `data[start:end]` in about `_BLOCKS` spans, each cut at a separator `find` finds."""
    spans: list[tuple[int, int]] = []
    begin = start
    for k in range(1, _BLOCKS):
        found = find.search(data, max(begin, start + (end - start) * k // _BLOCKS), end)
        if found is None:
            break
        closed, opened = around(found)
        spans.append((begin, closed))
        begin = opened
    spans.append((begin, end))
    return spans


def _cut(
    data: Buffer, spans: Sequence[tuple[int, int]], find: Any, around: Callable[[Any], tuple[int, int] | None]
) -> Iterator[tuple[int, int]]:
    """Each item's span in `_blocks`' spans: each block cut at every separator `find` finds in it (but where
    `around` says None: no separator after all)."""
    for begin, end in spans:
        for found in find.finditer(data, begin, end):
            cut = around(found)
            if cut is not None:
                yield begin, cut[0]
                begin = cut[1]
        yield begin, end


def _separated(between: bytes) -> tuple[Any, Around]:
    """The finder of `between` (the text between two items of a laid-out JSON List), and where the item before one
    ends (after its brace) and the next starts (at its brace)."""
    closed = between.index(b"}") + 1
    return linear(re.escape(between)), lambda found: (found.start() + closed, found.end() - 1)


def newlines(data: Buffer, start: int, end: int) -> int:
    """The line breaks in `data[start:end]`, counted in place where the buffer can (bytes; an mmap copies)."""
    return data.count(b"\n", start, end) if isinstance(data, bytes) else data[start:end].count(b"\n")


def _yaml_item(found: Any) -> tuple[int, int]:
    """A YAML item starts at the `-` after the line break found, and the one before ends there."""
    return found.start() + 1, found.start() + 1


def _yaml_line(data: Buffer, found: Any) -> tuple[int, int] | None:
    """As `_yaml_item`, for a line `_YAML_LINE` found; a line that is no item ends the items before the last that
    `yaml_list` found: the file is no List as kubectl writes it. A `-` that ends the file is neither (None)."""
    at = found.start() + 1
    if _ITEM_AT.match(data, at):
        return at, at
    if _ENDING_AT.match(data, at):
        raise NotKubectl
    return None


def span_start(span: tuple[int, int]) -> int:
    """Where a `json_list` or `yaml_list` span starts."""
    return span[0]


def _list_kind(document: Mapping[str, Any]) -> bool:
    return str(document.get("kind", "")).endswith("List")


def is_list(envelope: Any) -> bool:
    """Whether a List's text without its items reads as a List with none (the cut took them all)."""
    return isinstance(envelope, dict) and _list_kind(envelope) and envelope.get("items") in ([], None)


def yaml_list(data: Buffer) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The envelope's text (the List without its items) and the items' spans in about `_BLOCKS` blocks, each cut
    at an item's start, if `data` is kubectl's YAML. Each side of the two-core reader cuts its own blocks into items
    (`yaml_items`): finding every item's start here took 4 us a pod, serially."""
    head = YAML_HEAD.match(data)
    if head is None:
        return None
    spans = _blocks(data, head.end(), len(data), YAML_ITEM, _yaml_item)  # from the first item's `-`
    last = spans[-1][0]
    for found in YAML_ITEM.finditer(data, last):
        last = found.start() + 1
    # Where the items end is looked for after the last only: each half of the items is checked for a line that
    # ends them sooner as it is read (`yaml_items`), in parallel, rather than the whole file here, serially.
    after = _YAML_AFTER.search(data, last)
    end = after.start() if after else len(data)
    spans[-1] = (spans[-1][0], end)
    fields = data[: head.end() - len(b"items:\n")]  # the List's fields before its items, if any
    return fields + b"items: []\n" + data[end:], spans


class RapidYaml:
    """rapidyaml, one tree and one output buffer reused for every item (a new tree per item costs more than the
    parse; `emit_json_malloc` emits twice, once to size its result).

    rapidyaml writes a parse error on C's stderr before it raises, and its Python module cannot be told otherwise:
    the process's stderr (descriptor 2) points nowhere while an item is parsed (two dup2 calls, 0.3 us), so a
    broken item is told of only by the strict reader, in gpushare's one line."""

    def __init__(self) -> None:
        self.tree = ryml.Tree()
        self.out = bytearray(1 << 16)
        self.stderr: int | None = None
        self.nowhere: int | None = None
        with contextlib.suppress(OSError):  # no stderr (closed): nothing to keep quiet
            self.stderr = os.dup(2)
            self.nowhere = os.open(os.devnull, os.O_WRONLY)

    def close(self) -> None:
        for fd in (self.stderr, self.nowhere):
            if fd is not None:
                os.close(fd)
        self.stderr = self.nowhere = None

    def json(self, chunk: bytes, document: bool = False) -> tuple[memoryview, str | None] | None:
        """The item of a one-entry `- ...` chunk (or the mapping a `document`'s chunk is) as JSON, without
        managedFields, and its kind; None when rapidyaml refuses it (a parse error, or a tree deeper than its
        emitter goes), or a document is no mapping: the strict reader then says what is wrong. The JSON is in the
        reused buffer: decode it before the next item."""
        stderr, nowhere = self.stderr, self.nowhere
        try:
            if stderr is not None and nowhere is not None:
                os.dup2(nowhere, 2)
            return self._json(chunk, document)
        except (ryml.ExceptionBasic, RuntimeError):  # its ExceptionParse and ExceptionVisit; SWIG's for the rest
            return None
        finally:
            if stderr is not None:
                os.dup2(stderr, 2)

    def _json(self, chunk: bytes, document: bool) -> tuple[memoryview, str | None] | None:
        tree = self.tree
        tree.clear()
        tree.clear_arena()
        ryml.parse_in_arena(chunk, tree=tree)
        root = tree.root_id()
        if document:
            item = root
        elif not tree.is_seq(root) or tree.num_children(root) != 1:
            return None
        else:
            item = tree.first_child(root)
        if not tree.is_map(item):
            return None
        meta = tree.find_child(item, b"metadata")
        if meta != ryml.NONE and tree.is_map(meta):
            managed = tree.find_child(meta, b"managedFields")
            if managed != ryml.NONE:
                tree.remove(managed)
        kind = tree.find_child(item, b"kind")
        named = kind != ryml.NONE and tree.has_val(kind)
        # on one line: a flow container's descendants are emitted flow too, and 40% fewer bytes of indentation
        # to write and decode save more than the call costs (3 us an item)
        tree.set_container_style(item, ryml.FLOW_SL)
        while True:
            try:
                text = ryml.emit_json_in_place(tree, self.out, item)
                break
            except IndexError:  # longer than any item so far
                self.out = bytearray(2 * len(self.out))
        return text, bytes(tree.val(kind)).decode() if named else None


_JSON_KIND = re.compile(rb'"kind": ?"([A-Za-z]+)"')


def json_items(data: Buffer, between: bytes | None, spans: Sequence[tuple[int, int]], line: int) -> Iterator[Item]:
    """The items of `json_list`'s spans decoded, the first said to start on `line`; a malformed one ends the fast
    path (NotKubectl) so the strict reader can place it."""
    view = memoryview(data)
    start = spans[0][0] if spans else 0
    for begin, end in spans if between is None else _cut(data, spans, *_separated(between)):
        text = view[begin:end]
        line += newlines(data, start, begin)
        start = begin
        kind = _JSON_KIND.search(text)
        try:
            obj = decode(text, kind.group(1).decode() if kind else None)
        except UNDECODABLE:
            raise NotKubectl from None
        yield Item(text, line, obj, end)


#: An item's `-` alone on its line (a comment aside), and the blank and comment lines after it: its mapping starts
#: on the next line of content, where PyYAML places it.
_BARE_DASH = re.compile(rb"- *(?:#[^\n]*)?\n(?: *(?:#[^\n]*)?\n)*")


def item_line(item: Item) -> int:
    """The line a YAML List item's object starts on: its `- ` line, or the first line of content after a bare `-`."""
    bare = _BARE_DASH.match(item.text)
    return item.line if bare is None else item.line + bare.group().count(b"\n")


def yaml_items(data: Buffer, spans: Sequence[tuple[int, int]], line: int) -> Iterator[Item]:
    """The items of `yaml_list`'s blocks, each decoded where rapidyaml reads it exactly as PyYAML would, else left
    to the strict reader; the first said to start on `line`. A line at column 0 among them that is not an item
    ends the items before the last that `yaml_list` found: the file is then no List as kubectl writes it
    (NotKubectl, when the cut reaches it; looking for one first was another pass over the text, 6 us an item)."""
    reader = RapidYaml() if ryml is not None else None
    try:
        for start, end in _cut(data, spans, _YAML_LINE, partial(_yaml_line, data)):
            chunk = data[start:end]
            obj = None
            if reader is not None and not ambiguous(chunk):
                try:
                    read = reader.json(chunk)
                    obj = decode(*read) if read is not None else None
                except (*UNDECODABLE, NotKubectl):
                    obj = None  # e.g. `+1`, which rapidyaml passes through as a number JSON does not allow
            yield Item(chunk, line, obj, end)
            line += chunk.count(b"\n")
    finally:
        if reader is not None:
            reader.close()


#: Where a stream is cut into blocks for the two sides of the reader: before a `---` line.
_DOCUMENT_START = linear(rb"\n---[ \t\n]")
#: A line at column 0 that ends a document (`...`) or starts one (`---`), with what follows it on the line.
_MARKER = linear(rb"(?m)^(?:---|\.\.\.)(?:[ \t][^\n]*)?(?:\n|$)")
#: The blank and comment lines before a document's first line of content (where PyYAML says the document starts); a
#: tab there is content, which PyYAML refuses.
_BLANK = re.compile(rb"(?: *(?:#[^\n]*)?(?:\n|\Z))*")
_BOM = b"\xef\xbb\xbf"


def yaml_stream(data: Buffer) -> list[tuple[int, int]] | None:
    """A YAML stream (documents between `---` lines, as written by hand or by `helm template`) in about `_BLOCKS`
    spans, each cut before a `---` line, so each side of the two-core reader cuts its own into documents
    (`yaml_documents`); None for text the fast path does not take at all: JSON, and a byte order mark."""
    if data[:1] in (b"{", b"[") or data[:3] == _BOM:
        return None
    return _blocks(data, 0, len(data), _DOCUMENT_START, _yaml_item)


def _documents(data: Buffer, begin: int, end: int) -> Iterator[tuple[int, int]]:
    """The spans of the documents with content between `begin` and `end` (each from its first line of content to
    the next marker), as PyYAML delimits them. A marker with content on its line (a tag, a flow node, a block
    scalar's header) or content after `...` where PyYAML wants a `---` is no layout the cut can take
    (NotKubectl: the strict reader reads the file, or says what is wrong with it)."""
    ended = False  # after `...`: nothing but comments until the next `---`
    begun = begin > 0  # a document was started (each block but the first starts at a `---` line)
    at = begin
    for found in _MARKER.finditer(data, begin, end):
        for document in _document(data, at, found.start(), ended):
            begun = True
            yield document
        marker = data[found.start() : found.end()]
        rest = marker[3:].strip()
        ended = marker.startswith(b".")
        if (rest and not rest.startswith(b"#")) or (ended and not begun):  # PyYAML wants a node before a first `...`
            raise NotKubectl
        begun = True
        at = found.end()
    yield from _document(data, at, end, ended)


def _document(data: Buffer, begin: int, end: int, ended: bool) -> Iterator[tuple[int, int]]:
    start = _BLANK.match(data, begin, end)
    content = start.end() if start is not None else begin
    if content < end:
        if ended:
            raise NotKubectl
        yield content, end


def yaml_documents(data: Buffer, spans: Sequence[tuple[int, int]], line: int) -> Iterator[Item]:
    """The documents of `yaml_stream`'s blocks, each decoded where rapidyaml reads it exactly as PyYAML would, else
    left to the strict reader (whose lines then count from the document's `line`); the first block said to start
    on `line`. A List among them is the strict reader's too: it expands the items, each on its line. So is a
    document with a carriage return, which rapidyaml may take otherwise than PyYAML where it stands alone."""
    reader = RapidYaml() if ryml is not None else None
    at = spans[0][0] if spans else 0
    try:
        for begin, end in spans:
            for start, stop in _documents(data, begin, end):
                line += data[at:start].count(b"\n")
                at = start
                chunk = data[start:stop]
                obj = None
                if reader is not None and b"\r" not in chunk and not ambiguous(chunk):
                    try:
                        read = reader.json(chunk, document=True)
                        obj = decode(*read) if read is not None else None
                    except (*UNDECODABLE, NotKubectl):
                        obj = None
                    if obj is not None and _list_kind(obj):
                        obj = None
                yield Item(chunk, line, obj, stop)
    finally:
        if reader is not None:
            reader.close()
