"""Software versions from metadata and torch/version.py, and the build/driver issues."""

from __future__ import annotations

import dataclasses
import json
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.models.facts import Gpu, TorchInfo
from hwadvisor.probe import nvidia
from hwadvisor.probe.nvml_fake import FakeNvml
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams, SystemInfo
from hwadvisor.probe.software import (
    compatibility_issues,
    find_torch,
    parse_version_py,
    present_names,
    probe_software,
)

NVML_DIR = Path(__file__).parents[1] / "data" / "nvml"


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _fake_torch(site: Path, version: str, cuda: str | None, hip: str | None = None) -> None:
    _dist(site, "torch", version)
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n"
        f"__version__ = {version!r}\n"
        "debug = False\n"
        f"cuda: Optional[str] = {cuda!r}\n"
        f"hip: Optional[str] = {hip!r}\n"
    )


def _recorded_gpus(name: str) -> list[Gpu]:
    rec = json.loads((NVML_DIR / f"{name}.json").read_text())
    return nvidia.probe_in_process(FakeNvml(rec), ProbeLog())


def _seams(site: Path) -> Seams:
    return Seams(system=SystemInfo(env={}, python="3.11.9"), site_paths=(str(site),))


def test_torch_cu124_found_in_a_fake_site_folder(tmp_path: Path) -> None:
    _fake_torch(tmp_path, "2.4.0+cu124", "12.4")
    _dist(tmp_path, "nvidia-cudnn-cu12", "9.1.0.70")
    _dist(tmp_path, "onnxruntime-gpu", "1.18.1")
    sw = probe_software(_seams(tmp_path), ProbeLog(), [])
    assert sw.torch == TorchInfo(version="2.4.0+cu124", cuda="12.4", hip=None, cudnn="9.1.0.70")
    assert (sw.python, sw.onnxruntime, sw.openvino, sw.tensorflow) == (
        "3.11.9",
        "1.18.1",
        None,
        None,
    )


def test_torch_newer_than_the_t4_driver_is_an_issue(tmp_path: Path) -> None:
    _fake_torch(tmp_path, "2.4.0+cu124", "12.4")
    sw = probe_software(_seams(tmp_path), ProbeLog(), _recorded_gpus("t4_old_driver"))
    # A fact, not advice: which wheel to install is the rules' to say (HW401).
    assert sw.issues == [
        "torch 2.4.0+cu124 is built for CUDA 12.4 but the driver (460.32.03) supports CUDA up to 11.2"
    ]


def test_torch_within_the_driver_is_fine_and_said_once_for_eight_gpus(tmp_path: Path) -> None:
    _fake_torch(tmp_path, "2.4.0+cu124", "12.4")
    assert (
        probe_software(_seams(tmp_path), ProbeLog(), _recorded_gpus("h100_sxm_8x_nvlink")).issues
        == []
    )
    gpus = [
        dataclasses.replace(g, cuda_driver_version="12.2")
        for g in _recorded_gpus("h100_sxm_8x_nvlink")
    ]
    issues = compatibility_issues(TorchInfo(version="2.4.0", cuda="12.4"), gpus)
    assert len(issues) == 1 and "supports CUDA up to 12.2" in issues[0]
    assert "cu121" not in issues[0] and "install" not in issues[0]  # the rules advise


def test_cpu_torch_beside_nvidia_gpus(tmp_path: Path) -> None:
    _fake_torch(tmp_path, "2.13.0+cpu", None)
    issues = probe_software(_seams(tmp_path), ProbeLog(), _recorded_gpus("rtx4090")).issues
    assert len(issues) == 1 and "CPU-only build but 1 NVIDIA GPU" in issues[0]


def test_rocm_torch_without_amd_and_amd_without_rocm_torch() -> None:
    rocm = TorchInfo(version="2.4.0+rocm6.1", hip="6.1.40091")
    assert "no AMD GPU" in compatibility_issues(rocm, [])[0]
    amd = [Gpu(index=0, vendor="amd", compute_capability="gfx942")]
    assert "not a ROCm build" in compatibility_issues(TorchInfo(version="2.4.0+cpu"), amd)[0]
    assert compatibility_issues(rocm, amd) == []


def test_no_torch_is_null_with_a_reason(tmp_path: Path) -> None:
    log = ProbeLog()
    sw = probe_software(_seams(tmp_path), log, _recorded_gpus("rtx4090"))
    assert sw.torch is None and sw.issues == []
    assert "torch not installed" in (log.records[0].error or "")


def test_this_machine_torch_matches_its_metadata() -> None:
    try:
        installed = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pytest.skip("torch is not installed here")
    torch = probe_software(Seams(), ProbeLog(), []).torch
    assert torch is not None and torch.version == installed


def test_version_py_is_parsed_never_run() -> None:
    text = "cuda = __import__('os').system('touch /tmp/pwned')\nhip: Optional[str] = None\n__version__ = '2.4.0'\n"
    assert parse_version_py(text) == {"hip": None, "__version__": "2.4.0"}
    assert find_torch(()) is None


@given(st.text())
def test_version_py_parser_never_raises(text: str) -> None:
    assert isinstance(parse_version_py(text), dict)


def test_present_names_reads_metadata_folder_names(tmp_path: Path) -> None:
    for entry in (
        "zope.interface-6.0.dist-info",
        "Tensorflow_CPU-2.16.1.dist-info",
        "oldpkg-1.0-py3.11.egg-info",
        "torch",
    ):
        (tmp_path / entry).mkdir()
    assert present_names([str(tmp_path), str(tmp_path / "missing")]) == {
        "zope_interface",
        "tensorflow_cpu",
        "oldpkg",
    }
    site = tmp_path / "site"
    _dist(site, "tensorflow-cpu", "2.16.1")
    assert probe_software(_seams(site), ProbeLog(), []).tensorflow == "2.16.1"
