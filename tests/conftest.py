"""Shared test fixtures: where recorded hosts live, and a CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
DATA = TESTS / "data"
HOSTS = DATA / "hosts"


@pytest.fixture
def hosts_dir() -> Path:
    """Folder of recorded machines (``tests/data/hosts/<name>/``)."""
    return HOSTS


@pytest.fixture
def data_dir() -> Path:
    """The tests' data folder."""
    return DATA
