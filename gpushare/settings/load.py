"""Where settings come from: a model, a document, a `--config` file and flags, merged in that order of precedence."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gpushare.errors import InputError
from gpushare.settings.model import InstallerSettings, load_settings
from gpushare.settings.options import apply


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a settings document; unreadable YAML is an InputError naming the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError("--config", str(path), f"a readable file ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark is not None else "somewhere"
        raise InputError("--config", str(path), f"valid YAML (error at {line})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError("--config", str(path), "a YAML mapping (apiVersion, kind, settings...)")
    return data


def build_settings(
    settings: InstallerSettings | Mapping[str, Any] | None = None, config: str | Path | None = None, **options: Any
) -> InstallerSettings:
    """Settings from a model, a document, a --config file and option overrides (in that order of precedence)."""
    if isinstance(settings, InstallerSettings):
        document: dict[str, Any] = settings.document()
    else:
        document = dict(settings or {})
    where = None
    if config is not None:
        document = {**load_config(config), **document}
        where = str(config)
    return load_settings(apply(document, options), where=where)
