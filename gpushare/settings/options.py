"""Command-line options, derived from the settings model so every setting has a flag.

`--scheduler-image-tag` sets `scheduler.image.tag`, and so on for every leaf; a few settings also
have the short names users expect (`--kube-version`). Python callers pass the same names as keyword
arguments (`kube_version="1.22"`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel

from gpushare.errors import InputError
from gpushare.settings.model import InstallerSettings

ALIASES = {"kubernetes-version": "kube-version"}
_SKIP = {"apiVersion", "kind"}


@dataclass(frozen=True)
class Option:
    flag: str  # without the leading dashes
    path: tuple[str, ...]  # camelCase keys in the settings document
    kind: str  # "str", "int", "bool", "yaml" (mapping or list), "csv" (list of words)
    help: str
    choices: tuple[str, ...] | None = None

    @property
    def field(self) -> str:
        return ".".join(self.path)

    def parse(self, text: Any) -> Any:
        """Turn a flag's text into the document value; a malformed one is an InputError naming the flag."""
        if not isinstance(text, str):
            return text
        if self.kind == "int":
            try:
                return int(text)
            except ValueError:
                raise InputError(f"--{self.flag}", text, "a whole number") from None
        if self.kind == "csv":
            return [w.strip() for w in text.split(",") if w.strip()]
        if self.kind == "yaml":
            try:
                return yaml.safe_load(text)
            except yaml.YAMLError:
                raise InputError(f"--{self.flag}", text, "YAML or JSON, e.g. '{cpu: 100m}' or '[]'") from None
        return text


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _kind(annotation: Any) -> tuple[str, tuple[str, ...] | None]:
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if annotation is bool:
        return "bool", None
    if annotation is int or (args and all(a is int for a in args)):
        return "int", None
    if (
        origin is list
        and args
        and get_origin(args[0]) is not None
        and all(isinstance(a, str) for a in get_args(args[0]))
    ):
        return "csv", tuple(get_args(args[0]))
    if origin in (list, dict):
        return "yaml", None
    literal = [a for a in get_args(annotation) if isinstance(a, str)]
    if literal and len(literal) == len(get_args(annotation)):
        return "str", tuple(literal)
    return "str", None


def _walk(model: type[BaseModel], prefix: tuple[str, ...]) -> list[Option]:
    result: list[Option] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if not prefix and key in _SKIP:
            continue
        path = (*prefix, key)
        annotation = info.annotation
        sub = next(
            (
                a
                for a in (annotation, *get_args(annotation))
                if isinstance(a, type) and issubclass(a, BaseModel) and get_origin(annotation) is not list
            ),
            None,
        )
        if sub is not None:
            result += _walk(sub, path)
            continue
        kind, choices = _kind(annotation)
        extra = info.json_schema_extra
        enum = extra.get("enum") if isinstance(extra, dict) else None
        if isinstance(enum, list):
            choices = tuple(str(c) for c in enum)
        flag = "-".join(_kebab(p) for p in path)
        result.append(Option(ALIASES.get(flag, flag), path, kind, info.description or "", choices))
    return result


OPTIONS: tuple[Option, ...] = tuple(_walk(InstallerSettings, ()))
BY_NAME: dict[str, Option] = {o.flag.replace("-", "_"): o for o in OPTIONS}


def set_path(document: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = document
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def apply(document: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A copy of `document` with `options` (python names of flags, e.g. kube_version) set on it."""
    result = copy.deepcopy(document)
    for name, raw in options.items():
        option = BY_NAME.get(name)
        if option is None:
            raise InputError(name, raw, "an option of `gpushare render --help` (python spelling, e.g. kube_version)")
        if raw is not None:
            set_path(result, option.path, option.parse(raw))
    return result
