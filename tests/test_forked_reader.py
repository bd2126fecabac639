"""A large List read on two cores (`kube/forked`) gives what one core gives: the same objects at the same lines, the
strict reader's word on a broken item in either half, the second half read here when the child fails, and no child
left behind when reading stops early. Files are small here: the size threshold is lowered so every List forks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from helpers import interrupt_when_forked
from hypothesis import HealthCheck, given, settings
from test_list_reader import LISTS, NO_UTF8, as_yaml, fast, strict

from gpushare.errors import InputError
from gpushare.kube import documents, forked, listing

pytestmark = pytest.mark.skipif(not forked.worthwhile(forked.MIN_BYTES), reason="needs Linux and two cores")


def _pods(count: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    items = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", **(extra or {})}, "spec": {}}
        for i in range(count)
    ]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def _texts(document: dict[str, Any]) -> Iterator[tuple[str, str]]:
    yield "yaml", as_yaml(document, unquote=False)
    yield "yaml-unquoted", as_yaml(document, unquote=True)
    yield "json", json.dumps(document, indent=4, ensure_ascii=False)


class _Forks:
    """Counts the children started, so a test knows the two-core path ran."""

    def __init__(self) -> None:
        self.started = 0
        self.original = forked._Child.start

    def __call__(self, data: Any, read: Any) -> Any:
        child = self.original(data, read)
        self.started += child is not None
        return child


def _on_two_cores(text: str, name: str = "f") -> tuple[list[Any], int]:
    forks = _Forks()
    with mock.patch.object(forked, "MIN_BYTES", 0), mock.patch.object(forked._Child, "start", forks):
        return fast(text, name), forks.started


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=LISTS.filter(lambda d: len(d["items"]) >= 2))
def test_two_cores_read_what_one_core_reads(document: dict[str, Any]) -> None:
    for layout, text in _texts(document):
        try:
            one = fast(text)
        except InputError as exc:
            with pytest.raises(InputError) as caught:
                _on_two_cores(text)
            assert str(caught.value) == str(exc), layout
            continue
        two, started = _on_two_cores(text)
        assert two == one, layout
        assert started == 1, layout


def test_blocks_of_many_items_are_cut_into_the_strict_readers_items() -> None:
    """A long List is handed to the two sides in blocks of items, each cut into items by the side reading it: every
    item, of any size, comes out once, at its line; an empty item (`-` alone on its line, which the strict reader
    leaves out) does not hide the next; a line at column 0 inside a block still ends the fast path."""
    document = _pods(700)
    for i, item in enumerate(document["items"]):
        item["metadata"]["labels"] = {f"k{j}": "v" for j in range(i % 9)}  # items of unequal length
    document["items"][3::7] = [None] * len(document["items"][3::7])
    for layout, written in _texts(document):
        text = written.replace("\n- null\n", "\n-\n")  # YAML's empty item: the next item's line follows at once
        data = text.encode()
        spans = listing.json_list(data).spans if layout == "json" else listing.yaml_list(data)[1]  # type: ignore[union-attr]
        assert 16 < len(spans) <= listing._BLOCKS, layout  # blocks, not items
        two, started = _on_two_cores(text)
        assert started == 1 and two == strict(text) and len(two) == 600, layout
    lines = as_yaml(document, unquote=False).splitlines(keepends=True)
    named = lines.index("    name: p350\n")
    middle = max(i for i in range(named) if lines[i].startswith("- "))  # that item's first line
    text = "".join([*lines[:middle], "other: 1\n", *lines[middle:]])
    with pytest.raises(InputError) as expected:
        strict(text)
    with pytest.raises(InputError) as caught:
        _on_two_cores(text)
    assert str(caught.value) == str(expected.value)


def test_an_item_left_to_the_strict_reader_in_the_second_half_keeps_its_place() -> None:
    document = _pods(6)
    document["items"][4]["metadata"]["labels"] = {"a": "yes"}  # typed apart by YAML 1.1 and 1.2: the strict reader
    text = as_yaml(document, unquote=True)
    two, started = _on_two_cores(text)
    assert started == 1 and two == fast(text)
    assert [obj["metadata"]["name"] for obj, _ in two] == [f"p{i}" for i in range(6)]
    assert two[4][0]["metadata"]["labels"] == {"a": True}


@pytest.mark.parametrize("half", ["first", "second"])
def test_a_broken_item_in_either_half_is_reported_on_its_line(tmp_path: Path, half: str) -> None:
    lines = as_yaml(_pods(6), unquote=False).splitlines()
    target = "name: p1" if half == "first" else "name: p4"
    broken = next(i for i, line in enumerate(lines) if target in line)
    lines[broken] = lines[broken].replace(target, f"name: [{target[6:]}")
    path = tmp_path / "pods.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as one:
        documents.read_documents(path)
    with mock.patch.object(forked, "MIN_BYTES", 0), pytest.raises(InputError) as two:
        documents.read_documents(path)
    assert str(two.value) == str(one.value) and f"{path}:{broken + 2})" in str(two.value)  # where PyYAML sees it


@pytest.mark.parametrize("data", NO_UTF8)
def test_text_that_is_no_utf8_in_the_childs_half_gets_one_line(tmp_path: Path, data: bytes) -> None:
    """The child meets it (the second item): the strict reader's error, as on one core, not the child's failure
    read again here into a traceback."""
    path = tmp_path / "pods.yaml"
    path.write_bytes(data)
    with pytest.raises(InputError) as one:
        documents.read_documents(path)
    forks = _Forks()
    with (
        mock.patch.object(forked, "MIN_BYTES", 0),
        mock.patch.object(forked._Child, "start", forks),
        pytest.raises(InputError) as two,
    ):
        documents.read_documents(path)
    assert str(two.value) == str(one.value)
    assert forks.started == 1


def test_an_item_rapidyaml_refuses_in_the_childs_half_leaves_nothing_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text("apiVersion: v1\nitems:\n- kind: Pod\n- kind: Pod\n  metadata:\n    name: a: b\nkind: List\n")
    forks = _Forks()
    with (
        mock.patch.object(forked, "MIN_BYTES", 0),
        mock.patch.object(forked._Child, "start", forks),
        pytest.raises(InputError, match=re.escape(f"{path}:6")),
    ):
        documents.read_documents(path)
    assert forks.started == 1 and capfd.readouterr().err == ""


def test_when_the_child_fails_this_process_reads_its_half(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "_run", lambda *args: 1)  # the child exits 1 having written nothing
    for _, text in _texts(_pods(5)):
        two, started = _on_two_cores(text)
        assert started == 1 and two == fast(text) and len(two) == 5


def test_a_child_that_raises_never_returns_into_the_callers_code() -> None:
    """Whatever goes wrong in the child, it exits: it must not carry on with the caller's work as a second copy.
    Run in a process of its own, where an escaped child would print a second line."""
    script = (
        "import json\n"
        "from unittest import mock\n"
        "from gpushare.kube import documents, forked\n"
        "def broken(*args):\n"
        "    raise RuntimeError('the child fails')\n"
        "items = [{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': f'p{i}'}} for i in range(40)]\n"
        "text = json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': items}, indent=4)\n"
        "try:\n"
        "    with mock.patch.object(forked, 'MIN_BYTES', 0), mock.patch.object(forked, '_run', broken):\n"
        "        print(len(documents.read_documents('f.json', text)), flush=True)\n"
        "except Exception as exc:  # as a caller would: an escaped child would come here, and print\n"
        "    print('raised', exc, flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "40\n"


def test_an_item_the_child_cannot_hand_over_is_read_here() -> None:
    """msgpack holds integers up to 64 bits: the child fails on a larger one, and this process reads its half."""
    document = _pods(4)
    limits = {"aliyun.com/gpu-mem": 2**70}
    document["items"][3]["spec"]["containers"] = [{"name": "c", "resources": {"limits": limits}}]
    text = json.dumps(document)
    two, started = _on_two_cores(text)
    assert started == 1 and two == fast(text)
    assert two[3][0]["spec"]["containers"][0]["resources"]["limits"] == limits


def test_stopping_early_stops_the_child() -> None:
    data = as_yaml(_pods(40), unquote=False).encode()
    found = listing.yaml_list(data)
    assert found is not None
    children: list[forked._Child] = []
    original = forked._Child.start

    def keep(data: Any, read: Any) -> Any:
        child = original(data, read)
        children.append(child)
        return child

    with mock.patch.object(forked, "MIN_BYTES", 0), mock.patch.object(forked._Child, "start", keep):
        items = forked.items(data, found[1], partial(listing.yaml_items, data), listing.span_start, lambda _: None)
        assert next(items).obj is not None
        items.close()
    assert len(children) == 1
    with pytest.raises(ChildProcessError):  # reaped: no process, not even a zombie, is left
        os.waitpid(children[0].pid, os.WNOHANG)


def test_ctrl_c_while_both_read_ends_with_one_line_and_no_process_left(tmp_path: Path) -> None:
    """A List large enough to fork for real, interrupted while both processes read it."""
    item = "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p{}\n    namespace: ns\n  spec:\n"
    item += "    containers:\n    - image: " + "i" * 3000 + "\n      name: c\n"
    path = tmp_path / "pods.yaml"
    path.write_text("apiVersion: v1\nitems:\n" + "".join(item.format(i) for i in range(12_000)) + "kind: List\n")
    assert path.stat().st_size > forked.MIN_BYTES
    code, _, err = interrupt_when_forked(["validate", str(path)])
    assert code == 130 and err == "gpushare: interrupted\n"


def test_a_large_list_is_read_alike_on_one_core_and_two(tmp_path: Path) -> None:
    """Above the real threshold, as `validate` reads it: the same findings either way."""
    item = "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p{}\n  spec:\n    containers:\n"
    item += "    - image: " + "i" * 3000 + "\n      name: c\n      resources:\n        limits:\n"
    item += "          aliyun.com/gpu-mem: {}\n"
    path = tmp_path / "pods.yaml"
    text = "".join(item.format(i, "'3'" if i % 5 else "yes") for i in range(6_000))
    path.write_text("apiVersion: v1\nitems:\n" + text + "kind: List\n")
    assert path.stat().st_size > forked.MIN_BYTES
    runs = [
        subprocess.run(
            [sys.executable, "-m", "gpushare", "validate", str(path), "-o", "json"],
            capture_output=True,
            text=True,
            env={**os.environ, "GPUSHARE_READER": reader},
        )
        for reader in ("", forked.ONE_CORE)
    ]
    assert runs[0].returncode == runs[1].returncode and runs[0].stdout == runs[1].stdout
    assert json.loads(runs[0].stdout)["findings"]
