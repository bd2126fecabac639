"""gpushare: GPU sharing on Kubernetes: installer generator, policy rules and dry-run placement."""

__version__ = "0.1.0"

from gpushare.errors import GpushareError, InputError  # noqa: E402
from gpushare.placement import place  # noqa: E402
from gpushare.rendering import Rendered, render  # noqa: E402
from gpushare.rules import Context  # noqa: E402
from gpushare.settings import InstallerSettings, load_settings  # noqa: E402
from gpushare.validation import validate  # noqa: E402

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
