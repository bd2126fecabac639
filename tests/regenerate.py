"""Regenerate the repository's generated files: charts/ack-ai-installer (default settings), the settings schema,
the README's table of scheduler configuration APIs, docs/rules.md's table of rules and docs/metrics.md.

Run `python tests/regenerate.py` after changing the generator; test_generated_files_in_sync fails until you do.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpushare import render  # noqa: E402
from gpushare.domain.products import INSTALLER_CHART  # noqa: E402
from gpushare.domain.versions import (  # noqa: E402
    KUBE_SCHEDULER_IMAGE,
    MINORS,
    WORKLOAD_APIS,
    KubeVersion,
    default_api,
    is_deprecated,
    served_apis,
)
from gpushare.live.metrics import reference as metrics_reference  # noqa: E402
from gpushare.policy.rules import RULES  # noqa: E402
from gpushare.settings.model import settings_schema  # noqa: E402

CHART = REPO / "charts" / INSTALLER_CHART
#: Golden renders of representative settings, checked in so a reviewer sees every template change in a diff.
GOLDEN_DIR = REPO / "charts" / "golden"
GOLDEN: dict[str, dict[str, object]] = {
    "ack-managed-compute-1.28": {
        "profile": "ack",
        "kubernetesVersion": "1.28",
        "isolation": ["share", "cgpu", "core_mem"],
        "computeAllocation": True,
        "region": "cn-beijing",
    },
    "open-source-secondary-universal": {"profile": "open-source"},
    "open-source-control-plane-1.24": {
        "profile": "open-source",
        "kubernetesVersion": "1.24",
        "scheduler": {"mode": "control-plane"},
    },
}
SETTINGS_SCHEMA = REPO / "schemas" / "installer-settings.schema.json"


README = REPO / "README.md"
RULES_DOC = REPO / "docs" / "rules.md"
METRICS_DOC = REPO / "docs" / "metrics.md"


def _config_apis() -> str:
    """Per minor: the kube-scheduler image a chart given only the minor pulls, and the configuration APIs served."""
    lines = [
        "| minor | kube-scheduler image (a minor alone) | default API | also served |",
        "|---|---|---|---|",
    ]
    for minor in MINORS:
        default = default_api(minor)
        others = [f"{api} (deprecated)" if is_deprecated(api, minor) else api for api in served_apis(minor)]
        others.remove(f"{default} (deprecated)" if is_deprecated(default, minor) else default)
        image = f"{KUBE_SCHEDULER_IMAGE}:{KubeVersion(minor).full}"
        lines.append(f"| 1.{minor} | `{image}` | {default} | {', '.join(others) or '-'} |")
    lines.append("")
    for (api, kind), (since, removed, instead) in WORKLOAD_APIS.items():
        if removed is None or removed > MINORS[0]:
            served = f"from 1.{since}" if removed is None else f"until 1.{removed - 1}"
            lines.append(f"- workloads: {kind} `{api}` is served {served}; GW215 names `{instead}` outside that range")
    return "\n".join(lines)


def _rules() -> str:
    lines = ["| ID | severity | target | rule | source |", "|---|---|---|---|---|"]
    lines += [f"| {r.id} | {r.severity} | {r.target} | {r.summary} | {r.source} |" for r in RULES]
    return "\n".join(lines)


def generated(text: str, where: Path, blocks: dict[str, str]) -> str:
    """A file with its generated tables (between `<!-- generated: NAME -->` and `<!-- end: NAME -->`) made anew."""
    for name, body in blocks.items():
        pattern = re.compile(rf"(<!-- generated: {name} .*?-->\n).*?(<!-- end: {name} -->)", re.S)
        text, found = pattern.subn(lambda m, body=body: f"{m[1]}{body}\n{m[2]}", text)
        if found != 1:
            raise SystemExit(f"{where.relative_to(REPO)}: no generated block {name!r}")
    return text


def readme(text: str) -> str:
    return generated(text, README, {"config-apis": _config_apis()})


def charts() -> dict[Path, dict[str, str]]:
    """Each generated chart directory and its files."""
    result = {CHART: render(format="chart").files}
    for name, settings in GOLDEN.items():
        result[GOLDEN_DIR / name] = render(settings, format="chart").files
    return result


def expected() -> dict[Path, str]:
    files = {directory / rel: text for directory, tree in charts().items() for rel, text in tree.items()}
    files[SETTINGS_SCHEMA] = json.dumps(settings_schema(), indent=2) + "\n"
    files[README] = readme(README.read_text())
    files[RULES_DOC] = generated(RULES_DOC.read_text(), RULES_DOC, {"rules": _rules()})
    files[METRICS_DOC] = metrics_reference()
    return files


def main() -> int:
    """The repository's generated files are plain files (no gpushare output marker): this script owns them."""
    want = expected()
    for directory in charts():
        shutil.rmtree(directory, ignore_errors=True)
    for path, text in want.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(
        f"wrote the charts under charts/, {SETTINGS_SCHEMA.relative_to(REPO)}, README.md's and docs/rules.md's tables, "
        "docs/metrics.md"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
