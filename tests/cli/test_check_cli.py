"""`hwadvisor check`: exit codes, the JSON contract, atomic output, and no torch import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.schemas import schema_for

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m hwadvisor ARGS`` in a child process: for what only a process shows."""
    return subprocess.run(
        [sys.executable, "-m", "hwadvisor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_json_validates_against_published_schema(cli: Cli) -> None:
    result = cli("check", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    jsonschema.validate(doc, schema_for("facts"))
    assert doc["schema_version"].startswith("1.")
    assert doc["tool"]["name"] == "hwadvisor"
    names = {p["name"] for p in doc["probes"]}
    assert {"cpu", "memory", "host"} <= names


def test_check_json_matches_this_machine(cli: Cli) -> None:
    doc = json.loads(cli("check", "--json").out)
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("not Linux")
    total_kib = next(
        int(line.split()[1])
        for line in meminfo.read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    assert abs(doc["memory"]["total_bytes"] - total_kib * 1024) <= 0.01 * total_kib * 1024
    assert (
        doc["cpu"]["usable_cores"] == len(os.sched_getaffinity(0))
        or doc["cpu"]["cgroup_quota_cores"]
    )
    flags = set(doc["cpu"]["flags"])
    assert doc["cpu"]["features"]["avx2"] == ("avx2" in flags)
    assert doc["cpu"]["features"]["amx_bf16"] == ("amx_bf16" in flags)


def test_check_human_output_has_panels(cli: Cli) -> None:
    result = cli("check")
    assert result.code == 0, result.err
    assert "CPU" in result.out
    assert "Memory & software" in result.out


def test_output_file_written_whole(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "facts.json"
    result = cli("check", "--json", "--output", str(target))
    assert result.code == 0
    assert json.loads(target.read_text()) == json.loads(result.out)
    assert [p.name for p in tmp_path.iterdir()] == ["facts.json"]  # no dot-file left behind


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
@pytest.mark.parametrize("human", [False, True], ids=["json", "terminal"])
def test_output_file_mode_follows_the_umask(
    cli: Cli, tmp_path: Path, umask: int, mode: int, human: bool
) -> None:
    """docs/provisioning.md: --output writes as a shell redirect would, 0666 less the umask."""
    target = tmp_path / "facts.json"
    old = os.umask(umask)
    try:
        result = cli("check", *([] if human else ["--json"]), "--output", str(target))
    finally:
        os.umask(old)
    assert result.code == 0, result.err
    assert target.stat().st_mode & 0o777 == mode


def test_output_to_missing_folder_is_one_line(cli: Cli, tmp_path: Path) -> None:
    result = cli("check", "--output", str(tmp_path / "nope" / "facts.json"))
    assert result.code == 2
    assert "Traceback" not in result.err
    assert len(result.error_lines()) == 1
    assert "nope" in result.err


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--definitely-not-an-option"],
        ["check", "--timeout", "-1"],
        ["check", "--timeout", "nan"],
        ["check", "--timeout", "abc"],
        ["no-such-command"],
    ],
)
def test_bad_usage_is_exit_2_one_line(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    lines = result.error_lines()
    assert len(lines) == 1 and lines[0].startswith("hwadvisor: error:")


def test_bad_usage_with_json_prints_error_document(cli: Cli) -> None:
    result = cli("check", "--json", "--timeout", "0")
    assert result.code == 2
    doc = json.loads(result.out)
    assert doc["error"]["exit_code"] == 2
    assert "--timeout" in doc["error"]["message"]


@pytest.mark.parametrize(
    "extra",
    [["--json"], ["--json", "--output", "facts.json"], []],
    ids=["stdout", "output", "terminal"],
)
def test_check_imports_neither_torch_nor_pydantic(extra: list[str], tmp_path: Path) -> None:
    """The start-up budget: torch, py-cpuinfo, pydantic and typer stay out of ``check``."""
    code = (
        "import sys\n"
        "from hwadvisor.cli import main\n"
        f"code = main(['check', *{extra!r}])\n"
        "assert code == 0, code\n"
        "bad = [m for m in ('torch', 'cpuinfo', 'pydantic', 'typer') if m in sys.modules]\n"
        "sys.stderr.write('IMPORTED:' + ','.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    imported = proc.stderr.rsplit("IMPORTED:", 1)[1].strip()
    # Off Linux the CPU probe needs py-cpuinfo; nothing else may come in anywhere.
    expected = "" if sys.platform.startswith("linux") else "cpuinfo"
    assert imported == expected
    if "--output" in extra:
        assert json.loads((tmp_path / "facts.json").read_text(encoding="utf-8"))["cpu"]


def test_version_and_module_entry_point() -> None:
    proc = run_module("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("hwadvisor ")


def test_error_line_is_printable_and_bounded() -> None:
    from hwadvisor.cli._common import MAX_ERROR_CHARS, one_line

    line = one_line("bad value \x1b[31mred\x1b[0m\x07 " + "x" * 5000 + "\nsecond line")
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line
    assert len(line) <= MAX_ERROR_CHARS
    assert line.startswith("bad value red x")


# The terminal view: probes counted by outcome, and AMX a hypervisor hides. -------------


def _recorded(name: str) -> Any:
    from hwadvisor.probe import probe_machine
    from hwadvisor.probe.seams import Seams

    return probe_machine(Seams.recorded(Path(__file__).parents[1] / "data" / "hosts" / name))


def _view(facts: Any, width: int = 80) -> str:
    import io

    from rich.console import Console

    from hwadvisor.render.check import render_facts

    buf = io.StringIO()
    render_facts(facts, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_absent_gpus_are_counted_as_absent_not_as_failures() -> None:
    facts = _recorded("epyc-milan-kvm")
    statuses = [p.status.value for p in facts.probes]
    ok, absent = statuses.count("ok"), statuses.count("absent")
    assert absent == 3 and ok == len(statuses) - 3
    text = _view(facts)
    assert f"{ok} probes ok, 3 absent" in text
    assert "of" not in text.split("probes ok")[0].splitlines()[-1]  # not "8 of 11 probes ok"


def test_a_failed_probe_is_counted_by_its_outcome() -> None:
    from hwadvisor.models.facts import ProbeRecord
    from hwadvisor.models.plain import ProbeStatus

    facts = _recorded("epyc-milan-kvm")
    broken = ProbeRecord(name="gpu.amd", status=ProbeStatus.ERROR, source="sysfs", error="EIO")
    facts = facts.model_copy(update={"probes": [*facts.probes, broken]})
    assert "3 absent, 1 error" in _view(facts)


def _amx_hidden(facts: Any, virtualization: str | None) -> Any:
    """``facts`` as a guest would see them whose hypervisor hides the AMX tiles."""
    cpu = facts.cpu
    features = cpu.features.model_copy(
        update={"amx_tile": False, "amx_bf16": False, "amx_int8": False, "amx_fp16": False}
    )
    flags = [f for f in cpu.flags if not f.startswith("amx")]
    cpu = cpu.model_copy(update={"features": features, "flags": flags, "amx_note": None})
    host = facts.host.model_copy(update={"virtualization": virtualization})
    return facts.model_copy(update={"cpu": cpu, "host": host})


def test_check_says_when_the_hypervisor_hides_amx_from_a_cpu_that_has_it() -> None:
    from hwadvisor.probe.microarch import AMX_MICROARCHS

    facts = _recorded("spr-amx-kvm")
    assert facts.cpu.microarchitecture in AMX_MICROARCHS and facts.cpu.features.amx_bf16
    assert "not exposed" not in _view(facts)  # the tiles are there: nothing to say
    hidden = " ".join(_view(_amx_hidden(facts, "kvm")).split())
    assert "AMX not exposed by the hypervisor (kvm; the CPU model has it)" in hidden
    bare = " ".join(_view(_amx_hidden(facts, None)).split())
    assert "AMX not reported by this kernel" in bare and "hypervisor" not in bare


def test_the_amx_note_reads_the_microarchitecture_table_not_a_model_name() -> None:
    facts = _amx_hidden(_recorded("spr-amx-kvm"), "kvm")
    # The same Xeon model string on a microarchitecture without AMX says nothing.
    cpu = facts.cpu.model_copy(update={"microarchitecture": "icelake_server"})
    assert "AMX not" not in _view(facts.model_copy(update={"cpu": cpu}))
    # A CPU without AMX in a VM (Zen 3 here) says nothing either.
    assert "AMX not" not in _view(_recorded("epyc-milan-kvm"))
