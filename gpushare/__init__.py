"""gpushare: GPU sharing on Kubernetes: installer generator, policy rules and dry-run placement.

The public API is imported on first use (PEP 562), so the command line starts without loading what a command
does not need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from gpushare.domain.kinds import VERSION as __version__

if TYPE_CHECKING:
    from gpushare.errors import GpushareError, InputError
    from gpushare.generate.render import Rendered, render
    from gpushare.placement import place
    from gpushare.policy.engine import ClusterFacts
    from gpushare.policy.validate import validate
    from gpushare.settings.model import InstallerSettings, load_settings

#: Public name -> the module that defines it.
_PUBLIC = {
    "ClusterFacts": "gpushare.policy.engine",
    "GpushareError": "gpushare.errors",
    "InputError": "gpushare.errors",
    "InstallerSettings": "gpushare.settings.model",
    "Rendered": "gpushare.generate.render",
    "load_settings": "gpushare.settings.model",
    "place": "gpushare.placement",
    "render": "gpushare.generate.render",
    "validate": "gpushare.policy.validate",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'gpushare' has no attribute {name!r}")
    from gpushare import helptext

    # a class or function mypyc compiled: its docstring and signature back from the source
    value = helptext.restored(getattr(import_module(module), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names too, though they load on first use: what `dir(gpushare)` and completion offer."""
    return sorted({*globals(), *_PUBLIC})


__all__ = [
    "ClusterFacts",
    "GpushareError",
    "InputError",
    "InstallerSettings",
    "Rendered",
    "__version__",
    "load_settings",
    "place",
    "render",
    "validate",
]
