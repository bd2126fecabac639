"""Regenerate the repository's generated files: charts/ack-ai-installer (default settings) and the settings schema.

Run `python tests/regenerate.py` after changing the generator; test_generated_files_in_sync fails until you do.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpushare import render  # noqa: E402
from gpushare.settings.model import settings_schema  # noqa: E402

CHART = REPO / "charts" / "ack-ai-installer"
SETTINGS_SCHEMA = REPO / "schemas" / "installer-settings.schema.json"


def expected() -> dict[Path, str]:
    files = {CHART / rel: text for rel, text in render(format="chart").files.items()}
    files[SETTINGS_SCHEMA] = json.dumps(settings_schema(), indent=2) + "\n"
    return files


def main() -> int:
    from gpushare.generate.output import write_file, write_tree

    write_tree(CHART, render(format="chart").files)
    write_file(SETTINGS_SCHEMA, expected()[SETTINGS_SCHEMA])
    print(f"wrote {CHART.relative_to(REPO)} and {SETTINGS_SCHEMA.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
