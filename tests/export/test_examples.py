"""The shipped provisioning examples stay true: valid YAML/units whose commands really run."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from .conftest import REPORTS, parse_features

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"
FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"
EPYC = str(REPORTS / "recorded-epyc-milan-kvm.json")


def _invoke(cli: Cli, command: str, **paths: str) -> None:
    """Run one `hwadvisor ...` line of an example through the CLI, paths swapped for temp ones."""
    for old, new in paths.items():
        command = command.replace(old, new)
    argv = shlex.split(command)
    assert Path(argv[0]).name == "hwadvisor"
    result = cli(*argv[1:])
    assert result.code == 0, (command, result.err)


def test_daemonset_structure_and_commands(cli: Cli, tmp_path: Path) -> None:
    doc = yaml.safe_load((EXAMPLES / "nfd-daemonset.yaml").read_text())
    assert doc["apiVersion"] == "apps/v1" and doc["kind"] == "DaemonSet"
    spec = doc["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert volumes["features-d"] == mounts["features-d"] == FEATURES_D
    script = container["args"][0]
    assert f"out={FEATURES_D}/hwadvisor" in script
    lines = [ln.strip() for ln in script.splitlines() if ln.strip().startswith("hwadvisor export")]
    assert len(lines) == 2 and all("--format nfd" in ln for ln in lines)
    out = tmp_path / "hwadvisor"
    for line in lines:
        _invoke(cli, line, **{'"$out"': str(out), '"$cache"': EPYC})
        labels, expiry = parse_features(out.read_text())
        assert expiry is not None and "hwadvisor.io/role" in labels


def test_systemd_units(cli: Cli, tmp_path: Path) -> None:
    service = configparser.ConfigParser(strict=False, interpolation=None)
    service.read(EXAMPLES / "hwadvisor-facts.service")
    assert service["Service"]["Type"] == "oneshot"
    cache = "/var/cache/hwadvisor/facts.json"
    assert service["Service"]["ExecStart"].endswith(f"check --json --bench --output {cache}")
    assert service["Service"]["CacheDirectory"] == "hwadvisor"
    post = service["Service"]["ExecStartPost"].lstrip("-")
    prom = tmp_path / "hwadvisor.prom"
    _invoke(
        cli,
        post,
        **{cache: EPYC, "/var/lib/node_exporter/textfile_collector/hwadvisor.prom": str(prom)},
    )
    assert any(
        f.name == "hwadvisor_cpu_usable_cores"
        for f in text_string_to_metric_families(prom.read_text())
    )
    timer = configparser.ConfigParser(strict=False, interpolation=None)
    timer.read(EXAMPLES / "hwadvisor-facts.timer")
    assert timer["Install"]["WantedBy"] == "timers.target"
    assert re.fullmatch(r"\d+(min|h|d)", timer["Timer"]["OnUnitActiveSec"])


@pytest.mark.slow
@pytest.mark.skipif(
    not (Path(sys.executable).parent / "ansible-playbook").exists(),
    reason="ansible-core is not installed (dev extra)",
)
def test_ansible_playbook_runs_end_to_end(tmp_path: Path) -> None:
    playbook = EXAMPLES / "ansible-hwadvisor.yml"
    assert isinstance(yaml.safe_load(playbook.read_text()), list)
    hwadvisor = shutil.which("hwadvisor", path=str(Path(sys.executable).parent))
    assert hwadvisor is not None
    extra = {
        "hwadvisor": hwadvisor,
        "facts_dir": str(tmp_path / "facts.d"),
        "cache": str(tmp_path / "cache" / "facts.json"),
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
    }
    env = {
        **os.environ,
        "ANSIBLE_HOME": str(tmp_path / "home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
    }
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            str(playbook),
            "-e",
            json.dumps(extra),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "failed=0" in run.stdout
    cores = json.loads((tmp_path / "cache" / "facts.json").read_text())["cpu"]["usable_cores"]
    assert f"localhost: {cores} usable cores" in run.stdout
