"""`gpushare render`: its flags (one per setting), and what it prints: the files written and the next steps, or a
JSON summary a pipeline can read (what was written where, which objects, which warnings)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpushare.domain import kinds
from gpushare.domain.products import INSTALLER_CHART
from gpushare.generate.render import FORMATS, Rendered, render
from gpushare.settings.options import OPTIONS

#: Where a chart goes when no --output is given: a directory named as the chart is, like ACK's own installer's.
DEFAULT_CHART_DIR = INSTALLER_CHART


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--config", metavar="FILE", help="settings document (YAML, kind InstallerSettings)")
    p.add_argument("--format", choices=FORMATS, default="chart", help="chart directory or plain manifests")
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help=f"chart: directory (default ./{DEFAULT_CHART_DIR}); manifests: file, '-' for stdout (default), "
        "or a directory in control-plane mode. Only a missing or empty path, or gpushare's own unchanged "
        "output, is written",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write over a path gpushare did not write (or one edited since): the old one is kept as a "
        "backup beside it (never the current, home or root directory)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON summary (files, objects, warnings) on stdout")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print only warnings and errors (no 'wrote' line, no next steps)"
    )
    group = p.add_argument_group("settings")
    for option in OPTIONS:
        kwargs: dict[str, Any] = {"dest": option.flag.replace("-", "_"), "default": None, "help": option.help}
        if option.kind == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["metavar"] = {"csv": "A,B", "yaml": "YAML", "int": "N"}.get(option.kind, "VALUE")
            if option.choices and option.kind == "csv":
                kwargs["help"] += f" Comma-separated: {', '.join(option.choices)}."
            elif option.choices:
                kwargs["metavar"] = "{" + ",".join(option.choices) + "}"
        group.add_argument(f"--{option.flag}", **kwargs)


def main(args: argparse.Namespace) -> int:
    options = {o.flag.replace("-", "_"): getattr(args, o.flag.replace("-", "_")) for o in OPTIONS}
    options = {k: v for k, v in options.items() if v is not None}
    output = args.output
    if output is None:
        output = DEFAULT_CHART_DIR if args.format == "chart" else "-"
    rendered = render(format=args.format, output=output, config=args.config, force=args.force, **options)
    for finding in rendered.warnings:
        print(f"gpushare: warning: {finding.message}", file=sys.stderr)
    to_stdout = args.format == "manifests" and output == "-"
    if args.json:
        print(json.dumps(summary(rendered, output, to_stdout), indent=2))
    elif to_stdout:  # the manifests on stdout, the next steps on stderr (`> stack.yaml` keeps them apart)
        sys.stdout.write(rendered.files["manifests.yaml"])
        if not args.quiet:
            print(rendered.notes, file=sys.stderr, end="")
    elif not args.quiet:
        written = rendered.written
        print(f"gpushare: wrote {rendered.format} to {written.target if written else output}", file=sys.stderr)
        if written and written.backup:
            print(f"gpushare: kept what was there as {written.backup}", file=sys.stderr)
        print(rendered.notes, file=sys.stderr, end="")
    return 0


def summary(rendered: Rendered, output: str, to_stdout: bool) -> dict[str, Any]:
    """The `--json` document (kind RenderResult): with manifests on stdout, they are a field of it, so that stdout
    stays one JSON document."""
    written = rendered.written
    doc: dict[str, Any] = {
        "apiVersion": kinds.API_VERSION,
        "kind": kinds.RENDER_RESULT,
        "format": rendered.format,
        "output": None if to_stdout else str(written.target if written else output),
        "backup": str(written.backup) if written and written.backup else None,
        "files": sorted(rendered.files),
        "objects": [
            {"kind": o["kind"], "name": o["metadata"]["name"], "namespace": o["metadata"].get("namespace")}
            for o in rendered.objects
        ],
        "warnings": [{"rule": f.rule.id, "message": f.message} for f in rendered.warnings],
        "requirements": rendered.requirements,
        "installValues": rendered.install_values,
    }
    if to_stdout:
        doc["manifests"] = rendered.files["manifests.yaml"]
    return doc
