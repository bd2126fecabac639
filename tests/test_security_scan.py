"""Offline checkov scan of the rendered manifests: zero failures, every skip carries its reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from toolchain import IN_CI

from gpushare import render
from gpushare.generate.matrix import EXAMPLE_ACK_PLUGIN
from gpushare.generate.security import EXCEPTIONS

#: Checks that only the defaults fail; a user who pins digests and pulls Always passes them (tested below).
DEFAULT_SKIPS = {
    "CKV_K8S_15": "pull policy is a value (IfNotPresent by default, so nodes keep running when a registry is down)",
    "CKV_K8S_43": "images are pinned by tag by default; set <component>.image.digest to pin by digest",
}

CASES = {
    "open-source-secondary": {"profile": "open-source", "kubernetesVersion": "1.28"},
    "open-source-policy": {"profile": "open-source", "kubernetesVersion": "1.21", "scheduler": {"configApi": "policy"}},
    "open-source-control-plane": {
        "profile": "open-source",
        "kubernetesVersion": "1.24",
        "scheduler": {"mode": "control-plane"},
    },
    "ack-managed-all-modes": {
        "isolation": ["share", "cgpu", "core_mem"],
        "computeAllocation": True,
        "region": "cn-beijing",
        "kubernetesVersion": "1.26",
        "devicePlugin": {"image": {"repository": EXAMPLE_ACK_PLUGIN, "tag": "v1"}},  # compute allocation needs ACK's
    },
    "ack-secondary": {"kubernetesVersion": "1.20", "scheduler": {"mode": "secondary"}},
}


def checkov() -> str:
    found = shutil.which("checkov") or shutil.which("checkov", path=str(Path(sys.executable).parent))
    if found is None:
        if IN_CI:
            pytest.fail("checkov is not installed (pip install '.[test]')")
        pytest.skip("checkov is not installed (pip install '.[test]')")
    return found


def scan(directory: Path, skips: dict[str, str]) -> dict[str, Any]:
    command = [
        checkov(),
        "-d",
        str(directory),
        "--framework",
        "kubernetes",
        "--skip-download",
        "--compact",
        "-o",
        "json",
    ]
    if skips:
        command += ["--skip-check", ",".join(skips)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.stdout.strip(), result.stderr[-2000:]
    data = json.loads(result.stdout)
    reports = data if isinstance(data, list) else [data]
    failed = [f for r in reports if "results" in r for f in r["results"].get("failed_checks", [])]
    skipped = [f for r in reports if "results" in r for f in r["results"].get("skipped_checks", [])]
    passed = sum(r["summary"]["passed"] for r in reports if "summary" in r)
    return {"failed": failed, "skipped": skipped, "passed": passed}


def write_cases(directory: Path, overrides: dict[str, Any]) -> None:
    for name, doc in CASES.items():
        merged = {**doc, **{k: {**doc.get(k, {}), **v} for k, v in overrides.items()}}
        rendered = render(merged, format="manifests")
        (directory / f"{name}.yaml").write_text(rendered.files["manifests.yaml"])


def test_checkov_finds_nothing_unexplained(tmp_path: Path) -> None:
    write_cases(tmp_path, {})
    result = scan(tmp_path, DEFAULT_SKIPS)
    failures = sorted({(f["check_id"], f["resource"]) for f in result["failed"]})
    assert not failures, failures
    assert result["passed"] > 100
    # the scanner honoured our annotated exceptions, and only those, each with its reason
    assert result["skipped"]
    for skip in result["skipped"]:
        component_reasons = {c for reasons in EXCEPTIONS.values() for c in reasons}
        assert skip["check_id"] in component_reasons, skip["check_id"]
        assert skip["check_result"].get("suppress_comment"), skip


def test_pinned_images_pass_the_default_skips_too(tmp_path: Path) -> None:
    digest = {"image": {"repository": "example.com/x", "digest": "sha256:" + "0" * 64, "pullPolicy": "Always"}}
    write_cases(tmp_path, {"scheduler": digest, "extender": digest, "devicePlugin": digest, "cgpu": digest})
    result = scan(tmp_path, {})
    assert not result["failed"], sorted({(f["check_id"], f["resource"]) for f in result["failed"]})


def test_every_exception_has_a_reason() -> None:
    for component, reasons in EXCEPTIONS.items():
        for check, reason in reasons.items():
            assert check.startswith("CKV") and len(reason) > 20, (component, check)


def test_each_exception_is_needed_where_it_is_claimed(tmp_path: Path) -> None:
    """Without the annotations, checkov fails exactly the exceptions each component claims: none is missing, none
    is broader than its component needs."""
    for name, doc in CASES.items():
        objects = render(doc, format="manifests").objects
        for obj in objects:
            annotations = obj["metadata"].get("annotations") or {}
            for key in [k for k in annotations if k.startswith("checkov.io/skip")]:
                del annotations[key]
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(objects))
    result = scan(tmp_path, DEFAULT_SKIPS)
    found: dict[str, set[str]] = {}
    for failure in result["failed"]:
        resource = failure["resource"]
        component = next(c for c in ("cgpu-installer", "device-plugin", "scheduler") if c in resource)
        found.setdefault(component, set()).add(failure["check_id"])
    expected = {c: set(reasons) - set(DEFAULT_SKIPS) for c, reasons in EXCEPTIONS.items()}
    assert found == expected, {
        c: (sorted(found.get(c, set()) - e), sorted(e - found.get(c, set()))) for c, e in expected.items()
    }
