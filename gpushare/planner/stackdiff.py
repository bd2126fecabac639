"""Two rendered stacks compared object by object and field by field, as helm-diff shows a release's upgrade.

Objects are matched by API group, kind, namespace and name (a new apiVersion of the same kind is a change, not a
removal). A string that holds a YAML document (the scheduler configuration inside its ConfigMap) is compared by the
fields of that document, since a change of minor changes its apiVersion and a line of text would hide which.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import yaml

from gpushare.generate.template import dump

Kind = Literal["added", "removed", "changed"]


class _Absent:
    """A field one side does not have (None is a value a field may hold)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: Any  # ABSENT: the field is new
    after: Any  # ABSENT: the field is gone


@dataclass(frozen=True)
class ObjectChange:
    """One object added, removed or changed; `lines` is its unified diff as YAML (helm-diff's view)."""

    change: Kind
    api_version: str
    kind: str
    namespace: str | None
    name: str
    fields: tuple[FieldChange, ...]
    lines: tuple[str, ...]

    @property
    def title(self) -> str:
        group = self.api_version.rpartition("/")[0]
        kind = f"{self.kind} ({group})" if group else self.kind
        return f"{self.namespace or '(cluster)'}, {self.name}, {kind}"


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _step(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'


def _document(text: str) -> Any:
    """The YAML a multi-line string holds (a mapping or list), else None: it is compared as text."""
    if "\n" not in text.strip():
        return None
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) for every scalar of an object, an empty mapping or list counting as one."""
    if isinstance(value, str):
        inner = _document(value)
        if inner is not None:
            yield from leaves(inner, path)
            return
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, _step(path, str(key)))
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def field_changes(before: dict[str, Any], after: dict[str, Any]) -> list[FieldChange]:
    """Every path whose value differs, in the order of the newer object (then the fields only the older has)."""
    old, new = (dict(leaves(obj)) if obj else {} for obj in (before, after))  # no object: no fields
    changes = [FieldChange(p, old.get(p, ABSENT), v) for p, v in new.items() if p not in old or old[p] != v]
    changes += [FieldChange(p, v, ABSENT) for p, v in old.items() if p not in new]
    return changes


def _lines(before: dict[str, Any] | None, after: dict[str, Any] | None, title: str) -> tuple[str, ...]:
    old = dump(before).splitlines() if before is not None else []
    new = dump(after).splitlines() if after is not None else []
    return tuple(difflib.unified_diff(old, new, title, title, n=3, lineterm=""))[2:]  # the --- / +++ header: title


def compare(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> list[ObjectChange]:
    """The objects of `after` that are new or changed, in its order, then those only `before` has."""
    old = {_key(o): o for o in before}
    found: list[ObjectChange] = []
    seen = set()
    for obj in after:
        key = _key(obj)
        seen.add(key)
        was = old.get(key)
        if was == obj:
            continue
        fields = field_changes(was or {}, obj)
        found.append(_change("changed" if was is not None else "added", was, obj, fields))
    for key, obj in old.items():
        if key not in seen:
            found.append(_change("removed", obj, None, field_changes(obj, {})))
    return found


def _change(
    change: Kind, before: dict[str, Any] | None, after: dict[str, Any] | None, fields: list[FieldChange]
) -> ObjectChange:
    obj = after if after is not None else before
    assert obj is not None
    _, kind, namespace, name = _key(obj)
    made = ObjectChange(change, str(obj.get("apiVersion", "")), kind, namespace or None, name, tuple(fields), ())
    return replace(made, lines=_lines(before, after, made.title))
