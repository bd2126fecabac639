"""The command line: defaults, flags over --config, and bad input -> one line, exit 2, nothing written."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpushare.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in-process: its exit code and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own exits (--help, usage errors)
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def test_defaults_write_the_chart_in_the_current_directory(tmp_path: Path) -> None:
    """The real entry point, `python -m gpushare`, in a fresh directory."""
    result = subprocess.run(
        [sys.executable, "-m", "gpushare", "render"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert result.returncode == 0, result.stderr
    chart = yaml.safe_load((tmp_path / "ack-ai-installer" / "Chart.yaml").read_text())
    assert chart["name"] == "ack-ai-installer" and chart["kubeVersion"] == ">=1.20.0-0 <1.37.0-0"
    assert "ack.node.gpu.schedule=share" in result.stderr  # the notes tell which labels to set


@pytest.mark.parametrize("extra", [[], ["--region", "cn-hangzhou"]])
def test_the_headline_128mib_writes_a_chart_that_asks_for_the_plugin_image(tmp_path: Path, extra: list[str]) -> None:
    """`render --gpu-memory-unit 128MiB` on defaults (and with a region, whose registry gpushare would otherwise
    pick): exit 0, a chart whose device plugin image is left to the install, and next steps that say how to read
    ACK's from the cluster and give it to helm. Nothing blames the user for an image gpushare chose."""
    out = tmp_path / "chart"
    result = run("render", "--gpu-memory-unit", "128MiB", *extra, "-o", str(out))
    assert result.returncode == 0, result.stderr
    values = yaml.safe_load((out / "values.yaml").read_text())
    assert values["gpuMemoryUnit"] == "128MiB" and values["devicePlugin"]["image"]["repository"] == ""
    assert "GS119" not in result.stderr and "error" not in result.stderr
    assert "kubectl -n kube-system get daemonsets -o wide" in result.stderr
    assert f"helm install gpushare {out} -n kube-system" in result.stderr
    assert "aliyun.com/gpu-mem: 16   # 16 x 128 MiB = 2 GiB" in result.stderr
    assert "--set devicePlugin.image.repository=<repository> --set devicePlugin.image.tag=<tag>" in result.stderr
    summary = json.loads(run("render", "--gpu-memory-unit", "128MiB", *extra, "-o", str(out), "--json").stdout)
    assert summary["installValues"] == ["devicePlugin.image.repository", "devicePlugin.image.tag"]


def test_the_readmes_settings_example_renders(tmp_path: Path) -> None:
    """README's settings document (128MiB on ACK, cgpu too) as a user copies it: rendered, exit 0."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("### Settings") :]
    example = section[section.index("```yaml\n") + len("```yaml\n") : section.index("```\n", section.index("```yaml"))]
    assert "gpuMemoryUnit: 128MiB" in example
    config = tmp_path / "settings.yaml"
    config.write_text(example)
    result = run("render", "--config", str(config), "-o", str(tmp_path / "chart"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "chart" / "Chart.yaml").exists()


def test_128mib_manifests_need_the_plugin_image_at_render_time(tmp_path: Path) -> None:
    """Plain manifests cannot ask at install: one line naming the flags, exit 2, nothing written; with the image
    given they render it with the unit."""
    out = tmp_path / "stack.yaml"
    refused = run("render", "--gpu-memory-unit", "128MiB", "--format", "manifests", "-o", str(out))
    assert refused.returncode == 2 and not out.exists()
    assert refused.stderr.count("\n") == 1 and "--device-plugin-image-repository" in refused.stderr
    repository = "registry.example.com/acs/ack-plugin"
    image = ["--device-plugin-image-repository", repository, "--device-plugin-image-tag", "v1"]
    given = run("render", "--gpu-memory-unit", "128MiB", "--format", "manifests", *image)
    assert given.returncode == 0, given.stderr
    assert "image: registry.example.com/acs/ack-plugin:v1" in given.stdout and "--memory-unit=128MiB" in given.stdout


def test_naming_the_open_source_plugin_with_128mib_is_refused() -> None:
    """GS119 is the user's choice only: the open-source plugin named with 128MiB units."""
    result = run(
        "render",
        "--gpu-memory-unit",
        "128MiB",
        "--device-plugin-image-repository",
        "registry.example.com/acs/k8s-gpushare-plugin",
        "--device-plugin-image-tag",
        "v2",
    )
    assert result.returncode == 2 and "[GS119]" in result.stderr


