"""gpushare: GPU sharing on Kubernetes: installer generator, policy rules and dry-run placement."""

__version__ = "0.1.0"

from gpushare.errors import GpushareError, InputError
from gpushare.generate.render import Rendered, render
from gpushare.placement import place
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.validate import validate
from gpushare.settings.model import InstallerSettings, load_settings

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
