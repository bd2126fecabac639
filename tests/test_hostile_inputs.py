"""Every input answered: alias bombs, swapped or empty files, nameless and duplicate objects, replay lines that
replay nothing, version strings as vendors write them, quantities and images as Kubernetes and OCI define them."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpushare.cli import main
from gpushare.domain.versions import parse_kube_version
from gpushare.errors import QUOTE_LIMIT, InputError
from gpushare.kube import documents
from gpushare.settings.model import load_settings

BOMB = "\n".join(
    [
        "apiVersion: gpushare.io/v1alpha1",
        "kind: InstallerSettings",
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", ["render --config", "validate", "place --nodes"])
def test_an_alias_bomb_is_refused_before_it_expands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    code, out, err = run(capsys, *command.split(), str(bomb), *(["w.yaml"] if command.startswith("place") else []))
    assert code == 2 and not out
    assert "aliases expand to at most 1,000,000 nodes" in err and len(err) < 400, err


def test_anchors_in_real_manifests_are_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: &l {app: a}}\nspec:\n  containers: []\n"
    (tmp_path / "p.yaml").write_text(doc + "---\n" + doc.replace("name: p", "name: q"))
    code, out, _ = run(capsys, "validate", str(tmp_path / "p.yaml"))
    assert code == 0 and "2 objects" in out


def test_messages_quote_at_most_a_line_of_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "render", "--kube-version", "1." + "9" * 10_000)
    assert code == 2 and len(err) < QUOTE_LIMIT + 200 and "..." in err


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "1"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}}


def pod(name: str | None, namespace: str = "ml") -> dict[str, Any]:
    limits = {"aliyun.com/gpu-mem": 2}
    meta = {"namespace": namespace, **({"name": name} if name else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([node("a"), node("b")]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod("p"), pod("q")]))
    (tmp_path / "empty.yaml").write_text("# nothing here\n")
    return tmp_path


def test_swapped_or_empty_inputs_are_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "place", "--nodes", str(files / "pods.yaml"), str(files / "nodes.yaml"))
    assert code == 2 and "expected Node objects (kubectl get nodes -o yaml); it holds 2 Pod" in err
    code, _, err = run(capsys, "place", "--nodes", str(files / "nodes.yaml"), str(files / "nodes.yaml"))
    assert code == 2 and "expected Pods or controllers to place" in err and "they hold 2 Node" in err
    code, _, err = run(capsys, "place", "--nodes", str(files / "empty.yaml"), str(files / "pods.yaml"))
    assert code == 2 and "it holds nothing" in err


def test_nameless_and_duplicate_objects_are_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "w.yaml").write_text(yaml.safe_dump_all([pod("p"), pod(None)]))
    code, _, err = run(capsys, "place", "--nodes", str(files / "nodes.yaml"), str(files / "w.yaml"))
    assert code == 2 and f"{files / 'w.yaml'}:" in err and "Pod metadata.name: unset is not allowed" in err
    (files / "w.yaml").write_text(yaml.safe_dump_all([pod("p"), pod("p", "other"), pod("p")]))
    code, _, err = run(capsys, "place", "--nodes", str(files / "nodes.yaml"), str(files / "w.yaml"))
    assert code == 2 and "Pod ml/p" in err and f"the same is at {files / 'w.yaml'}:1" in err


def test_replay_lines_that_replay_nothing_are_said(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "order.txt").write_text("ml/p gone\nml/nobody a\n")
    args = ["place", "--nodes", str(files / "nodes.yaml"), str(files / "pods.yaml"), "--node-order"]
    _, out, _ = run(capsys, *args, str(files / "order.txt"), "-o", "json")
    warnings = json.loads(out)["warnings"]
    assert "--node-order: ml/p -> gone: no node gone in the fleet, the pod stays pending" in warnings
    assert "--node-order: 1 pods named are not among the pods to place: ml/nobody" in warnings


@pytest.mark.parametrize(
    ("text", "minor", "patch"),
    [
        ("1.24", 24, None),
        (" v1.24.7-aliyun.1 ", 24, 7),  # ACK's own format
        ("v1.28.3-gke.100", 28, 3),
        ("v1.26.3+k3s1", 26, 3),
        ("v1.28.99", 28, 99),  # accepted; GS121 warns
    ],
)
def test_versions_as_clusters_report_them(text: str, minor: int, patch: int | None) -> None:
    version = parse_kube_version(text)
    assert (version.minor, version.patch) == (minor, patch)


@pytest.mark.parametrize("text", ["1.19", "1.37.1", "v2.1", "1.24.x", "latest"])
def test_versions_outside_the_table_are_refused(text: str) -> None:
    with pytest.raises(InputError):
        parse_kube_version(text)


def test_settings_files_say_what_they_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "s.yaml"
    config.write_text("kubernetesVersion: 1.20\n")
    code, _, err = run(capsys, "render", "--config", str(config), "-o", str(tmp_path / "o"))
    assert code == 2 and "apiVersion: unset is not allowed; expected gpushare.io/v1alpha1" in err
    config.write_text("apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\nkubernetesVersion: 1.20\n")
    code, _, err = run(capsys, "render", "--config", str(config), "-o", str(tmp_path / "o"))
    assert code == 2 and 'expected a quoted version such as "1.20" (YAML read an unquoted 1.2 as a number)' in err
    config.write_text('apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\nkubernetesVersion: " 1.24 "\n')
    assert run(capsys, "render", "--config", str(config), "-o", str(tmp_path / "o"))[0] == 0
    assert load_settings({"kubernetesVersion": " 1.24 "}).kubernetes_version == "1.24"
    assert (tmp_path / "o" / "Chart.yaml").is_file() and not list(tmp_path.glob("o.gpushare-backup-*"))


@pytest.mark.parametrize(
    ("document", "field", "allowed"),
    [
        ({"scheduler": {"resources": {"limits": {"memory": "lots"}}}}, "scheduler.resources.limits.memory", "quantity"),
        ({"scheduler": {"resources": {"requests": {"cpu": -1}}}}, "scheduler.resources.requests.cpu", ">= 0"),
        (
            {"devicePlugin": {"image": {"repository": "Registry/ACS/Plugin", "tag": "1"}}},
            "devicePlugin.image.repository",
            "lowercase path",
        ),
        (
            {"devicePlugin": {"image": {"repository": "registry.example.com/acs/p", "tag": ""}}},
            "devicePlugin.image.tag",
            "a tag (--device-plugin-image-tag) or a digest",
        ),
        ({"extender": {"image": {"repository": "r.example.com/x", "tag": "v1:2"}}}, "extender.image.tag", "matching"),
    ],
)
def test_quantities_and_images_as_kubernetes_and_oci_define_them(
    document: dict[str, Any], field: str, allowed: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_settings(document)
    assert caught.value.field == field and allowed in caught.value.allowed


def test_registry_with_port_and_digest_are_accepted() -> None:
    digest = "sha256:" + "a" * 64
    settings = load_settings(
        {"devicePlugin": {"image": {"repository": "registry.local:5000/acs/p", "tag": "", "digest": digest}}}
    )
    assert settings.device_plugin.image.digest == digest


def test_helm_refuses_a_bad_quantity_with_the_schema(tmp_path: Path) -> None:
    from toolchain import HELM, need_tool

    result = subprocess.run(
        [
            str(need_tool(HELM)),
            "template",
            "x",
            str(REPO / "charts" / "ack-ai-installer"),
            "--set",
            "devicePlugin.resources.limits.memory=lots",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "devicePlugin.resources.limits.memory" in result.stderr.replace("/", "."), (
        result.stderr
    )


DUPLICATE = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ml\n  name: q\nspec:\n  containers: []\n"


@pytest.mark.parametrize(
    ("text", "key", "first", "again"),
    [
        (DUPLICATE, "'name'", 4, 6),
        ('{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "p"},\n "kind": "Node"}', "'kind'", 1, 3),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, name: q}\n", "'name'", 3, 3),
    ],
    ids=["yaml", "json", "flow"],
)
@pytest.mark.parametrize("command", ["validate", "place --nodes nodes.yaml"])
def test_duplicate_keys_are_refused_as_kubectl_refuses_them(
    files: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, first: int, again: int, command: str
) -> None:
    (files / "dup.yaml").write_text(text)
    args = [a if a != "nodes.yaml" else str(files / "nodes.yaml") for a in command.split()]
    code, out, err = run(capsys, *args, str(files / "dup.yaml"))
    assert code == 2 and not out
    where = f"{files / 'dup.yaml'}:{again}"
    assert f"YAML without duplicate keys ({key} at {where} is already defined at line {first}" in err, err


def test_duplicate_keys_in_settings_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "s.yaml"
    settings.write_text(
        "apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\nprofile: ack\nprofile: open-source\n"
    )
    code, _, err = run(capsys, "render", "--config", str(settings), "-o", str(tmp_path / "out"))
    assert code == 2 and "'profile' at" in err and "already defined at line 3" in err
    assert not (tmp_path / "out").exists()


def test_a_merge_key_may_be_overridden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = (
        "base: &base {name: c, image: i}\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec:\n  containers:\n  - <<: *base\n    name: main\n  - <<: *base\n"
    )
    (tmp_path / "p.yaml").write_text(doc)
    code, out, err = run(capsys, "validate", str(tmp_path / "p.yaml"), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["summary"]["objects"] == 1


def test_files_are_read_as_a_stream_never_whole(tmp_path: Path) -> None:
    """libyaml pulls the file in chunks: no read asks for the whole file, and every object and line still comes out."""
    from gpushare.kube.documents import read_documents

    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all([pod(f"p{i}") for i in range(3000)]))
    asked: list[int] = []

    class Recording:
        def __init__(self) -> None:
            self.raw = path.open("rb")

        def read(self, size: int = -1) -> bytes:
            asked.append(size)
            return self.raw.read(size)

    sources = read_documents(path, stream=Recording())  # type: ignore[arg-type]
    size = path.stat().st_size
    assert len(sources) == 3000 and sources[-1].obj["metadata"]["name"] == "p2999"
    assert sources[1].line is not None and sources[1].line > 1
    assert len(asked) > 10 and all(0 < n < size for n in asked)


#: Documents nested 100,000 levels deep, each way gpushare reads a file: a plain manifest (the strict reader, which
#: crashed the process in PyYAML's composer), an item of a kubectl YAML List, of a laid-out JSON List (msgspec
#: raised RecursionError) and of a minified one, brackets and block indentation.
DEEP = 100_000
DEEP_FILES = {
    "manifest.yaml": "kind: ConfigMap\ndata: " + "[" * DEEP + "]" * DEEP + "\n",
    "list.yaml": "apiVersion: v1\nitems:\n- kind: ConfigMap\n  data: " + "[" * DEEP + "]" * DEEP + "\nkind: List\n",
    "list.json": '{\n"apiVersion": "v1",\n"items": [\n  {\n    "kind": "ConfigMap",\n    "data": '
    + "[" * DEEP
    + "]" * DEEP
    + '\n  }\n],\n"kind": "List"\n}\n',
    "minified.json": '{"apiVersion":"v1","items":[{"kind":"ConfigMap","data":' + "[" * DEEP + "]" * DEEP + "}]}",
    "indented.yaml": "kind: ConfigMap\ndata:\n" + "".join(" " * i + "- \n" for i in range(1, 2_000)),
    "closed-first.yaml": 'kind: ConfigMap\ndata: "' + "]" * DEEP + '"\nmore: ' + "[" * DEEP + "]" * DEEP + "\n",
}


@pytest.mark.parametrize("name", sorted(DEEP_FILES))
def test_a_document_nested_too_deep_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    """In a process of its own: what this guards against crashed the process (a segmentation fault)."""
    path = tmp_path / name
    path.write_text(DEEP_FILES[name])
    done = subprocess.run(
        [sys.executable, "-m", "gpushare", "validate", str(path)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert done.stderr == (
        f"gpushare: error: file: {str(path)!r} is not allowed; expected YAML nested at most 256 brackets and 512 "
        "columns of indentation deep\n"
    )


def test_deep_but_real_nesting_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """200 levels (a CRD's schema nests a few dozen): rapidyaml's emitter refuses such an item (its own depth bound),
    and the strict reader reads it."""
    levels = "".join("  " * (i + 2) + "k:\n" for i in range(200)) + "  " * 202 + "v\n"
    text = "apiVersion: v1\nitems:\n- kind: ConfigMap\n  data:\n" + levels + "- kind: ConfigMap\n  data: {a: [[[1]]]}\n"
    (tmp_path / "deep.yaml").write_text(text + "kind: List\n")
    code, out, err = run(capsys, "validate", str(tmp_path / "deep.yaml"))
    assert (code, err) == (0, "") and "2 objects" in out


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from([b"[", b"]", b"{", b"}", b"x", b"[" * 100, b"]" * 100]), max_size=60).map(b"".join),
    cuts=st.lists(st.integers(0, 6_000), max_size=5),
)
@example(text=b"[" * 300 + b"]" * 100, cuts=[])  # a closed part inside open ones: the passes count too
@example(text=b"]" * 300 + b"[" * 300, cuts=[150, 450])  # closings at zero hide nothing that follows
@example(text=(b"[" * 100 + b"]" * 100) * 3, cuts=[])  # 100 deep, closed three times over: read, not refused
def test_bracket_depth_is_measured_as_a_walk_that_never_goes_below_zero(text: bytes, cuts: list[int]) -> None:
    """Fed in any chunks, the measure refuses every text whose walk (closings at zero ignored) goes past the bound,
    and otherwise ends where the walk ends. It may refuse sooner, when an open part and a closed one near it, but
    never a text whose walk stays within half the bound: the open depth and the closed part's each stay within it."""
    depth = deepest = 0
    for bracket in text:
        if bracket in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in b"]}" and depth:
            depth -= 1
    points = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    nesting = documents._Nesting()
    try:
        for begin, end in itertools.pairwise(points):
            nesting.feed(text[begin:end])
    except documents.TooDeep:
        assert 2 * deepest > documents.MAX_DEPTH, f"refused a text {deepest} deep"
        return
    assert deepest <= documents.MAX_DEPTH and nesting.flow == depth
