"""The fast List reader (msgspec, rapidyaml) reads exactly what the strict reader (PyYAML) reads, or leaves the
item to it: the same objects, trimmed alike, at the same lines, on any layout and any scalar YAML 1.1 and 1.2
type apart. The strict reader is the reference: it is what every file was read with before."""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import re2
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpushare.errors import InputError
from gpushare.kube import documents, forked, listing, shapes

#: Scalars YAML 1.1 (PyYAML) and YAML 1.2 (rapidyaml) type apart, or that look like it, and plain ones.
TRICKY = [
    "yes", "no", "on", "off", "y", "n", "True", "FALSE", "Null", "~", "null", "true", "1e5", "1.5e3", "1e+06",
    "0123", "07", "0x1F", "0b101", "0o17", "1_000", "12:30", ".5", "5.", "-.inf", ".nan", "2024-01-01",
    "2026-11-20T08:15:42Z", "1.5", "-12", "0", "10.0.0.1", "1.2.3", "500m", "8Gi", "+1", "e5397835", "3e21",
    "a: b", "x #y", "- z", "", " lead", "*star", "&amp", "!bang", "{}", "[]", "[1]", "multi\nline", "é",
    "nan", "inf", "-inf", "+inf", "Infinity", "NaN",
]  # fmt: skip
SCALAR = st.one_of(
    st.sampled_from(TRICKY),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([1e20, -2.5e-7, 1e5]),  # JSON writes them with exponents
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
)
MAPPING = st.dictionaries(st.sampled_from([*TRICKY[:12], "app", "team", "x"]), SCALAR, max_size=4)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["Pod", "Pod", "Node", "ConfigMap", "Deployment"]))
    container = {
        "name": draw(SCALAR),
        "image": draw(SCALAR),
        "resources": {"limits": draw(MAPPING), "requests": {"cpu": draw(SCALAR), "aliyun.com/gpu-mem": draw(SCALAR)}},
        "env": [{"name": draw(st.sampled_from(["ALIYUN_COM_GPU_MEM_CONTAINER", "OTHER"])), "value": draw(SCALAR)}],
        "ports": [{"containerPort": draw(SCALAR)}],
    }
    containers: Any = draw(st.sampled_from([[container], [container, "not a container"], "not a list"]))
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": draw(SCALAR),
            "labels": draw(MAPPING),
            "annotations": draw(MAPPING),
            "managedFields": [{"manager": draw(SCALAR), "fieldsV1": draw(MAPPING)}],
        },
        "spec": {"containers": containers, "nodeSelector": draw(MAPPING), "priority": draw(SCALAR)},
        "status": {"phase": draw(SCALAR), "podIP": "10.0.0.1", "conditions": [draw(MAPPING)]},
        **({"data": draw(MAPPING)} if kind == "ConfigMap" else {}),
    }


def as_yaml(document: dict[str, Any], unquote: bool) -> str:
    """As kubectl lays it out (sorted keys, block style); `unquote` turns quoted scalars plain, as a hand-edit
    might, so PyYAML then types them its own way and the fast path must follow or step aside."""
    text = yaml.safe_dump(document, sort_keys=True, default_flow_style=False, width=1 << 20, allow_unicode=True)
    return re.sub(r"'([^'\n:#]*)'", r"\1", text) if unquote else text


def strict(text: str, name: str = "f") -> list[tuple[dict[str, Any], int | None]]:
    return [(s.obj, s.line) for s in documents._sources(documents.compose_all(text, name), name)]


def fast(text: str, name: str = "f") -> list[tuple[dict[str, Any], int | None]]:
    return [(s.obj, s.line) for s in documents.read_documents(name, text)]


