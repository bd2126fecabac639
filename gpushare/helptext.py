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


@functools.cache
def _definitions(source: Path) -> dict[str, ast.ClassDef | ast.FunctionDef]:
    """The classes and functions a module's source defines at its top level (parsed once per module)."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}


def _compiled(obj: Any) -> str | None:
    """The extension module `obj` was compiled into (None: it runs from source)."""
    module = getattr(sys.modules.get(getattr(obj, "__module__", None) or ""), "__file__", None) or ""
    return module if module and not module.endswith(".py") else None


def _source_node(obj: Any) -> ast.ClassDef | ast.FunctionDef | None:
    """Where the compiled class or function `obj` is defined in its module's source (None: it runs from source)."""
    compiled = _compiled(obj)
    if compiled is None:
        return None
    node = _definitions(Path(compiled).with_name(Path(compiled).name.split(".")[0] + ".py")).get(obj.__name__)
    return node if isinstance(node, ast.ClassDef) == isinstance(obj, type) else None


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


class _FromSource:
    """A compiled class's docstring or signature, read from its source when first asked for (help(), inspect):
    parsing the public classes' modules at import would cost every run's start (about 25 ms)."""

    def __init__(self, cls: type, read: Callable[[Any, ast.ClassDef], Any]) -> None:
        self.cls, self.read = cls, read

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        node = _source_node(self.cls)
        return self.read(self.cls, node) if isinstance(node, ast.ClassDef) else None


def restored(obj: Any) -> Any:
    """A public name as help() should show it: a compiled class given its source's docstring and signature (read
    when first asked for), a compiled function wrapped in one that carries its docstring (a compiled function's
    cannot be set); anything else, or anything run from the source, as it is."""
    if isinstance(obj, type) and _compiled(obj):
        cls: Any = obj  # its __doc__ and __signature__ become descriptors
        cls.__doc__ = _FromSource(cls, lambda _, node: ast.get_docstring(node))
        if dataclasses.is_dataclass(obj):
            cls.__signature__ = _FromSource(obj, _signature)
        return cls
    node = _source_node(obj) if inspect.isbuiltin(obj) else None
    if not isinstance(node, ast.FunctionDef):
        return obj
    compiled = obj

    @functools.wraps(compiled)
    def function(*args: Any, **kwargs: Any) -> Any:
        return compiled(*args, **kwargs)

    function.__doc__ = ast.get_docstring(node) or compiled.__doc__
    return function


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
