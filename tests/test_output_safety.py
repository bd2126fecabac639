"""`render -o` never loses a user's file: it writes only a missing or empty path or its own unchanged output,
refuses everything else with exit 2 naming the path (nothing written), and with --force keeps a backup."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import yaml
from helpers import as_from_a_terminal

from gpushare import output
from gpushare.cli import main
from gpushare.output import HEADER, MARKER


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["render", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listing(root: Path) -> dict[str, str]:
    """Every path under root (links as links) and what it holds: to prove nothing changed."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[rel] = path.read_text()
        else:
            found[rel] = "<dir>"
    return found


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "home" / "project"
    work.mkdir(parents=True)
    (work / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return work


@pytest.mark.parametrize("target", ["", ".", "..", "/", "~", "./", "sub/..", "{home}", "{parent}"])
@pytest.mark.parametrize("force", [False, True])
def test_paths_a_slip_could_reach_are_always_refused(
    inside: Path, capsys: pytest.CaptureFixture[str], target: str, force: bool
) -> None:
    target = target.format(home=inside.parent, parent=inside.parent.parent)
    before = listing(inside.parent)
    code, out, err = run(capsys, "-o", target, *(["--force"] if force else []))
    assert code == 2 and not out
    assert err.startswith("gpushare: error: --output: ") and len(err.strip().splitlines()) == 1, err
    assert listing(inside.parent) == before


def test_a_users_file_folder_or_link_is_refused_without_force(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (inside / "values.yaml").write_text("user: file\n")
    (inside / "docs").mkdir()
    (inside / "docs" / "a.md").write_text("# mine\n")
    (inside / "dangling").symlink_to(inside / "nowhere")
    (inside / "to-docs").symlink_to(inside / "docs")
    before = listing(inside)
    for target, what in [
        ("values.yaml", "is a file gpushare did not write"),
        ("docs", "is a directory gpushare did not write"),
        ("dangling", "is a symbolic link"),
        ("to-docs", "is a symbolic link"),
    ]:
        code, _, err = run(capsys, "-o", target)
        assert code == 2 and f"{inside / target} {what}" in err, err
        assert "--force keeps it as a backup" in err
    code, _, err = run(capsys, "--format", "manifests", "-o", "values.yaml")
    assert code == 2 and "is a file gpushare did not write" in err
    assert listing(inside) == before  # and nothing created where the dangling link points


def test_own_output_is_rewritten_and_edits_are_protected(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "-o", "chart")[0] == 0
    assert (inside / "chart" / MARKER).is_file() and (inside / "chart" / "Chart.yaml").is_file()
    assert MARKER in (inside / "chart" / ".helmignore").read_text()  # helm package leaves it out
    assert run(capsys, "-o", "chart", "--kube-version", "1.24")[0] == 0  # unchanged gpushare output: replaced
    assert not [p for p in inside.iterdir() if "backup" in p.name or p.name.startswith(".chart")]
    values = inside / "chart" / "values.yaml"
    values.write_text(values.read_text() + "# my edit\n")
    code, _, err = run(capsys, "-o", "chart")
    assert code == 2 and "changes since" in err
    (inside / "chart" / "values.yaml").write_text(values.read_text().replace("# my edit\n", ""))
    (inside / "chart" / "extra.txt").write_text("mine\n")
    assert run(capsys, "-o", "chart")[0] == 2  # a file gpushare did not write makes it the user's
    code, _, err = run(capsys, "-o", "chart", "--force")
    assert code == 0
    (backup,) = [p for p in inside.iterdir() if p.name.startswith("chart.gpushare-backup-")]
    assert f"kept what was there as {backup}" in err
    assert (backup / "extra.txt").read_text() == "mine\n" and not (inside / "chart" / "extra.txt").exists()


def test_force_keeps_a_users_file_and_replaces_a_link_not_its_target(
    inside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (inside / "out").write_text("precious\n")
    (inside / "link").symlink_to(inside / "elsewhere")
    assert run(capsys, "-o", "out", "--force")[0] == 0
    assert run(capsys, "-o", "link", "--force")[0] == 0
    assert (inside / "out" / "Chart.yaml").is_file() and (inside / "link" / "Chart.yaml").is_file()
    assert not (inside / "link").is_symlink() and not (inside / "elsewhere").exists()
    backups = sorted(p.name.split(".gpushare-backup-")[0] for p in inside.iterdir() if ".gpushare-backup-" in p.name)
    assert backups == ["link", "out"]
    (out_backup,) = inside.glob("out.gpushare-backup-*")
    assert out_backup.read_text() == "precious\n"


def test_manifests_file_carries_its_header_and_goes_into_a_directory(
    inside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "--format", "manifests", "-o", "m.yaml")[0] == 0
    text = (inside / "m.yaml").read_text()
    assert text.startswith(HEADER) and "\n---\napiVersion: " in text
    assert run(capsys, "--format", "manifests", "-o", "m.yaml")[0] == 0  # its own: rewritten
    (inside / "m.yaml").write_text(text + "# edit\n")
    assert run(capsys, "--format", "manifests", "-o", "m.yaml")[0] == 2
    (inside / "deploy").mkdir()
    (inside / "deploy" / "app.yaml").write_text("kind: Deployment\n")
    code, _, err = run(capsys, "--format", "manifests", "-o", "deploy")  # a directory of the user's manifests
    assert code == 0 and f"wrote manifests to {inside / 'deploy' / 'manifests.yaml'}" in err
    assert (inside / "deploy" / "app.yaml").read_text() == "kind: Deployment\n"


def test_write_failures_name_the_real_path_and_leave_nothing(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = listing(inside)
    code, out, err = run(capsys, "-o", "notes.txt/chart")  # a file where a directory must be
    assert code == 2 and not out
    notes = inside / "notes.txt"
    assert err == f"gpushare: error: cannot write {notes / 'chart'}: {notes} is not a directory\n"
    code, _, err = run(capsys, "-o", "-")
    assert code == 2 and "a directory for a chart" in err
    assert listing(inside) == before


@pytest.mark.parametrize(
    ("sig", "code", "line"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupt_is_one_line_and_leaves_no_output(
    tmp_path: Path, sig: signal.Signals, code: int, line: str
) -> None:
    """Ctrl-C or a SIGTERM in the middle of a long run: one line on stderr, 128 + the signal, no partial file."""
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", "aliyun.com/gpu-mem": "128", "aliyun.com/gpu-count": "8"}
    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": capacity}} for i in range(2000)]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    container = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 1}}}
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [container]}}
    spec = {"replicas": 1_000_000, "selector": {"matchLabels": {"a": "b"}}, "template": template}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"}, "spec": spec}
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(deploy))
    plot = tmp_path / "plot.svg"
    args = ["place", "--nodes", "nodes.yaml", "w.yaml", "-o", "json", "--plot", str(plot)]
    command = [sys.executable, "-m", "gpushare", *args]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,
    )
    time.sleep(3)  # well into placing a million pods
    assert process.poll() is None, process.communicate()
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    assert (process.returncode, out, err) == (code, "", f"gpushare: {line}\n")
    assert not plot.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["nodes.yaml", "w.yaml"]


def _stderr_on_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run gpushare with stderr on a pseudo-terminal of 100 columns; what the terminal showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    command = [sys.executable, "-m", "gpushare", *args]
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            shown += data
        elif process.poll() is not None:
            break
    assert process.wait(timeout=120) == 0
    os.close(master)
    return shown.decode(errors="replace")


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", "aliyun.com/gpu-mem": "128", "aliyun.com/gpu-count": "8"}
    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": capacity}} for i in range(50)]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    container = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 1}}}
    spec = {"replicas": 5000, "template": {"spec": {"containers": [container]}}}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"}, "spec": spec}
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(deploy))
    env = {**os.environ, "GPUSHARE_PROGRESS_DELAY": "0"}  # the bar's 2 s delay, shortened for a small run
    args = ["place", "--nodes", "nodes.yaml", "w.yaml", "-o", "json"]
    assert "/5000 [" in _stderr_on_a_terminal(args, tmp_path, env)
    assert "/5000 [" not in _stderr_on_a_terminal([*args, "--quiet"], tmp_path, env)
    piped = subprocess.run([sys.executable, "-m", "gpushare", *args], cwd=tmp_path, env=env, capture_output=True)
    assert piped.returncode == 0 and piped.stderr == b""  # not a terminal: nothing


def test_reading_a_large_file_shows_bytes_read_on_a_terminal_only(tmp_path: Path) -> None:
    container = {"name": "c", "image": "i", "resources": {"limits": {"aliyun.com/gpu-mem": 1}}}
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "ml"},
            "spec": {"containers": [container]},
        }
        for i in range(4000)
    ]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    env = {**os.environ, "GPUSHARE_PROGRESS_DELAY": "0"}
    args = ["validate", "pods.yaml", "-o", "json"]
    assert "B/s]" in _stderr_on_a_terminal(args, tmp_path, env)
    assert "B/s]" not in _stderr_on_a_terminal([*args, "--quiet"], tmp_path, env)


