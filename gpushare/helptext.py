"""What a package shows of itself: its names imported on first use, and for the public classes mypyc compiles,
their docstrings and signatures read from the source.

A compiled class loses its docstring, and its signature shows `type = None` for each annotated field; the wheel
ships each compiled module's source beside it, so the public classes are given back what the source says (the
annotations as written, the defaults the dataclass holds). Run from the source, classes are left as they are.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any


class _Factory:
    """A field's default made by a factory, shown as the standard dataclass signature shows it."""

    def __repr__(self) -> str:
        return "<factory>"


def _class_node(cls: type) -> ast.ClassDef | None:
    compiled = getattr(sys.modules.get(cls.__module__), "__file__", None) or ""
    if compiled.endswith(".py"):
        return None
    source = Path(compiled).with_name(Path(compiled).name.split(".")[0] + ".py")
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)


def _signature(cls: Any, node: ast.ClassDef) -> inspect.Signature:
    written = {
        n.target.id: ast.unparse(n.annotation)
        for n in node.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    parameters = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = _Factory()
        else:
            default = inspect.Parameter.empty
        kind = inspect.Parameter.KEYWORD_ONLY if f.kw_only is True else inspect.Parameter.POSITIONAL_OR_KEYWORD
        parameters.append(inspect.Parameter(f.name, kind, default=default, annotation=written.get(f.name, f.type)))
    return inspect.Signature(parameters, return_annotation=None)


def restore(*classes: type) -> None:
    """Give compiled public classes their source's docstring and signature (nothing to do run from the source)."""
    for cls in classes:
        node = _class_node(cls)
        if node is None:
            continue
        cls.__doc__ = ast.get_docstring(node) or cls.__doc__
        if dataclasses.is_dataclass(cls):
            cls.__signature__ = _signature(cls, node)  # type: ignore[attr-defined]


def lazy(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's `__getattr__` and `__dir__` (PEP 562) for `names` (public name -> its module): each module is
    imported when one of its names is first asked for, so a caller that needs none of them does not pay its import."""
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *names})

    return getattr_, dir_
