"""Shared fixtures: the real helm binary, built from its pinned Go module."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))
from toolchain import HELM, need_tool

# Property tests: a quick loop while developing, the full count in CI (HYPOTHESIS_PROFILE picks either).
settings.register_profile("dev", max_examples=100)
settings.register_profile("ci", max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev"))


@pytest.fixture(scope="session")
def helm() -> Path:
    return need_tool(HELM)
