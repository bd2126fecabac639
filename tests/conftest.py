"""Shared fixtures: the real helm binary, built from its pinned Go module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from toolchain import HELM, need_tool


@pytest.fixture(scope="session")
def helm() -> Path:
    return need_tool(HELM)
