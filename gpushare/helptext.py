"""What a package shows of itself: its names imported on first use, and for the public classes and functions mypyc
compiles, their docstrings and signatures read from the source.

A compiled class or function loses its docstring, and a class's signature shows `type = None` for each annotated
field; the wheel ships each compiled module's source beside it, so the public names are given back what the source
says (the annotations as written, the defaults the dataclass holds). Run from the source, they are left as they are.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
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


def _source_node(obj: Any) -> ast.ClassDef | ast.FunctionDef | None:
    """Where the compiled class or function `obj` is defined in its module's source (None: it runs from source)."""
    compiled = getattr(sys.modules.get(getattr(obj, "__module__", None) or ""), "__file__", None) or ""
    if compiled.endswith(".py"):
        return None
    source = Path(compiled).with_name(Path(compiled).name.split(".")[0] + ".py")
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    kinds = ast.ClassDef if isinstance(obj, type) else ast.FunctionDef
    return next((n for n in tree.body if isinstance(n, kinds) and n.name == obj.__name__), None)


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


def restored(obj: Any) -> Any:
    """A public name as help() should show it: a compiled class given its source's docstring and signature, a
    compiled function wrapped in one that carries its docstring (a compiled function's cannot be set); anything
    else, or anything run from the source, as it is."""
    node = _source_node(obj) if isinstance(obj, type) or inspect.isbuiltin(obj) else None
    if node is None:
        return obj
    if isinstance(node, ast.FunctionDef):
        compiled = obj

        @functools.wraps(compiled)
        def function(*args: Any, **kwargs: Any) -> Any:
            return compiled(*args, **kwargs)

        function.__doc__ = ast.get_docstring(node) or compiled.__doc__
        return function
    obj.__doc__ = ast.get_docstring(node) or obj.__doc__
    if dataclasses.is_dataclass(obj):
        obj.__signature__ = _signature(obj, node)  # type: ignore[union-attr]
    return obj


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