def test_manifests_to_stdout_with_flags() -> None:
    result = run("render", "--kube-version", "1.22", "--profile", "open-source", "--format", "manifests")
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "DaemonSet", "ConfigMap", "NetworkPolicy"} <= kinds
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    assert "kubescheduler.config.k8s.io/v1beta2" in config["data"]["scheduler-config.yaml"]
    assert not any(d["kind"] == "Service" for d in docs)  # no NodePort, nothing exposed


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--gpu-memory-unit", "100MiB"], "gpuMemoryUnit"),
        (["--kube-version", "1.19"], "kubernetesVersion"),
        (["--kube-version", "1.37"], "kubernetesVersion"),
        (["--kube-version", "banana"], "kubernetesVersion"),
        (["--profile", "open-source", "--gpu-memory-unit", "128MiB"], "gpuMemoryUnit"),
        (["--profile", "open-source", "--compute-allocation"], "computeAllocation"),
        (["--profile", "open-source", "--isolation", "cgpu"], "isolation"),
        (
            ["--kube-version", "1.28", "--scheduler-mode", "secondary", "--scheduler-config-api", "v1beta2"],
            "scheduler.configApi",
        ),
        (
            ["--kube-version", "1.23", "--scheduler-mode", "secondary", "--scheduler-config-api", "policy"],
            "scheduler.configApi",
        ),
        (["--isolation", "core_mem", "--compute-allocation", "--region", "eu-central-1"], "region"),
        (["--scheduler-mode", "control-plane"], "kubernetesVersion"),
        (["--extender-port", "80"], "extender.port"),
        (["--extender-port", "eighty"], "--extender-port"),
        (["--scheduler-tolerations", "[unclosed"], "--scheduler-tolerations"),
        (["--cgpu-policy", "7"], "cgpu.policy"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path: Path, args: list[str], field: str) -> None:
    out = tmp_path / "out"
    result = run("render", "-o", str(out), *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpushare: error: "), result.stderr
    assert field in lines[0] and "expected" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_unknown_setting_in_config_names_file_and_known_keys(tmp_path: Path) -> None:
    config = tmp_path / "s.yaml"
    config.write_text("apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\ngpuMemoryUnits: 1GiB\n")
    result = run("render", "--config", str(config), "-o", str(tmp_path / "o"))
    assert result.returncode == 2
    assert str(config) in result.stderr and "gpuMemoryUnits" in result.stderr and "gpuMemoryUnit," in result.stderr
    assert not (tmp_path / "o").exists()


def test_unreadable_yaml_names_the_line(tmp_path: Path) -> None:
    config = tmp_path / "s.yaml"
    config.write_text("profile: ack\nisolation: [share\n")
    result = run("render", "--config", str(config))
    assert result.returncode == 2 and f"--config: '{config}'" in result.stderr and f"{config}:3)" in result.stderr


def test_flags_override_config(tmp_path: Path) -> None:
    config = tmp_path / "s.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "gpushare.io/v1alpha1",
                "kind": "InstallerSettings",
                "profile": "open-source",
                "kubernetesVersion": "1.20",
                "extender": {"port": 20000},
            }
        )
    )
    result = run("render", "--config", str(config), "--kube-version", "1.25", "--format", "manifests", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["kind"] == "RenderResult"
    text = summary["manifests"]
    assert "kubescheduler.config.k8s.io/v1\n" in text and "127.0.0.1:20000" in text


def test_rerender_replaces_the_directory_whole(tmp_path: Path) -> None:
    out = tmp_path / "chart"
    assert main(["render", "-o", str(out), "--isolation", "share,cgpu"]) == 0
    assert (out / "templates" / "cgpu" / "cgpu-installer.yaml").exists()
    assert main(["render", "-o", str(out)]) == 0
    assert not (out / "templates" / "cgpu").exists()
    assert main(["render", "-o", str(out), "--gpu-memory-unit", "3GiB"]) == 2
    assert (out / "Chart.yaml").exists()  # a failed render leaves the previous output untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chart"]


CONTROL_PLANE = ["render", "--format", "manifests", "--profile", "open-source", "--scheduler-mode", "control-plane"]


def test_control_plane_files(tmp_path: Path) -> None:
    out = tmp_path / "cp"
    assert main([*CONTROL_PLANE, "--kube-version", "v1.21.4", "-o", str(out)]) == 0
    patch = yaml.safe_load((out / "control-plane" / "patches" / "kube-scheduler+strategic.yaml").read_text())
    scheduler, extender = patch["spec"]["containers"]
    assert "--config=/etc/kubernetes/gpushare-scheduler-config.yaml" in scheduler["command"]
    assert {"name": "KUBECONFIG", "value": "/etc/kubernetes/scheduler.conf"} in extender["env"]
    config = yaml.safe_load((out / "control-plane" / "gpushare-scheduler-config.yaml").read_text())
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1beta1"
    assert config["extenders"][0]["urlPrefix"] == "http://127.0.0.1:12345/gpushare-scheduler"
    binding = next(
        d
        for d in yaml.safe_load_all((out / "manifests.yaml").read_text())
        if d and d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "gpushare-schd-extender"
    )
    assert binding["subjects"] == [
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "system:kube-scheduler"}
    ]
    assert main([*CONTROL_PLANE, "--kube-version", "1.21"]) == 2  # stdout cannot hold a directory


