"""Where settings come from: a model, a document, a `--config` file and flags, merged in that order of precedence."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpushare.errors import InputError
from gpushare.kube.documents import compose_all
from gpushare.settings.model import API_VERSION, KIND, InstallerSettings, load_settings
from gpushare.settings.options import apply


def load_config(path: str | Path, flag: str = "--config") -> dict[str, Any]:
    """Read a settings document; unreadable YAML is an InputError naming the file and line (and `flag`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(flag, str(path), f"a readable file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise InputError(flag, str(path), f"a UTF-8 text file (YAML; byte {exc.start} is not UTF-8)") from None
    documents = [data for _, data in compose_all(text, str(path), flag) if data is not None]
    if not documents:
        raise InputError(flag, str(path), "a settings document (the file holds none)")
    if len(documents) > 1:
        raise InputError(flag, str(path), f"one settings document (the file holds {len(documents)})")
    (data,) = documents
    if not isinstance(data, dict):
        raise InputError(flag, str(path), "a YAML mapping (apiVersion, kind, settings...)")
    for key, value in (("apiVersion", API_VERSION), ("kind", KIND)):
        if key not in data:
            raise InputError(key, None, f"{value}: a settings file says what it is", str(path))
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
