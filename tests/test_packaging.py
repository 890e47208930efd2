"""The top-level rules/ folder reaches both an editable install and a built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import hwadvisor

ROOT = Path(__file__).resolve().parents[1]


def test_rules_reach_the_editable_install() -> None:
    from hwadvisor.engine import rules_dir

    found = rules_dir()
    assert found.is_dir()
    assert sorted(p.name for p in found.glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "rules").glob("*.yaml")
    )
    assert any(found.glob("*.yaml"))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to copy the tree")
def test_rules_and_catalogs_reach_the_wheel(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = next(tmp_path.glob("hwadvisor-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    rule_files = {
        Path(n).name for n in names if n.startswith("hwadvisor/rules/") and n.endswith(".yaml")
    }
    assert rule_files == {p.name for p in (ROOT / "rules").glob("*.yaml")}
    assert any(n.startswith("hwadvisor/catalog/data/") for n in names)
    assert "hwadvisor/cli/__init__.py" in names
    assert hwadvisor.__version__ in wheel.name
