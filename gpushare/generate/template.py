"""One object tree, two outputs: concrete manifests and Helm templates.

Component builders return plain Kubernetes objects in which every value a chart user may change at
install time is an `Expr`: the Helm pipeline that reads it and the value it has for these settings.
`resolve` gives the manifest; `to_helm` gives template text that `helm template` turns back into the
same manifest, which is what lets a test compare the two object by object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

try:
    _Dumper: type[yaml.SafeDumper] = yaml.CSafeDumper  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper


@dataclass(frozen=True)
class Expr:
    """A value the chart computes at install time: `helm` is a Go-template pipeline, `value` its result here."""

    helm: str
    value: Any
    #: Emit a multi-line string as a YAML literal block (`|`), the way a person would write a config file.
    literal: bool = False
    #: The pipeline yields YAML text (an `include` of a helper), placed as a block: a mapping or list value.
    yaml: bool = False
    #: Inside a text file (`text_of`): the pipeline's text as it is, not its JSON.
    raw: bool = False


def _omitted(value: Any) -> bool:
    """An empty mapping or list from the values is left out, as the template's `with` leaves it out."""
    return isinstance(value, Expr) and not value.yaml and isinstance(value.value, (dict, list)) and not value.value


def resolve(obj: Any) -> Any:
    """The concrete object: every Expr replaced by its value."""
    if isinstance(obj, Expr):
        return obj.value
    if isinstance(obj, dict):
        return {k: resolve(v) for k, v in obj.items() if not _omitted(v)}
    if isinstance(obj, list):
        return [resolve(v) for v in obj]
    return obj


def dump(obj: Any) -> str:
    """Block-style YAML, keys in builder order, multi-line strings as literal blocks."""
    return yaml.dump(obj, Dumper=_LiteralDumper, sort_keys=False, default_flow_style=False, width=1 << 20)


def dump_all(objects: list[Any]) -> str:
    return "".join("---\n" + dump(o) for o in objects)


class _LiteralDumper(_Dumper):  # type: ignore[misc,valid-type]
    pass


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_LiteralDumper.add_representer(str, _str_presenter)

_TOKEN = "gpusharexref{}x"
_TOKEN_RE = re.compile(r"gpusharexref(\d+)x")
_LINE_RE = re.compile(r"^(?P<indent> *)(?P<dash>- )?(?P<key>[^\s:][^:]*: )?gpusharexref(?P<n>\d+)x$")


def _tokenise(obj: Any, table: list[Expr]) -> Any:
    if isinstance(obj, Expr):
        table.append(obj)
        return _TOKEN.format(len(table) - 1)
    if isinstance(obj, dict):
        return {k: _tokenise(v, table) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_tokenise(v, table) for v in obj]
    return obj


def _scalar(expr: Expr) -> str:
    return f"{{{{ ({expr.helm}) | quote }}}}" if isinstance(expr.value, str) else f"{{{{ {expr.helm} }}}}"


def to_helm(obj: Any) -> str:
    """Helm template text for one object: scalars inline, mappings and lists through toYaml."""
    table: list[Expr] = []
    lines = []
    for line in dump(_tokenise(obj, table)).splitlines():
        match = _LINE_RE.match(line)
        if match is None:
            if _TOKEN_RE.search(line):
                raise ValueError(f"an Expr must be a whole value: {line!r}")
            lines.append(line)
            continue
        expr = table[int(match["n"])]
        head = line[: match.start("n") - len("gpusharexref")]
        if expr.literal:
            if match["key"] is None:
                raise ValueError(f"a literal Expr needs a key: {line!r}")
            column = len(match["indent"]) + (2 if match["dash"] else 0)
            lines.append(head + "|")
            lines.append(f"{{{{- ({expr.helm}) | nindent {column + 2} }}}}")
        elif isinstance(expr.value, (dict, list)):
            if match["key"] is None:
                raise ValueError(f"a block Expr needs a key: {line!r}")
            column = len(match["indent"]) + (2 if match["dash"] else 0)
            if expr.yaml:
                lines += [head.rstrip(), f"{{{{- {expr.helm} | nindent {column + 2} }}}}"]
            else:  # emitted only when not empty, as a person writes it
                lines += [
                    f"{{{{- with {expr.helm} }}}}",
                    head.rstrip(),
                    f"{{{{- toYaml . | nindent {column + 2} }}}}",
                    "{{- end }}",
                ]
        else:
            lines.append(head + _scalar(expr))
    return "\n".join(lines) + "\n"


def text_expr(text_with_tokens: str, table: list[Expr]) -> tuple[str, str]:
    """For a text built with tokens: (the concrete text, the same text as a Helm template body).

    Each value enters the text as JSON (`toJson` in Helm), which is valid in YAML and JSON alike and
    reads the same from Python and Go; a serialiser's own quotes around a token are dropped first.
    A `raw` Expr enters as its text.
    """
    body: list[str] = []
    concrete: list[str] = []
    position = 0
    for match in _QUOTED_TOKEN_RE.finditer(text_with_tokens):
        literal = text_with_tokens[position : match.start()]
        expr = table[int(match.group(2))]
        body += [literal, f"{{{{ {expr.helm} }}}}" if expr.raw else f"{{{{ toJson ({expr.helm}) }}}}"]
        concrete += [literal, str(expr.value) if expr.raw else json.dumps(expr.value)]
        position = match.end()
    body.append(text_with_tokens[position:])
    concrete.append(text_with_tokens[position:])
    if any("{{" in part for part in body[::2]):
        raise ValueError("a text with '{{' cannot be a Helm template body")
    return "".join(concrete), "".join(body)


_QUOTED_TOKEN_RE = re.compile(r'("?)gpusharexref(\d+)x\1')


def text_of(obj: Any, render: Any = dump) -> tuple[str, str]:
    """Serialise `obj` (YAML by default, or any str-returning function) keeping its Exprs as Helm expressions."""
    table: list[Expr] = []
    return text_expr(render(_tokenise(obj, table)), table)