def test_render_quiet_prints_warnings_only(tmp_path: Path) -> None:
    def render(*extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "gpushare", "render", "-o", str(tmp_path / f"c{len(extra)}"), *extra]
        return subprocess.run(command, capture_output=True, text=True)

    loud, quiet = render(), render("--quiet")
    assert loud.returncode == quiet.returncode == 0
    assert "wrote chart to" in loud.stderr and quiet.stderr == ""
    warned = render(
        "--quiet", "--kube-version", "v1.28.99", "--scheduler-mode", "secondary", "--profile", "open-source"
    )
    assert warned.returncode == 0 and warned.stderr.startswith("gpushare: warning:") and "wrote" not in warned.stderr


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("m.yaml", b"apiVersion: v1\nkind: ConfigMap\n"),
        ("p.svg", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>\n'),
        ("p.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40 + b"\x00\x00\x00\x00IEND\xaeB`\x82"),
    ],
)
def test_a_sealed_file_is_gpushares_until_one_byte_changes(tmp_path: Path, name: str, body: bytes) -> None:
    target = tmp_path / name
    target.write_bytes(output.seal(name, body))
    assert output._file_is_ours(target)
    sealed = target.read_bytes()
    for i in range(len(sealed)):
        target.write_bytes(sealed[:i] + bytes([sealed[i] ^ 1]) + sealed[i + 1 :])
        assert not output._file_is_ours(target), f"byte {i} changed, still taken for gpushare's"
    target.write_bytes(body)  # the same content without its seal: the user's
    assert not output._file_is_ours(target)


class _DroppedOnInterrupt:
    """Ctrl-C arriving while Python runs a finalizer: the handler's KeyboardInterrupt is raised there, where Python
    prints it as ignored and goes on."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.fixture
def python_handles_ctrl_c() -> Iterator[None]:
    """Python's own SIGINT handler, as a process started from a terminal has it: a runner started as a background job
    has SIGINT ignored, which gpushare then leaves as it is."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _swallowing(lost: list[object]) -> None:
    _DroppedOnInterrupt()  # dropped at once: its finalizer runs here
    assert lost, "the interrupt was not swallowed: the test no longer shows what it means to"


@pytest.mark.usefixtures("python_handles_ctrl_c")
def test_an_interrupt_a_finalizer_swallowed_still_writes_nothing(
    inside: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The interrupt comes, and is lost in a finalizer, just before the chart would be put in place: exit 130, one
    line, nothing written (the command checks the signal's record at its commit)."""
    lost: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)
    real = output._swap

    def swap(new: Path, step: output.Plan) -> None:
        _swallowing(lost)
        real(new, step)

    monkeypatch.setattr(output, "_swap", swap)
    before = listing(inside)
    code, _, err = run(capsys)
    assert (code, err) == (130, "gpushare: interrupted\n") and listing(inside) == before


@pytest.mark.usefixtures("python_handles_ctrl_c")
def test_an_interrupt_a_finalizer_swallowed_as_a_command_ends_is_still_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lost in a finalizer as a command that writes no file ends: exit 130 and the one line all the same."""
    from gpushare import cli

    lost: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)
    real = cli._main

    def command(argv: Sequence[str] | None) -> int:
        code = real(argv)
        _swallowing(lost)
        return code

    monkeypatch.setattr(cli, "_main", command)
    assert main(["rules", "-o", "json"]) == 130
    assert capsys.readouterr().err == "gpushare: interrupted\n"
