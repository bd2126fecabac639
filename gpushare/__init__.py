"""gpushare: GPU sharing on Kubernetes: installer generator, policy rules and dry-run placement."""

__version__ = "0.1.0"

from gpushare.errors import GpushareError, InputError
from gpushare.rendering import Rendered, render
from gpushare.settings import InstallerSettings, load_settings

__all__ = ["GpushareError", "InputError", "InstallerSettings", "Rendered", "__version__", "load_settings", "render"]