LISTS = st.lists(objects(), min_size=1, max_size=4).map(
    lambda items: {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=LISTS, layout=st.sampled_from(["yaml", "yaml-unquoted", "json-4", "json-2", "json-minified"]))
def test_the_fast_reader_reads_what_the_strict_reader_reads(document: dict[str, Any], layout: str) -> None:
    if layout.startswith("yaml"):
        text = as_yaml(document, unquote=layout == "yaml-unquoted")
    else:
        indent = {"json-4": 4, "json-2": 2, "json-minified": None}[layout]
        text = json.dumps(document, indent=indent, ensure_ascii=False)
    try:
        expected = strict(text)
    except InputError:
        return  # text the strict reader refuses (an unquoted `a: b`): the error path is tested below
    if layout.startswith("json"):  # JSON's own reading is the reference for values (PyYAML takes 1e+20 for a string)
        values = [shapes.trim(item) for item in json.loads(text)["items"]]
        expected = [(value, line) for value, (_, line) in zip(values, expected, strict=True)]
    assert fast(text) == expected


def test_the_fast_reader_takes_kubectl_lists() -> None:
    """The equality above would also hold if every item fell back: here none may."""
    items = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": {}} for i in range(3)]
    kubectl = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    data = as_yaml(kubectl, False).encode()
    _, spans = listing.yaml_list(data) or (None, [])
    read = list(forked.items(data, spans, partial(listing.yaml_items, data), *IGNORED))
    assert [i.line for i in read] == [3, 8, 13] and all(i.obj is not None for i in read)
    kind_first = {"kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    for document, indent, by_layout in ((kubectl, 4, True), (kind_first, 2, True), (kind_first, None, False)):
        as_json = json.dumps(document, indent=indent)
        data = as_json.encode()
        found = listing.json_list(data)
        assert found is not None and (found.between is not None) is by_layout
        read = list(forked.items(data, found.spans, partial(listing.json_items, data, found.between), *IGNORED))
        assert [i.line for i in read] == [line for _, line in strict(as_json)] and all(i.obj is not None for i in read)


#: `forked.items`' last two arguments where a test needs no progress.
IGNORED = (listing.span_start, lambda _: None)


def test_a_layout_broken_inside_an_item_is_read_right() -> None:
    """A nested list laid out at the items' own indentation looks like a cut between two items: the item cut
    there does not decode whole, and the file is read the strict way."""
    text = """{
    "apiVersion": "v1",
    "items": [
        {
            "kind": "Pod",
            "metadata": {"name": "a"},
            "spec": {"containers": [
        {
            "name": "c1"
        },
        {
            "name": "c2"
        }
            ]}
        },
        {
            "kind": "Pod", "metadata": {"name": "b"}
        }
    ],
    "kind": "List",
    "metadata": {}
}"""
    found = listing.json_list(text.encode())
    assert found is not None and found.between is not None
    with pytest.raises(listing.NotKubectl):
        list(listing.json_items(text.encode(), found.between, found.spans, 1))
    assert fast(text) == strict(text) and [obj["metadata"]["name"] for obj, _ in fast(text)] == ["a", "b"]


def test_a_repeated_items_key_after_the_items_wins_as_in_kubectl() -> None:
    items = ",\n".join(json.dumps({"kind": "Pod", "metadata": {"name": n}}, indent=4) for n in "ab")
    text = '{\n"apiVersion": "v1",\n"items": [\n' + items + '\n],\n"kind": "List",\n"items": []\n}'
    found = listing.json_list(text.encode())
    assert found is not None and found.spans == []
    assert fast(text) == []


@pytest.mark.parametrize("between", ["other:\n", "other: 1\n", "-x: 1\n", "...\n"])
def test_a_line_at_column_0_ends_the_items_wherever_it_is(between: str) -> None:
    """Where the items end is looked for after the last `- ` line only; one sooner is found as the items are read."""
    items = [f"- kind: Pod\n  metadata:\n    name: p{i}\n" for i in range(6)]
    text = "apiVersion: v1\nitems:\n" + "".join(items[:3]) + between + "".join(items[3:]) + "kind: List\n"
    try:
        expected = strict(text)
    except InputError as exc:  # not YAML: the fast reader says the same
        with pytest.raises(InputError, match=re.escape(str(exc))):
            fast(text)
    else:
        assert fast(text) == expected


def test_an_item_larger_than_the_output_buffer_is_read_fast() -> None:
    """rapidyaml emits each item's JSON into one reused buffer, grown for an item that does not fit."""
    notes = {f"note-{i}": "x" * 1000 for i in range(300)}  # 300 KB of JSON, the buffer starts at 64 KiB
    items = [{"kind": "Pod", "metadata": {"name": "big", "annotations": notes}}, {"kind": "Pod"}]
    text = as_yaml({"apiVersion": "v1", "items": items, "kind": "List"}, False)
    data = text.encode()
    _, spans = listing.yaml_list(data) or (None, [])
    read = list(listing.yaml_items(data, spans, 3))
    assert [i.obj for i in read] == [value for value, _ in strict(text)] == items


def test_keys_pyyaml_types_are_read_as_pyyaml_reads_them() -> None:
    """A plain key that reads as a number, a boolean or null stays one for PyYAML, while rapidyaml's JSON makes
    every key a string: such an item is the strict reader's. `.` (managedFields') is a string key to both."""
    keys = ["true", "false", "null", "0", "80", "-12", "1.5"]
    items = [
        f"- kind: {kind}\n  metadata:\n    name: a\n    labels:\n      {key}: x\n"
        for kind in ("Pod", "ConfigMap")
        for key in keys
    ]
    items.append("- kind: Pod\n  metadata:\n    name: b\n    labels:\n      .: x\n")
    text = "apiVersion: v1\nitems:\n" + "".join(items) + "kind: List\n"
    read = fast(text)
    assert read == strict(text)
    typed: list[Any] = [True, False, None, 0, 80, -12, 1.5]
    assert [next(iter(obj["metadata"]["labels"])) for obj, _ in read] == typed * 2 + ["."]


def test_without_rapidyaml_yaml_lists_take_the_strict_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "ryml", None)
    items = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "yes"}}}]
    text = as_yaml({"apiVersion": "v1", "items": items, "kind": "List"}, unquote=True)
    assert fast(text) == strict(text) and fast(text)[0][0]["metadata"]["labels"] == {"a": True}


