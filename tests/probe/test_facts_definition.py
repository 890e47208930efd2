"""The probe's plain dataclasses print exactly what the pydantic facts models print.

``check --json`` writes the JSON of :mod:`hwadvisor.models.facts_plain` without building
the models; every other command validates it into :class:`~hwadvisor.models.facts.Facts`.
These tests keep the two the same document: the generated module matches the models;
the text printed from either is identical on every recorded machine and GPU set; and for
any values the fields can hold, the JSON values are equal (the text can differ only in
how a very small or large float is spelled: ``1e-05`` against ``0.00001``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.cli._common import document_json
from hwadvisor.models import common
from hwadvisor.models import facts as checked
from hwadvisor.models import facts_plain as plain
from hwadvisor.models.plain import ProbeStatus, to_json_value
from hwadvisor.models.plain import null_impossible as plain_null_impossible
from hwadvisor.models.plain_gen import facts_models, render
from hwadvisor.probe import nvidia, probe_plain
from hwadvisor.probe.nvml_fake import FakeNvml
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams

DATA = Path(__file__).parents[1] / "data"
HOSTS = sorted(p for p in (DATA / "hosts").iterdir() if p.is_dir())
GPU_RECORDINGS = ["rtx4090", "h100_sxm_8x_nvlink", "a100_mig", "t4_old_driver", "h200"]


def _both_texts(facts: plain.Facts) -> tuple[str, str]:
    """The ``check --json`` text from the plain classes, and from the validated model."""
    document = to_json_value(facts)
    assert isinstance(document, dict)
    return document_json(document), document_json(checked.Facts.model_validate(document))


def test_generated_module_matches_the_models() -> None:
    source = Path(plain.__file__).read_text(encoding="utf-8")
    assert source == render(), "run: python scripts/gen_facts_plain.py"


def test_every_model_has_a_plain_twin_with_the_same_fields_in_order() -> None:
    for model in facts_models():
        twin = getattr(plain, model.__name__)
        assert [f.name for f in dataclasses.fields(twin)] == list(model.model_fields)


@pytest.mark.parametrize("host", HOSTS, ids=lambda p: p.name)
def test_recorded_host_prints_the_same_text_either_way(host: Path) -> None:
    fast, validated = _both_texts(probe_plain(Seams.recorded(host)))
    assert fast == validated


@pytest.mark.parametrize("name", GPU_RECORDINGS)
def test_gpus_print_the_same_text_either_way(name: str) -> None:
    rec = json.loads((DATA / "nvml" / f"{name}.json").read_text(encoding="utf-8"))
    log = ProbeLog()
    gpus = nvidia.probe_in_process(FakeNvml(rec), log)
    assert gpus
    fast, validated = _both_texts(plain.Facts(gpus=gpus, probes=log.records))
    assert fast == validated
    assert json.loads(fast)["gpus"][0]["supports"]


def test_this_machine_prints_the_same_text_either_way() -> None:
    fast, validated = _both_texts(probe_plain())
    assert fast == validated


def test_numbers_take_the_type_of_their_field() -> None:
    gpu = plain.Gpu(index=0, vendor="nvidia", temperature_c=45, power_limit_watts=700)
    cpu = plain.Cpu(base_mhz=2000, cgroup_quota_cores=2, usable_cores=2)
    out: Any = to_json_value(plain.Facts(cpu=cpu, gpus=[gpu]))
    assert out["gpus"][0]["temperature_c"] == 45.0
    assert isinstance(out["gpus"][0]["temperature_c"], float)
    assert isinstance(out["cpu"]["cgroup_quota_cores"], float)
    assert isinstance(out["cpu"]["usable_cores"], int)
    assert out["probes"] == []


def test_probe_status_prints_as_its_value() -> None:
    record = plain.ProbeRecord(name="cpu", status=ProbeStatus.DENIED, elapsed_ms=1)
    assert to_json_value(record) == {
        "name": "cpu",
        "status": "denied",
        "source": None,
        "elapsed_ms": 1.0,
        "error": None,
    }


_maybe_int = st.none() | st.integers(min_value=0, max_value=2**53)
_maybe_number = st.none() | st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False)
_maybe_text = st.none() | st.text(max_size=20)


@settings(max_examples=60, deadline=None)
@given(
    temp=_maybe_number,
    power=_maybe_number,
    util=_maybe_number,
    memory=_maybe_int,
    name=_maybe_text,
    mig=st.none() | st.booleans(),
)
def test_any_gpu_values_print_the_same_either_way(
    temp: float | None,
    power: float | None,
    util: float | None,
    memory: int | None,
    name: str | None,
    mig: bool | None,
) -> None:
    gpu = plain.Gpu(
        index=3,
        vendor="nvidia",
        name=name,
        memory_total_bytes=memory,
        temperature_c=temp,
        power_limit_watts=power,
        utilization_percent=util,
        mig_enabled=mig,
        supports=plain.GpuSupports(fp16=True, fp8=None),
    )
    plain_null_impossible(gpu)  # as probe_plain does
    fast = to_json_value(gpu)
    assert fast == checked.Gpu.model_validate(fast).model_dump(mode="json")


@settings(max_examples=60, deadline=None)
@given(
    quota=_maybe_number,
    mhz=_maybe_number,
    cores=_maybe_int,
    flags=st.lists(st.text(min_size=1, max_size=8), max_size=5),
    model=_maybe_text,
)
def test_any_cpu_values_print_the_same_either_way(
    quota: float | None, mhz: float | None, cores: int | None, flags: list[str], model: str | None
) -> None:
    cpu = plain.Cpu(
        model=model,
        cgroup_quota_cores=quota,
        base_mhz=mhz,
        usable_cores=cores,
        flags=flags,
        features=plain.CpuFeatures(avx2=True),
        peak_gflops=plain.PeakGflops(fp32=mhz, basis="test"),
    )
    plain_null_impossible(cpu)  # as probe_plain does
    fast = to_json_value(cpu)
    assert fast == checked.Cpu.model_validate(fast).model_dump(mode="json")


# Bounds: a probe's impossible reading is left null, exactly where the models refuse it.

#: Each plain class with bounds, and the least a model of it needs besides the field.
_REQUIRED: dict[str, dict[str, object]] = {
    "Gpu": {"index": 0, "vendor": "nvidia"},
    "ProbeRecord": {"name": "cpu", "status": "ok"},
}
BOUNDED = [
    (cls, name) for cls in (getattr(plain, n) for n in plain.__all__) for name in cls._bounds
]


def test_the_bounded_fields_are_the_ones_that_matter() -> None:
    names = {f"{cls.__name__}.{name}" for cls, name in BOUNDED}
    assert {"Memory.total_bytes", "Cpu.usable_cores", "Gpu.utilization_percent"} <= names
    assert plain.Gpu._bounds["utilization_percent"] == (("ge", 0), ("le", 100), ("finite", 1))


@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from(BOUNDED),
    value=st.one_of(
        st.integers(-(2**40), 2**40),
        st.sampled_from([0, 1, -1, 100, 101, 0.0, -0.0, 1e-300, -273.15, -273.16, 3.0, 3.7]),
        st.sampled_from([10**400, -(10**400), 2**63]),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
)
def test_a_value_is_left_null_exactly_when_the_model_refuses_it(
    field: tuple[type, str], value: float
) -> None:
    from pydantic import ValidationError

    cls, name = field
    required = _REQUIRED.get(cls.__name__, {})
    plain_required = {**required, "status": ProbeStatus.OK} if "status" in required else required
    obj = cls(**{**plain_required, name: value})
    dropped = plain_null_impossible(obj)
    model = getattr(checked, cls.__name__, None) or getattr(common, cls.__name__)
    try:
        model.model_validate({**required, name: value})
        accepted = True
    except ValidationError:
        accepted = False
    assert (dropped == []) == accepted, (cls.__name__, name, value, dropped)
    assert getattr(obj, name) == (value if accepted else None)
    if accepted:  # and what is kept prints as the model prints it
        assert to_json_value(obj) == model.model_validate(to_json_value(obj)).model_dump(
            mode="json"
        )


def test_impossible_readings_are_named_in_a_probe_record(monkeypatch: pytest.MonkeyPatch) -> None:
    from hwadvisor.probe import memory

    monkeypatch.setattr(memory, "probe_memory", lambda seams, log: plain.Memory(total_bytes=-1))
    facts = probe_plain(Seams.recorded(DATA / "hosts" / "laptop-avx2"))
    assert facts.memory.total_bytes is None
    record = next(p for p in facts.probes if p.name == "facts.bounds")
    assert record.status is ProbeStatus.ERROR
    assert record.error == "impossible readings left null: memory.total_bytes=-1"
    fast, validated = _both_texts(facts)
    assert fast == validated


def test_text_that_was_not_utf8_prints_as_valid_unicode() -> None:
    """A hostname or environment value with bytes that were not UTF-8 (read with
    surrogateescape) becomes U+FFFD on both paths, never a broken document."""
    facts = plain.Facts(host=plain.Host(hostname="box\udcff", os="Linux \u00e9t\u00e9"))
    fast, validated = _both_texts(facts)
    assert fast == validated
    fast.encode("utf-8")  # no lone surrogate left
    host = json.loads(fast)["host"]
    assert host["hostname"] == "box\ufffd" and host["os"] == "Linux \u00e9t\u00e9"


def test_the_probe_cleans_its_text_in_place_for_the_terminal_view() -> None:
    from hwadvisor.models.plain import clean_text

    facts = plain.Facts(
        host=plain.Host(hostname="box\udcff"), cpu=plain.Cpu(flags=["avx2", "x\udcfe"])
    )
    clean_text(facts)
    assert facts.host.hostname == "box\ufffd" and facts.cpu.flags == ["avx2", "x\ufffd"]


def test_numbers_that_cannot_take_their_type_are_left_null() -> None:
    cpu = plain.Cpu(sockets=3.7, logical_cores=4.0, base_mhz=10**400)  # type: ignore[arg-type]
    dropped = plain_null_impossible(cpu)
    assert dropped == ["sockets=3.7", f"base_mhz={10**400!r}"[:120]]
    assert (cpu.sockets, cpu.logical_cores, cpu.base_mhz) == (None, 4.0, None)
    assert to_json_value(cpu)["logical_cores"] == 4  # type: ignore[index]


@pytest.mark.parametrize(
    ("annotation", "field", "why"),
    [
        ("list[float]", "None", "a list of numbers"),
        ("int | None", "Field(None, multiple_of=2)", "constraint"),
        ("int", "Field(1, ge=0)", "cannot be null"),
        ("dict[str, int]", "None", "no plain form for type"),
    ],
)
def test_the_generator_refuses_what_the_plain_classes_cannot_carry(
    annotation: str, field: str, why: str
) -> None:
    """A field the plain classes would print or bound differently stops the generator."""
    from pydantic import BaseModel, Field

    from hwadvisor.models import plain_gen

    namespace: dict[str, Any] = {"BaseModel": BaseModel, "Field": Field}
    exec(f"class Probe(BaseModel):\n    x: {annotation} = {field}\n", namespace)
    with pytest.raises(TypeError, match=why):
        plain_gen._class_source(namespace["Probe"])


@pytest.mark.parametrize("host", HOSTS, ids=lambda p: p.name)
def test_the_terminal_view_is_the_same_from_either(
    host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` on a terminal renders the plain dataclasses; the panels match the models'."""
    from hwadvisor.render.check import render_facts

    rec = json.loads((DATA / "nvml" / "rtx4090.json").read_text(encoding="utf-8"))
    log = ProbeLog()
    gpus = nvidia.probe_in_process(FakeNvml(rec), log)
    facts = probe_plain(Seams.recorded(host))
    facts.gpus = gpus
    render_facts(facts)
    from_plain = capsys.readouterr().out
    render_facts(checked.Facts.model_validate(to_json_value(facts)))
    assert capsys.readouterr().out == from_plain
    assert "CPU" in from_plain and "GPU 0" in from_plain
