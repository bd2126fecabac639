"""Every layout of the same objects reads alike, on the fast path: a List as kubectl writes it or with its fields in
any order, a stream of documents as written by hand (comments, empty documents, `...`), JSON Lists in any layout and
JSON objects. The reference is the real parser for the objects (PyYAML's `load_all` with libyaml's safe loader, or
`json.loads`), and the strict reader (PyYAML, which every file was read with before the fast paths) for their lines
and for what is wrong with a file. Streams are the fast path's from `layout.STREAM_BYTES` on: lowered here so every
one is."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forked_reader import _on_two_cores
from test_list_reader import LISTS, as_yaml, fast, objects, strict

from gpushare.cli import main
from gpushare.errors import InputError
from gpushare.kube import documents, forked, shapes
from gpushare.kube import layout as file_layout


@pytest.fixture(autouse=True)
def every_stream_is_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_layout, "STREAM_BYTES", 0)


#: libyaml's loader, as the strict reader's (PyYAML's own differs on tabs in places).
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_all(text: str) -> Iterator[Any]:
    return yaml.load_all(text, Loader=LOADER)


def expanded(documents_read: Iterator[Any]) -> list[dict[str, Any]]:
    """The objects of parsed documents as gpushare takes them: a List's items, each other mapping, trimmed."""
    found: list[dict[str, Any]] = []
    for document in documents_read:
        listed = isinstance(document, dict) and str(document.get("kind", "")).endswith("List")
        if listed and isinstance(document.get("items"), list):
            found += [shapes.trim(item) for item in document["items"] if isinstance(item, dict)]
            continue
        if isinstance(document, dict):  # anything else the strict reader refuses, which is then the reference
            found.append(shapes.trim(document))
    return found


def reads_as_the_parser_does(text: str, parsed: list[dict[str, Any]]) -> None:
    """The fast reader gives the parser's objects at the strict reader's lines, or the strict reader's error."""
    try:
        lines = [line for _, line in strict(text)]
    except InputError as exc:
        with pytest.raises(InputError) as caught:
            fast(text)
        assert str(caught.value) == str(exc)
        return
    assert fast(text) == list(zip(parsed, lines, strict=True))


#: The order of a List's fields, kubectl's (sorted) first; `items` anywhere.
ORDERS = list(itertools.permutations(["apiVersion", "items", "kind", "metadata"]))


def in_order(document: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {key: document[key] for key in order}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=LISTS, order=st.sampled_from(ORDERS), unquote=st.booleans())
def test_a_yaml_list_reads_alike_whatever_the_order_of_its_fields(
    document: dict[str, Any], order: tuple[str, ...], unquote: bool
) -> None:
    text = yaml.safe_dump(in_order(document, order), sort_keys=False, width=1 << 20, allow_unicode=True)
    if unquote:
        text = re.sub(r"'([^'\n:#]*)'", r"\1", text)
    try:
        parsed = expanded(parse_all(text))
    except yaml.YAMLError:
        parsed = []  # not YAML: the strict reader's error is the reference
    reads_as_the_parser_does(text, parsed)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=LISTS, order=st.sampled_from(ORDERS), indent=st.sampled_from([4, 2, None]))
def test_a_json_list_reads_alike_whatever_the_order_of_its_fields(
    document: dict[str, Any], order: tuple[str, ...], indent: int | None
) -> None:
    text = json.dumps(in_order(document, order), indent=indent, ensure_ascii=False)
    lines = [line for _, line in strict(text)]
    assert fast(text) == list(zip(expanded([json.loads(text)]), lines, strict=True))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=objects(), indent=st.sampled_from([4, 2, None]), lead=st.sampled_from(["", "\n\n", "  "]))
def test_a_json_object_reads_as_json_does(obj: dict[str, Any], indent: int | None, lead: str) -> None:
    keys = list(obj)
    text = lead + json.dumps({key: obj[key] for key in reversed(keys)}, indent=indent, ensure_ascii=False)
    assert fast(text) == [(shapes.trim(json.loads(text)), strict(text)[0][1])]


#: What a hand-written stream puts before a document, between documents and at its end.
BEFORE = st.sampled_from(["", "# a note\n", "\n", "#\n\n  # indented note\n"])
START = st.sampled_from(["---\n", "--- # a note\n", "---   \n", "---\n---\n", "---\n# only a note\n---\n"])
END = st.sampled_from(["", "", "...\n", "...\n# after the end\n"])


