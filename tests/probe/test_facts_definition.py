"""The one definition of the facts document: bounds, number kinds, schema, recorded hosts.

The facts are dataclasses (:mod:`hwadvisor.models.facts`) whose bounds and descriptions
are markers in their ``Annotated`` types. Two readers use the markers: pydantic, which
validates documents read from files and publishes the schema, and
:func:`~hwadvisor.models.plain.settled` with :func:`~hwadvisor.models.plain.to_json_value`,
which let ``check --json`` leave impossible readings null and print the document without
pydantic. These tests hold the two readers to the same answers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hwadvisor.cli._common import document_json
from hwadvisor.models import facts as F
from hwadvisor.models.plain import Bound, ProbeStatus, field_specs, settled, to_json_value
from hwadvisor.models.schemas import schema_for
from hwadvisor.probe import memory, nvidia, probe_machine
from hwadvisor.probe.nvml_fake import FakeNvml
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams

DATA = Path(__file__).parents[1] / "data"
HOSTS = sorted(p for p in (DATA / "hosts").iterdir() if p.is_dir())
GPU_RECORDINGS = ["rtx4090", "h100_sxm_8x_nvlink", "a100_mig", "t4_old_driver", "h200"]

#: Every class of the document.
PARTS = [
    F.Host, F.CpuFeatures, F.PeakGflops, F.Cpu, F.Memory, F.GpuSupports, F.Gpu,
    F.TorchInfo, F.Software, F.ProbeRecord, F.Facts,
]  # fmt: skip
#: The least each class needs besides the field under test.
REQUIRED: dict[type, dict[str, object]] = {
    F.Gpu: {"index": 0, "vendor": "nvidia"},
    F.ProbeRecord: {"name": "cpu", "status": "ok"},
    F.TorchInfo: {"version": "2.3.0"},
}
BOUNDED = [(cls, name) for cls in PARTS for name, s in field_specs(cls).items() if s.bound]


def _pydantic_text(facts: F.Facts) -> str:
    """The document as pydantic itself would print it from the same definition."""
    return document_json(F._adapter(F.Facts).dump_python(facts, mode="json"))


def _round_trip(facts: F.Facts) -> str:
    """``check --json`` text, checked to be what pydantic validates and prints alike."""
    text = facts.model_dump_json(indent=2) + "\n"
    assert text == document_json(to_json_value(facts))  # type: ignore[arg-type]
    again = F.Facts.model_validate(json.loads(text))
    assert again == facts
    assert _pydantic_text(again) == text
    return text


@pytest.mark.parametrize("host", HOSTS, ids=lambda p: p.name)
def test_recorded_host_prints_what_pydantic_validates_and_prints(host: Path) -> None:
    _round_trip(probe_machine(Seams.recorded(host)))


@pytest.mark.parametrize("name", GPU_RECORDINGS)
def test_recorded_gpus_print_what_pydantic_validates_and_prints(name: str) -> None:
    rec = json.loads((DATA / "nvml" / f"{name}.json").read_text(encoding="utf-8"))
    log = ProbeLog()
    gpus = nvidia.probe_in_process(FakeNvml(rec), log)
    assert gpus and all(isinstance(g, F.Gpu) for g in gpus)
    text = _round_trip(F.Facts(gpus=gpus, probes=log.records))
    assert json.loads(text)["gpus"][0]["supports"]


def test_this_machine_prints_what_pydantic_validates_and_prints() -> None:
    _round_trip(probe_machine())


def test_the_schema_carries_every_bound_and_description() -> None:
    """The markers reach the published schema: each bound as JSON Schema limits."""
    defs = schema_for("facts")["$defs"]
    names = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum"}
    for cls in PARTS:
        props = (defs.get(cls.__name__) or schema_for("facts"))["properties"]
        for name, spec in field_specs(cls).items():
            assert props[name].get("description") == spec.description, (cls, name)
            if spec.bound is None:
                continue
            (number,) = [a for a in props[name]["anyOf"] if a.get("type") != "null"]
            limits = {
                names[k]: v for k, v in dataclasses.asdict(spec.bound).items() if v is not None
            }
            assert {k: number[k] for k in limits} == limits, (cls, name)


def test_the_bounded_fields_are_the_ones_that_matter() -> None:
    names = {f"{cls.__name__}.{name}" for cls, name in BOUNDED}
    assert {"Memory.total_bytes", "Cpu.usable_cores", "Gpu.utilization_percent"} <= names
    assert field_specs(F.Gpu)["utilization_percent"].bound == Bound(ge=0, le=100)
    # A reading out of its bounds is left null, so every bounded field must be nullable.
    for cls, name in BOUNDED:
        assert getattr(cls(**REQUIRED.get(cls, {})), name) is None, (cls, name)


@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from(BOUNDED),
    value=st.one_of(
        st.integers(-(2**40), 2**40),
        st.sampled_from([0, 1, -1, 100, 101, 0.0, -0.0, 1e-300, -273.15, -273.16, 3.0, 3.7]),
        st.sampled_from([10**400, -(10**400), 2**63, 2.0**63, 2.0**62]),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
)
def test_a_reading_is_left_null_exactly_when_pydantic_refuses_it(
    field: tuple[type, str], value: float
) -> None:
    cls, name = field
    required = REQUIRED.get(cls, {})
    built = {**required, "status": ProbeStatus.OK} if "status" in required else required
    obj, dropped = settled(cls(**{**built, name: value}))
    try:
        checked = cls.model_validate({**required, name: value})  # type: ignore[attr-defined]
        accepted = True
    except ValidationError:
        accepted = False
    assert (dropped == []) == accepted, (cls.__name__, name, value, dropped)
    assert getattr(obj, name) == (getattr(checked, name) if accepted else None)
    assert type(getattr(obj, name)) is type(getattr(checked, name) if accepted else None)


def test_numbers_take_the_kind_of_their_field() -> None:
    gpu = F.Gpu(index=0, vendor="nvidia", temperature_c=45, power_limit_watts=700)
    cpu = F.Cpu(base_mhz=2000, cgroup_quota_cores=2, usable_cores=2)
    out: Any = to_json_value(F.Facts(cpu=cpu, gpus=[gpu]))
    assert out["gpus"][0]["temperature_c"] == 45.0
    assert isinstance(out["gpus"][0]["temperature_c"], float)
    assert isinstance(out["cpu"]["cgroup_quota_cores"], float)
    assert isinstance(out["cpu"]["usable_cores"], int)
    assert out["probes"] == []
    assert out == F._adapter(F.Facts).dump_python(F.Facts(cpu=cpu, gpus=[gpu]), mode="json")


def test_numbers_that_cannot_take_their_kind_are_left_null() -> None:
    cpu = F.Cpu(sockets=3.7, logical_cores=4.0, base_mhz=10**400)  # type: ignore[arg-type]
    cpu, dropped = settled(cpu)
    assert dropped == ["sockets=3.7", f"base_mhz={10**400!r}"[:120]]
    assert (cpu.sockets, cpu.logical_cores, cpu.base_mhz) == (None, 4, None)
    assert type(cpu.logical_cores) is int


def test_probe_status_prints_as_its_value() -> None:
    record = F.ProbeRecord(name="cpu", status=ProbeStatus.DENIED, elapsed_ms=1)
    assert to_json_value(record) == {
        "name": "cpu",
        "status": "denied",
        "source": None,
        "elapsed_ms": 1.0,
        "error": None,
    }


def test_impossible_readings_are_named_in_a_probe_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "probe_memory", lambda seams, log: F.Memory(total_bytes=-1))
    facts = probe_machine(Seams.recorded(DATA / "hosts" / "laptop-avx2"))
    assert facts.memory.total_bytes is None
    record = facts.probe("facts.bounds")
    assert record is not None and record.status is ProbeStatus.ERROR
    assert record.error == "impossible readings left null: memory.total_bytes=-1"
    _round_trip(facts)


def test_text_that_was_not_utf8_prints_as_valid_unicode() -> None:
    """A hostname or environment value with bytes that were not UTF-8 (read with
    surrogateescape) becomes U+FFFD, in the document and for the terminal view."""
    facts, dropped = settled(
        F.Facts(
            host=F.Host(hostname="box\udcff", os="Linux \u00e9t\u00e9"),
            cpu=F.Cpu(flags=["avx2", "x\udcfe"]),
        )
    )
    assert dropped == []
    assert facts.host.hostname == "box\ufffd" and facts.cpu.flags == ["avx2", "x\ufffd"]
    text = _round_trip(facts)
    text.encode("utf-8")  # no lone surrogate left
    assert json.loads(text)["host"]["os"] == "Linux \u00e9t\u00e9"


def test_settled_keeps_what_needs_no_change() -> None:
    facts = probe_machine(Seams.recorded(HOSTS[0]))
    again, dropped = settled(facts)
    assert again is facts and dropped == []


def test_the_document_is_frozen_and_copies_like_the_other_documents() -> None:
    facts = F.Facts(cpu=F.Cpu(usable_cores=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.cpu.usable_cores = 3  # type: ignore[misc]
    copy = facts.model_copy(update={"memory": F.Memory(total_bytes=8)})
    assert copy.memory.total_bytes == 8 and facts.memory.total_bytes is None
    assert copy.cpu is facts.cpu
    assert facts.model_dump(mode="json")["cpu"]["usable_cores"] == 2
    assert facts.cpu.features.model_dump() == {f: False for f in F.CpuFeatures.model_fields}
    assert list(F.Facts.model_fields)[:3] == ["schema_version", "tool", "generated_at"]


def test_floats_must_be_finite_when_read() -> None:
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValidationError, match="finite"):
            F.PeakGflops.model_validate({"fp32": value})


@pytest.mark.parametrize("host", HOSTS, ids=lambda p: p.name)
def test_the_terminal_view_renders_every_recorded_host(
    host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hwadvisor.render.check import render_facts

    rec = json.loads((DATA / "nvml" / "rtx4090.json").read_text(encoding="utf-8"))
    gpus = nvidia.probe_in_process(FakeNvml(rec), ProbeLog())
    render_facts(probe_machine(Seams.recorded(host)).model_copy(update={"gpus": gpus}))
    out = capsys.readouterr().out
    assert "CPU" in out and "GPU 0" in out
