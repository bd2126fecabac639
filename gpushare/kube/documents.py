"""Kubernetes documents as users have them: files, directories, standard input; YAML or JSON; Lists expanded.

Every object keeps where it came from (file and line of the object itself, also inside a `List`), so a
finding or an invalid pod can point at it, in text and in SARIF alike.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from gpushare.errors import InputError

try:
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

#: Nodes YAML aliases may add to one document beyond those written: generous for anchors in real manifests, a
#: bound on "billion laughs" (a few lines of nested aliases that expand to gigabytes when read).
MAX_ALIAS_EXPANSION = 1_000_000

#: Files a directory argument contributes.
SUFFIXES = (".yaml", ".yml", ".json")


def mapping(value: Any) -> dict[str, Any]:
    """A field of a document as a mapping: what YAML gave when it is one, else empty (readers stay lenient)."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """A field of a document as a list: what YAML gave when it is one, else empty."""
    return value if isinstance(value, list) else []


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


def compose_all(text: str, name: str, field: str = "file") -> Iterator[tuple[yaml.Node, Any]]:
    """Each document of a YAML or JSON text: its node (for lines) and its data, aliases bounded."""
    loader = _Loader(text)
    aliases = "*" in text and "&" in text  # no anchor and alias: nothing can expand
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if aliases:
                check_aliases(node, name, field)
            yield node, loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        at = f"{name}:{mark.line + 1}" if mark is not None else name
        raise InputError(field, name, f"valid YAML (error at {at})") from None
    finally:
        loader.dispose()


def read_documents(path: str | Path, text: str | None = None) -> list[Source]:
    """Every Kubernetes object in a file (List items expanded), each with the file and line it starts at."""
    name = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError("file", name, f"a readable YAML file ({exc})") from None
    result: list[Source] = []
    for node, data in compose_all(text, name):
        if data is None:
            continue
        if not isinstance(data, dict):
            raise InputError("file", name, f"Kubernetes objects (a mapping at {name}:{node.start_mark.line + 1})")
        result += [Source(item, name, line) for item, line in _items(node, data) if isinstance(item, dict)]
    return result


def read_paths(paths: list[str], stdin: TextIO | None = None) -> list[Source]:
    """Documents from files, directories (their *.yaml, *.yml, *.json, sorted) and `-` (standard input)."""
    result: list[Source] = []
    for raw in paths:
        if raw == "-":
            result += read_documents("<stdin>", (stdin or sys.stdin).read())
            continue
        path = Path(raw)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
                result += read_documents(file)
        elif path.exists():
            result += read_documents(path)
        else:
            raise InputError("file", raw, "an existing file, directory or -")
    return result
