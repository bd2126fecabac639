"""gpushare: GPU sharing on Kubernetes: installer generator, policy rules and dry-run placement."""

__version__ = "0.1.0"

from gpushare.errors import GpushareError, InputError
from gpushare.placement import place
from gpushare.rendering import Rendered, render
from gpushare.rules import Context
from gpushare.settings import InstallerSettings, load_settings
from gpushare.validation import validate

__all__ = [
    "Context",
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