def test_an_anchor_used_by_another_item_reads_the_whole_file_strictly() -> None:
    capacity = {"cpu": "64", "aliyun.com/gpu-mem": "128"}
    items = [{"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": capacity}} for i in range(3)]
    text = yaml.safe_dump({"apiVersion": "v1", "items": items, "kind": "List"})
    assert "*id001" in text
    assert fast(text) == strict(text) and len(fast(text)) == 3


def test_an_error_in_an_item_is_placed_on_its_line(tmp_path: Path) -> None:
    items = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}} for i in range(3)]
    lines = as_yaml({"apiVersion": "v1", "items": items, "kind": "List"}, False).splitlines()
    broken = next(i for i, line in enumerate(lines) if "name: p1" in line)
    lines[broken] = "    name: [p1"
    path = tmp_path / "pods.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        documents.read_documents(path)
    assert f"error at {path}:{broken + 2}" in str(caught.value) or f"error at {path}:{broken + 1}" in str(caught.value)
    with pytest.raises(InputError) as strict_error:
        strict(path.read_text(), str(path))
    assert str(caught.value) == str(strict_error.value)


#: Lists whose second item holds text that is no UTF-8 (a byte), or that rapidyaml or msgspec cannot make UTF-8 of
#: (an escaped lone surrogate), in a value or in the kind.
NO_UTF8 = [
    b'apiVersion: v1\nitems:\n- kind: Pod\n- kind: Pod\n  metadata:\n    name: "\xff"\nkind: List\n',
    b'apiVersion: v1\nitems:\n- kind: Pod\n- kind: ConfigMap\n  data:\n    x: "\\ud800"\nkind: List\n',
    b'apiVersion: v1\nitems:\n- kind: Pod\n- kind: "\\ud800"\n  metadata:\n    name: a\nkind: List\n',
    *(
        b'{\n"apiVersion": "v1",\n"items": [\n  {\n    "kind": "Pod"\n  },\n  {\n    "kind": "Pod",\n    "metadata": '
        + name
        + b'\n  }\n],\n"kind": "List"\n}\n'
        for name in (b'{"name": "\xff"}', b'{"name": "\\ud800"}')
    ),
    b'{"apiVersion":"v1","items":[{"kind":"Pod"},{"kind":"Pod","metadata":{"name":"\xff"}}],"kind":"List"}',
]


