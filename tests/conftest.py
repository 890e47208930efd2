"""Shared test fixtures: where recorded hosts live, and a CLI runner."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
DATA = TESTS / "data"
HOSTS = DATA / "hosts"
STANDIN_SOURCE = DATA / "nvml" / "standin" / "libnvidia-ml.c"


@pytest.fixture
def hosts_dir() -> Path:
    """Folder of recorded machines (``tests/data/hosts/<name>/``)."""
    return HOSTS


@pytest.fixture
def data_dir() -> Path:
    """The tests' data folder."""
    return DATA


@pytest.fixture(scope="session")
def standin_nvml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the stand-in ``libnvidia-ml.so.1``, built from C once per run.

    Put it on ``LD_LIBRARY_PATH`` and the real pynvml path loads it; ``STANDIN_NVML_MODE``
    chooses its behaviour (hang, crash, version mismatch, ...).
    """
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in NVML library")
    out = tmp_path_factory.mktemp("standin-nvml")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(out / "libnvidia-ml.so.1"), str(STANDIN_SOURCE)],
        check=True,
        timeout=60,
    )
    return out