@st.composite
def streams(draw: st.DrawFn) -> str:
    """Documents between `---` lines as people write them: keys in the order they think of them, comments and blank
    lines, empty documents, an explicit end now and then; the first document's `---` left out or not."""
    text = ""
    for i, obj in enumerate(draw(st.lists(objects(), min_size=1, max_size=4))):
        order = draw(st.permutations(list(obj)))
        body = yaml.safe_dump({k: obj[k] for k in order}, sort_keys=False, width=1 << 20, allow_unicode=True)
        if draw(st.booleans()):
            body = re.sub(r"'([^'\n:#]*)'", r"\1", body)  # as a hand-edit leaves scalars plain
        start = draw(START) if i or draw(st.booleans()) or text.endswith("...\n") else ""
        text += start + draw(BEFORE) + body + draw(END)
    return text + draw(st.sampled_from(["", "---\n", "# the end\n"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=streams())
def test_a_stream_reads_as_the_parser_does(text: str) -> None:
    try:
        parsed = expanded(parse_all(text))
    except yaml.YAMLError:
        parsed = []
    reads_as_the_parser_does(text, parsed)


POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{}\nspec:\n  containers:\n  - name: c\n    image: i\n"


@pytest.mark.parametrize(
    "text",
    [
        "---\n" + POD.format(1) + "---\n" + POD.format(2),
        POD.format(1) + "---\n" + "apiVersion: v1\nkind: List\nitems:\n- " + POD.format(2).replace("\n", "\n  "),
        POD.format(1) + "--- !!map\n" + POD.format(2),  # a tag on the marker's line: the strict reader's
        POD.format(1) + "---\n&a\n" + POD.format(2),  # an anchor: the document is the strict reader's
        "%YAML 1.1\n---\n" + POD.format(1),
        POD.format(1) + "---\n" + POD.format(2).replace("  name: c", "\tname: c"),
        POD.format(1).replace("\n", "\r\n") + "---\r\n" + POD.format(2).replace("\n", "\r\n"),
        # what PyYAML refuses is said as it says it, on the file's line
        POD.format(1) + "---\n" + POD.format(2).replace("name: p2", "name: [p2"),
        POD.format(1) + "...\n" + POD.format(2),
        POD.format(1) + "---\n- a\n- b\n",
        POD.format(1) + "---\njust a scalar\n",
        POD.format(1) + "--- {a: 1}\n",
        "...\n---\n" + POD.format(1),  # PyYAML wants a node before a first `...`
        "# a note\n...\n---\n" + POD.format(1),
        POD.format(1) + "...\n...\n---\n" + POD.format(2),
        "---\t# a tab after the marker\n" + POD.format(1),
        POD.format(1) + "---\n\t# a tab before a note\n" + POD.format(2),
    ],
    ids=[
        "markers", "a List among them", "tag", "anchor", "directive", "tab", "crlf",
        "broken", "content-after-end", "sequence", "scalar", "flow-on-marker",
        "end-first", "end-after-a-note", "ends-twice", "tab-on-marker", "tab-before-note",
    ],
)  # fmt: skip
def test_a_stream_the_fast_path_leaves_is_read_as_pyyaml_reads_it(text: str) -> None:
    try:
        parsed = expanded(parse_all(text))
    except yaml.YAMLError:
        parsed = []
    reads_as_the_parser_does(text, parsed)


class _Whole:
    """Records the length of each text the strict reader reads."""

    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.original = documents.compose_all

    def __call__(self, source: Any, *args: Any, **kwargs: Any) -> Any:
        self.lengths.append(len(source) if isinstance(source, str | bytes) else -1)
        return self.original(source, *args, **kwargs)


def layouts(items: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    kubectl = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    kind_first = in_order(kubectl, ("kind", "metadata", "apiVersion", "items"))
    yield "yaml-kubectl", as_yaml(kubectl, unquote=False)
    yield "yaml-kind-first", yaml.safe_dump(kind_first, sort_keys=False, width=1 << 20)
    yield "yaml-fields-after-items", yaml.safe_dump(in_order(kubectl, ("items", "kind", "apiVersion")), sort_keys=False)
    hand = "".join(f"---\n# pod {i}\n" + yaml.safe_dump(item, sort_keys=False) for i, item in enumerate(items))
    yield "yaml-stream", "# written by hand\n" + hand.replace("---\n# pod 3", "---\n---\n# pod 3") + "...\n"
    yield "yaml-stream-bare", yaml.safe_dump_all(items)
    yield "json-kubectl", json.dumps(kubectl, indent=4)
    yield "json-kind-first", json.dumps(kind_first, indent=2)
    yield "json-minified", json.dumps(kind_first, separators=(",", ":"))


def test_every_layout_gives_the_same_objects_without_reading_the_file_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain pods, as every layout writes them: no item or document may fall to the strict reader, which reads at
    most a List's fields here, never the file."""
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "ml", "labels": {"app": f"a{i % 3}"}},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "500m"}}}]},
        }
        for i in range(8)
    ]
    expected = [shapes.trim(item) for item in items]
    whole = _Whole()
    monkeypatch.setattr(documents, "compose_all", whole)
    for layout, text in layouts(items):
        whole.lengths.clear()
        read = fast(text)
        assert [obj for obj, _ in read] == expected, layout
        assert all(length < 200 for length in whole.lengths), (layout, whole.lengths)
        monkeypatch.setattr(documents, "compose_all", whole.original)
        assert read == strict(text), layout
        monkeypatch.setattr(documents, "compose_all", whole)


