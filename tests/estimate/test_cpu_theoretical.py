"""This machine's CPU without a bench: times and tokens/s from the theoretical peak and the
stated memory bandwidth, for every recorded machine; unknown only without the cores."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hwadvisor.estimate import build_workload, estimate_workload
from hwadvisor.estimate.timing.cpu import here_model
from hwadvisor.estimate.timing.cpu_memory import (
    PER_CORE_DRAW,
    CpuClass,
    cpu_class,
    stated_memory_bandwidth,
)
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Precision

FACTS = sorted((Path(__file__).parent.parent / "data" / "facts").glob("*.json"))


def _facts(path: Path) -> Facts:
    """A recorded facts file with its bench figures taken out (a machine never benched)."""
    raw = json.loads(path.read_text())
    raw["bench"] = None
    return Facts.model_validate(raw)


def _no_cores(facts: Facts) -> Facts:
    cpu = dataclasses.replace(
        facts.cpu,
        usable_cores=None,
        physical_cores=None,
        logical_cores=None,
        affinity_cores=None,
        peak_gflops=dataclasses.replace(facts.cpu.peak_gflops, fp32=None, bf16=None, int8=None),
    )
    return dataclasses.replace(facts, cpu=cpu)


@pytest.fixture(scope="module")
def serving() -> object:
    return build_workload(model="llama-3-8b", task="serve")


@pytest.mark.parametrize("path", FACTS, ids=[p.stem for p in FACTS])
def test_every_recorded_machine_gets_cnn_training_times(path: Path) -> None:
    wl = build_workload(model="resnet50", batch_size=8, dataset_size=10_000, precision="fp32")
    here = estimate_workload(wl, facts=_facts(path), bench=None, on=["here"]).estimates[0]
    assert here.step_time_s is not None and here.step_time_s > 0
    assert here.total_time_s is not None and here.total_time_s > here.step_time_s
    assert here.basis.startswith("theoretical")
    assert here.time_band_s is not None
    assert here.time_band_s.band_class == "cpu_theoretical" and here.time_band_s.validated
    # the theoretical band is wider than the measured one on both sides
    low, high = here.time_band_s.low, here.time_band_s.high
    assert low < here.step_time_s * 0.75 and high > here.step_time_s * 1.5


@pytest.mark.parametrize("path", FACTS, ids=[p.stem for p in FACTS])
def test_every_recorded_machine_gets_llm_tokens_per_second(path: Path, serving: object) -> None:
    here = estimate_workload(serving, facts=_facts(path), bench=None, on=["here"]).estimates[0]  # type: ignore[arg-type]
    assert here.serving is not None
    decode = here.serving.decode_tokens_per_s
    assert decode is not None and decode > 0
    assert here.throughput_band is not None
    assert here.throughput_band.band_class == "cpu_theoretical"
    # decode on a CPU is bound by its bandwidth: the 8B model's bytes at the stated rate
    found = stated_memory_bandwidth(_facts(path))
    assert found is not None
    assert decode < found.bytes_s / 4e9  # at least 4 GB of weights read per token


def test_unknown_cores_give_unknown(serving: object) -> None:
    facts = _no_cores(_facts(FACTS[0]))
    wl = build_workload(model="resnet50", batch_size=8, dataset_size=10_000, precision="fp32")
    train = estimate_workload(wl, facts=facts, bench=None, on=["here"]).estimates[0]
    assert train.step_time_s is None and train.time_band_s is None
    serve = estimate_workload(serving, facts=facts, bench=None, on=["here"]).estimates[0]  # type: ignore[arg-type]
    assert serve.serving is None or serve.serving.decode_tokens_per_s is None


def test_cores_without_a_clock_still_give_times() -> None:
    facts = _facts(FACTS[0])
    peak = dataclasses.replace(facts.cpu.peak_gflops, fp32=None, bf16=None, int8=None)
    facts = dataclasses.replace(facts, cpu=dataclasses.replace(facts.cpu, peak_gflops=peak))
    rates = here_model(facts, None, Precision.FP32)
    assert rates.known and any("no theoretical peak" in n for n in rates.assumptions)


def test_bandwidth_sources() -> None:
    by_name = {p.stem: _facts(p) for p in FACTS}
    server = stated_memory_bandwidth(by_name["cpu-server-amx"])
    assert server is not None and server.how == "catalog" and "xeon-8480" in server.text
    # 8 cores of a 56-core socket draw less than the socket delivers
    assert server.bytes_s == pytest.approx(8 * PER_CORE_DRAW)
    laptop = stated_memory_bandwidth(by_name["laptop"])
    assert laptop is not None and laptop.how == "class default"
    assert laptop.cpu_class is CpuClass.LAPTOP
    assert laptop.wire_bytes_s == pytest.approx(2 * 8 * 1600e6)  # Broadwell: DDR3-1600
    apple = stated_memory_bandwidth(by_name["apple-m2"])
    assert apple is not None and apple.how == "catalog" and "apple-m2" in apple.text
    board = stated_memory_bandwidth(by_name["arm-edge"])
    assert board is not None and board.cpu_class is CpuClass.ARM_BOARD
    assert board.wire_bytes_s == pytest.approx(4 * 3200e6)
    assert cpu_class(by_name["t4-cloud"]) is CpuClass.SERVER  # "AMD EPYC" in a KVM guest
    assert stated_memory_bandwidth(_no_cores(by_name["laptop"])) is None


def test_laptop_serves_llama_on_its_cpu_in_the_cli() -> None:
    from typer.testing import CliRunner

    from hwadvisor.cli import app

    path = next(p for p in FACTS if p.stem == "laptop")
    args = ["recommend", "-s", "inference", "-m", "llama-3-8b", "--facts", str(path),
            "--no-bench", "--json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    here = doc["estimates"]["here"]
    assert here["serving"]["decode_tokens_per_s"] > 0
    assert here["throughput_band"]["band_class"] == "cpu_theoretical"