@pytest.mark.parametrize("data", NO_UTF8)
def test_text_that_is_no_utf8_gets_the_strict_readers_error(
    tmp_path: Path, data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast decoders refuse it (UnicodeDecodeError, not their own decode error): the strict reader then says
    what and where it is, in one line, as it does without the fast path."""
    path = tmp_path / "pods.yaml"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        documents.read_documents(path)
    monkeypatch.setenv(documents.READER_ENV, "pyyaml")
    with pytest.raises(InputError) as strict_error:
        documents.read_documents(path)
    assert str(caught.value) == str(strict_error.value)


def test_an_item_rapidyaml_refuses_leaves_nothing_on_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """rapidyaml writes its parse error on C's stderr before it raises: none of that reaches the user, whose one
    line is the strict reader's error (gpushare's own)."""
    path = tmp_path / "pods.yaml"
    path.write_text("apiVersion: v1\nitems:\n- kind: Pod\n- kind: Pod\n  metadata:\n    name: a: b\nkind: List\n")
    with pytest.raises(InputError, match=re.escape(f"{path}:6")):
        documents.read_documents(path)
    assert capfd.readouterr().err == ""
    print("still here", file=sys.stderr)  # and stderr is given back
    assert capfd.readouterr().err == "still here\n"


def test_a_file_is_read_from_its_mapping_and_its_pages_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "RELEASE", 0)  # hand pages back after every item
    items = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}" * 3000, "managedFields": [{"m": i}]}}
        for i in range(3)
    ]
    for name, text in (
        ("pods.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4)),
        ("pods.yaml", as_yaml({"apiVersion": "v1", "items": items, "kind": "List"}, False)),
    ):
        path = tmp_path / name
        path.write_text(text)
        read = documents.read_documents(path)
        assert [(s.obj, s.line) for s in read] == strict(text, str(path))
        assert len(read) == 3 and all("managedFields" not in s.obj["metadata"] for s in read)


def test_trim_keeps_what_gpushare_reads_and_only_cgpu_env() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}, "managedFields": [1]},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "livenessProbe": {},
                    "env": [{"name": "ALIYUN_COM_GPU_MEM_CONTAINER", "value": "3"}, {"name": "PATH", "value": "/"}],
                },
                "junk",
            ],
            "volumes": [{}],
            "tolerations": [],
        },
        "status": {"phase": "Running", "podIP": "10.0.0.1"},
    }
    assert shapes.trim(pod) == {
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "i", "env": [{"name": "ALIYUN_COM_GPU_MEM_CONTAINER", "value": "3"}]},
                "junk",
            ],
            "tolerations": [],
        },
        "status": {"phase": "Running"},
    }
    node = {"kind": "Node", "metadata": {"name": "n", "managedFields": [1]}, "status": {"images": [1]}}
    assert shapes.trim(node) == {"kind": "Node", "metadata": {"name": "n"}, "status": {"images": [1]}}


@pytest.mark.parametrize(
    ("chunk", "risky"),
    [
        (b"  x: yes\n", True),
        (b"  x: 'yes'\n", False),
        (b"  cpu: 500m\n", False),
        (b"  x: 1e5\n", True),
        (b"  x: 1.5\n", False),
        (b"  x: 0123\n", True),
        (b"  podIP: 10.0.0.1\n", False),
        (b"  message: '0/2000 nodes are available: 2000 Insufficient'\n", False),
        (b"  hash: e5397835\n", False),
        (b"  x: &a 1\n", True),
        (b"- yes: 1\n", True),
        (b"  - - on\n", True),
        (b"  x: 2024-01-01\n", True),
        (b"  x: [1]\n", True),
        (b"  x: []\n", False),
        # every YAML 1.1 word, and words that only start like one
        *((b"  x: " + word + b"\n", True) for word in b"y Y yes Yes YES n N no No NO on On ON off Off OFF".split()),
        *((b"  x: " + word + b"\n", True) for word in b"True TRUE False FALSE Null NULL ~".split()),
        *((b"  " + word + b": x\n", True) for word in b"yes No ON ~".split()),
        *((b"  x: " + word + b"\n", False) for word in b"true false null yEs nO oN Yesterday none off-peak".split()),
        *((b"  x: " + word + b"\n", True) for word in b"nan inf -inf infinity NaN Inf +INF".split()),
        *((b"  x: " + word + b"\n", False) for word in b"nano info inference nani".split()),
        *((b"  " + word + b": x\n", False) for word in b"name namespace fieldsType operation time type".split()),
        # keys both read alike as values, that PyYAML keeps typed where JSON's keys are strings
        *((b"  " + key + b": x\n", True) for key in b"true false null 0 80 -12 1.5 1.".split()),
        (b"  : x\n", True),
        (b"- 80 : x\n", True),
        *((b"  " + key + b": x\n", False) for key in b". f:app k:{} nullable truex 1password.com/x".split()),
        (b"  - 80\n  x: 10.0.0.1:80\n", False),
    ],
)
@pytest.mark.parametrize("engine", ["re2", "re"])
def test_the_guard(chunk: bytes, risky: bool, engine: str) -> None:
    assert listing.ambiguous(chunk, GUARDS[engine]) is risky


#: The guard compiled by each engine: RE2 where google-re2 has a wheel (here), `re` elsewhere.
GUARDS = {"re2": listing.guards(re2), "re": listing.guards(None)}
#: Pieces of block YAML around where a plain scalar starts, and bytes that are no UTF-8.
PIECES = [
    *(" ", "\t", "\n", "\r", "\x0b", "\x0c", "- ", "-", ": ", ":", " #", "#", "'", '"', "key"),
    *("_", ".", "e", "E", "+", "x", "0x", "0b"),
    *("y", "yes", "No", "ON", "off", "~", "true", "Null", "0", "1", "9", "12:30", "2024-01-01", ".inf", "nan"),
    *("&", "*", "!", "%", "@", "`", "?", "|", ">", "<<", "[", "]", "{", "}", "---", "...", "é"),
]  # fmt: skip
YAMLISH = st.lists(st.sampled_from([p.encode() for p in PIECES] + [b"\xff"]), max_size=16).map(b"".join)


#: Where the items of a kubectl YAML List end, found by each engine.
AFTER_ITEMS = {"re2": listing.linear(listing.AFTER_ITEMS, re2), "re": listing.linear(listing.AFTER_ITEMS, None)}


@settings(max_examples=300)
@given(chunk=YAMLISH)
@example(chunk=b"- a\n\x0bb")  # whitespace the engines' `\s` tell apart (RE2's has no vertical tab)
@example(chunk=b"\x0c: yes\n-\r")
def test_the_patterns_find_the_same_on_either_engine(chunk: bytes) -> None:
    """The patterns keep to what RE2 and `re` read alike; `re` adds lookahead and possessive quantifiers to the
    guard only to fail sooner. (Checked by hand against the guard before RE2: 300,000 random chunks, no
    difference.)"""
    assert listing.ambiguous(chunk, GUARDS["re2"]) is listing.ambiguous(chunk, GUARDS["re"])
    by_re2, by_re = (AFTER_ITEMS[engine].search(chunk) for engine in ("re2", "re"))
    assert (by_re2 and by_re2.start()) == (by_re and by_re.start())


#: Lines a YAML List may hold at column 0 and within its items: items (empty ones too), their fields, comments,
#: blank lines, and lines that end the items (keys, `-x`, document markers, a tab).
LIST_LINES = st.sampled_from(
    ["- a: 1\n", "-\n", "  b: 2\n", "  - c\n", "#note\n", "\n", " \n", "x: 1\n", "-x\n", "...\n", "\tt\n", "-"]
)


@settings(max_examples=300)
@given(lines=st.lists(LIST_LINES, max_size=24), tail=st.sampled_from(["- a: 9\nkind: List\n", ""]))
@example(lines=["- a: 1\n", "x: 1\n", "- a: 1\n"], tail="- a: 9\nkind: List\n")
@example(lines=["- a: 1\n", "-"], tail="- a: 9\nkind: List\n")  # `--`: a line that ends the items
@example(lines=["- a: 1\n", "-"], tail="")  # a `-` that ends the file starts no item and ends none
@example(lines=["-\n", "-\n", "-"], tail="")
def test_cutting_the_items_finds_a_line_that_ends_them_as_looking_first_did(lines: list[str], tail: str) -> None:
    """Each side cuts its blocks into items and meets, in the same pass, any line at column 0 that ends the items
    before the last (NotKubectl): what looking for one over the whole half first found, with the same items."""
    data = ("apiVersion: v1\nitems:\n- a: 0\n" + "".join(lines) + tail).encode()
    found = listing.yaml_list(data)
    assert found is not None
    _, spans = found
    ends = listing.linear(listing.AFTER_ITEMS).search(data, spans[0][0], spans[-1][1]) is not None
    expected = None if ends else list(listing._cut(data, spans, listing.YAML_ITEM, listing._yaml_item))
    cutting = listing._cut(data, spans, listing._YAML_LINE, partial(listing._yaml_line, data))
    try:
        cut: list[tuple[int, int]] | None = list(cutting)
    except listing.NotKubectl:
        cut = None
    assert cut == expected