def test_a_stream_below_the_threshold_is_read_strictly_and_a_large_one_as_a_list_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A repeated key: a small stream (a file written by hand) is refused as before, on its line; a large one is
    read as the fast List reader reads the same item, taking the last, as kubectl's JSON reader does."""
    repeated = POD.format(1).replace("  name: p1\n", "  name: p1\n  name: q1\n")
    text = POD.format(0) + "---\n" + repeated
    as_list = "apiVersion: v1\nitems:\n" + "".join(
        "- " + document.replace("\n", "\n  ").rstrip(" ") for document in (POD.format(0), repeated)
    )
    monkeypatch.setattr(file_layout, "STREAM_BYTES", len(text) + 1)
    with pytest.raises(InputError, match=re.escape("('name' at f:14 is already defined at line 13")):
        fast(text)
    monkeypatch.setattr(file_layout, "STREAM_BYTES", len(text))
    assert [obj for obj, _ in fast(text)] == [obj for obj, _ in fast(as_list + "kind: List\n")]
    assert fast(text)[1][0]["metadata"]["name"] == "q1"


def test_a_json_object_that_repeats_a_key_is_refused_on_its_line() -> None:
    text = '{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "p"},\n "kind": "Node"}'
    with pytest.raises(InputError, match=re.escape("('kind' at f:3 is already defined at line 1")):
        fast(text)


@pytest.mark.parametrize("command", ["validate", "place --nodes"])
def test_a_broken_document_in_a_large_stream_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text("".join("---\n" + POD.format(i) for i in range(50)).replace("name: p30", "name: [p30"))
    args = [*command.split(), str(path)]
    if command.startswith("place"):
        nodes = tmp_path / "nodes.yaml"
        nodes.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n")
        args = [*command.split(), str(nodes), str(path)]
    code = main(args)
    captured = capsys.readouterr()
    line = 1 + path.read_text().splitlines().index("  name: [p30")
    assert code == 2 and not captured.out
    assert len(captured.err.strip().splitlines()) == 1 and f"{path}:{line + 1}" in captured.err, captured.err


@pytest.mark.skipif(not forked.worthwhile(forked.MIN_BYTES), reason="needs Linux and two cores")
def test_a_stream_is_read_alike_on_one_core_and_two() -> None:
    """Each side cuts its own blocks into documents and counts their lines: the same objects at the same lines as
    the strict reader, also when the first half holds no document at all."""
    items = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "labels": {"a": "yes" if i % 7 else "x"}}}
        for i in range(300)
    ]
    stream = "".join(f"---\n# pod {i}\n" + yaml.safe_dump(item, sort_keys=False) for i, item in enumerate(items))
    empty_first = "---\n# nothing yet\n" * 2000 + stream
    for text in (stream, stream.replace("'yes'", "yes"), empty_first):
        two, started = _on_two_cores(text)
        assert started == 1 and two == strict(text) and len(two) == 300


@pytest.mark.parametrize("char", ["\x01", "\x7f", "\x81", "\x85", "\ufffe", "\u2028", "é"])
@pytest.mark.parametrize("layout", ["yaml-kubectl", "yaml-kind-first", "yaml-stream"])
def test_a_character_pyyaml_refuses_or_breaks_a_line_at_is_its_word(char: str, layout: str) -> None:
    """The fast decoders pass such a character through as written: the strict reader's refusal (or its line break)
    is the reference on every layout."""
    items = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}} for i in range(3)]
    text = dict(layouts(items))[layout].replace("name: p1", f"name: p{char}1")
    try:
        parsed = expanded(parse_all(text))
    except yaml.YAMLError:
        parsed = []
    reads_as_the_parser_does(text, parsed)


@pytest.mark.parametrize(
    "item",
    [
        "-\n  kind: Pod\n  metadata:\n    name: bare\n",
        "- # a note\n\n  kind: Pod\n  metadata:\n    name: noted\n",
        "- -\t  kind: Pod\n",
        "- kind: Pod\n  metadata:\n\tname: tabbed\n",
    ],
    ids=["bare-dash", "dash-and-note", "tab-after-dash", "tab-indent"],
)
@pytest.mark.parametrize("head", ["apiVersion: v1\nitems:\n", "kind: List\nmetadata: {}\nitems:\n"])
def test_an_item_that_starts_below_its_dash_or_holds_a_tab_reads_as_pyyaml_reads_it(item: str, head: str) -> None:
    text = head + "- kind: Pod\n  metadata:\n    name: a\n" + item + "- kind: Pod\n  metadata:\n    name: b\n"
    try:
        parsed = expanded(parse_all(text))
    except yaml.YAMLError:
        parsed = []
    reads_as_the_parser_does(text, parsed)
