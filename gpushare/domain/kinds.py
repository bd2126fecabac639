"""The versioned kinds of gpushare's own documents: the settings it reads and the reports it writes."""

from __future__ import annotations

from typing import Final, Literal, get_args

#: gpushare's own version (the package's `__version__`, what `--version` prints and its outputs are stamped with).
VERSION: Final = "0.1.0"

ApiVersion = Literal["gpushare.io/v1alpha1"]
API_VERSION: Final[ApiVersion] = "gpushare.io/v1alpha1"
assert get_args(ApiVersion) == (API_VERSION,)

INSTALLER_SETTINGS: Final = "InstallerSettings"
RENDER_RESULT: Final = "RenderResult"
PLACEMENT_REPORT: Final = "PlacementReport"
PLACEMENT_COMPARISON: Final = "PlacementComparison"
CAPACITY_REPORT: Final = "CapacityReport"
CHANGE_REPORT: Final = "ChangeReport"
SNAPSHOT: Final = "Snapshot"
VALIDATION_REPORT: Final = "ValidationReport"
RULE_LIST: Final = "RuleList"
