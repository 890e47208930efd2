"""The Ansible local fact: a tiny script printing the cache, read by the real ansible-core."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.export.ansible import FACT_MODE, render_fact
from hwadvisor.io import atomic_write_text

from .conftest import REPORTS

ANSIBLE = Path(sys.executable).parent / "ansible"


def _install(folder: Path, cache: Path) -> Path:
    fact = folder / "hwadvisor.fact"
    atomic_write_text(fact, render_fact(str(cache)), mode=FACT_MODE)
    return fact


@pytest.mark.parametrize("cache_name", ["facts.json", 'it\'s a "cache" $HOME.json'])
def test_fact_prints_the_cache_or_an_error(tmp_path: Path, cache_name: str) -> None:
    cache = tmp_path / cache_name
    fact = _install(tmp_path, cache)
    assert stat.S_IMODE(fact.stat().st_mode) == 0o755
    missing = json.loads(
        subprocess.run([str(fact)], capture_output=True, text=True, check=True, timeout=10).stdout
    )
    assert str(cache) in missing["error"]
    shutil.copy(REPORTS / "recorded-epyc-milan-kvm.json", cache)
    printed = json.loads(
        subprocess.run([str(fact)], capture_output=True, text=True, check=True, timeout=10).stdout
    )
    assert printed == json.loads(cache.read_text())


def test_relative_cache_path_is_refused() -> None:
    with pytest.raises(UsageError):
        render_fact("facts.json")


@pytest.mark.slow
@pytest.mark.skipif(
    not ANSIBLE.exists() and shutil.which("ansible") is None,
    reason="ansible-core is not installed (dev extra)",
)
def test_real_ansible_reads_the_fact(tmp_path: Path) -> None:
    facts_d = tmp_path / "facts.d"
    facts_d.mkdir()
    cache = tmp_path / "cache.json"
    shutil.copy(REPORTS / "synthetic-dgx-h100x8.json", cache)
    _install(facts_d, cache)
    ansible = str(ANSIBLE) if ANSIBLE.exists() else str(shutil.which("ansible"))
    env = {
        **os.environ,
        "ANSIBLE_HOME": str(tmp_path / "home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
    }
    run = subprocess.run(
        [
            ansible,
            "localhost",
            "-c",
            "local",
            "-m",
            "setup",
            "-a",
            f"fact_path={facts_d} filter=ansible_local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    # Ad-hoc output is "localhost | SUCCESS => {json}".
    head, _, body = run.stdout.partition("=>")
    assert "SUCCESS" in head
    local = json.loads(body)["ansible_facts"]["ansible_local"]
    hw = local["hwadvisor"]
    assert isinstance(hw, dict)
    assert len(hw["gpus"]) == 8
    assert hw["cpu"]["usable_cores"] == 112