def test_python_api_same_options() -> None:
    from gpushare import render

    rendered = render(kube_version="1.22", profile="open-source", format="manifests")
    assert rendered.settings.scheduler.mode == "secondary"
    # the library and the command line give the same manifests for the same options
    assert (
        rendered.files["manifests.yaml"]
        == run("render", "--kube-version", "1.22", "--profile", "open-source", "--format", "manifests").stdout
    )


def test_validating_pods_loads_no_settings_model(tmp_path: Path) -> None:
    """pydantic's models take 0.1 s to import: `validate` loads them with a settings document, not for pods."""
    pods = tmp_path / "pods.yaml"
    pods.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n")
    settings = tmp_path / "settings.yaml"
    settings.write_text("apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\n")
    script = (
        "import sys\nfrom gpushare.cli import main\n"
        "code = main(['validate', '-q', *sys.argv[1:]])\n"
        "print(code, 'pydantic' in sys.modules)\n"
    )
    loaded = [
        subprocess.run(
            [sys.executable, "-c", script, *files], capture_output=True, text=True, check=True, cwd=tmp_path
        ).stdout.split()[-2:]
        for files in ([str(pods)], [str(pods), str(settings)])
    ]
    assert loaded == [["0", "False"], ["0", "True"]]


def test_ctrl_c_as_the_command_ends_is_one_line_too() -> None:
    """An interrupt while `cli.entry` flushes the output of a finished command: exit 130 and one line, no traceback."""
    script = (
        "import sys\nfrom gpushare import cli\n"
        "real, calls = cli._flush, []\n"
        "def interrupted():\n"
        "    calls.append(1)\n"
        "    if len(calls) == 1:\n"
        "        raise KeyboardInterrupt\n"
        "    real()\n"
        "cli._flush = interrupted\n"
        "sys.argv = ['gpushare', 'rules']\n"
        "cli.entry()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "gpushare: interrupted\n") and "GS100" in done.stdout


def test_newcomers_mistakes_are_one_line_exit_2_nothing_written(tmp_path: Path) -> None:
    """A binary settings file, an empty file to validate (a CI gate fed by a failed `kubectl get > f` must not
    pass) and a file name given where a directory is written: each one line naming what was wrong, exit 2."""
    binary = tmp_path / "settings.yaml"
    binary.write_bytes(b"\xff\xfe\x00\x01binary")
    result = run("render", "--config", str(binary), "-o", str(tmp_path / "chart"))
    assert result.returncode == 2 and "a UTF-8 text file" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "chart").exists()
    empty = tmp_path / "pods.yaml"
    empty.write_text("")
    result = run("validate", str(empty))
    assert result.returncode == 2 and "hold Kubernetes objects" in result.stderr and result.stderr.count("\n") == 1
    for args in (
        ["--profile", "open-source", "--scheduler-mode", "control-plane", "--kube-version", "1.24"],
        ["--format", "chart"],
    ):
        target = tmp_path / "k5.yaml"
        fmt = [] if "--format" in args else ["--format", "manifests"]
        result = run("render", *args, *fmt, "-o", str(target))
        assert result.returncode == 2 and "a directory name" in result.stderr and not target.exists()


def test_counts_read_as_english() -> None:
    """ "1 error", "5 Pods", "2 PriorityClasses": not "1 errors", "5 Pod"."""
    from gpushare.errors import counted

    assert [counted(1, "error"), counted(0, "error"), counted(5, "Pod"), counted(2, "PriorityClass")] == [
        "1 error",
        "0 errors",
        "5 Pods",
        "2 PriorityClasses",
    ]


def test_manifests_on_stdout_print_the_next_steps_on_stderr() -> None:
    """`render --format manifests > stack.yaml`: stdout holds only the manifests, stderr the next steps."""
    result = run("render", "--kube-version", "1.22", "--profile", "open-source", "--format", "manifests")
    assert result.returncode == 0 and "kubectl label node <node> gpushare=true" in result.stderr
    assert all(d["kind"] for d in yaml.safe_load_all(result.stdout) if d)
    assert "kubectl label" not in result.stdout
    assert (
        "kubectl label"
        not in run("render", "--profile", "open-source", "--kube-version", "1.22", "--format", "manifests", "-q").stderr
    )


@pytest.mark.parametrize("args", [["--version"], ["rules", "GW217"], ["rules", "-o", "json"]])
def test_a_full_disk_under_the_answer_is_one_line_naming_it(args: list[str]) -> None:
    """`> /dev/full`: the answer cannot be written; one line names standard output and why, exit 1, no traceback
    (small answers fail only when flushed at exit, large ones while written)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as in a user's shell
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "gpushare", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=env,
        )
    assert done.returncode == 1
    assert done.stderr == "gpushare: error: standard output: No space left on device\n"
