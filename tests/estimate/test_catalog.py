"""The catalogs: every entry valid and sourced, user files merged by id, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.catalog import did_you_mean, find_device, find_model, load_devices, load_models
from hwadvisor.errors import CatalogError

REQUIRED_DEVICES = {
    "t4",
    "l4",
    "a10",
    "v100-16gb",
    "v100-32gb",
    "a100-40gb",
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "l40s",
    "rtx-3090",
    "rtx-4090",
    "mi300x",
    "apple-m2",
    "xeon-8480",
    "epyc-9654",
    "xeon-6248",
    "epyc-7763",
}
REQUIRED_MODELS = {"resnet50", "bert-base", "yolov5n", "gpt2", "llama-7b"}


def test_required_entries_present() -> None:
    assert set(load_devices()) >= REQUIRED_DEVICES
    assert set(load_models()) >= REQUIRED_MODELS
    cpus = [d for d in load_devices().values() if d.kind.value == "cpu"]
    assert any("laptop" in d.id for d in cpus)


@pytest.mark.parametrize("entry", list(load_devices().values()), ids=lambda e: e.id)
def test_every_device_is_sourced_and_sane(entry) -> None:  # type: ignore[no-untyped-def]
    assert entry.source.strip() and entry.date
    assert entry.achieved.source.strip()
    assert entry.peaks_tflops.fp32 and entry.peaks_tflops.fp32 > 0
    # Tensor peaks are never below the fp32 peak where both exist.
    for other in (entry.peaks_tflops.bf16, entry.peaks_tflops.fp16):
        assert other is None or other >= entry.peaks_tflops.fp32
    assert entry.memory_bytes > 1e9 and entry.bandwidth_gb_s > 10


def test_unsupported_dtypes_are_absent() -> None:
    devices = load_devices()
    assert devices["t4"].peaks_tflops.bf16 is None and devices["t4"].peaks_tflops.tf32 is None
    assert devices["v100-16gb"].peaks_tflops.bf16 is None
    assert devices["epyc-7763"].peaks_tflops.bf16 is None  # Zen 3: no native bf16
    assert (
        devices["xeon-8480"].peaks_tflops.bf16 and devices["xeon-8480"].peaks_tflops.bf16 > 10 * 7.2
    )


@pytest.mark.parametrize("entry", list(load_models().values()), ids=lambda e: e.id)
def test_every_model_is_sourced(entry) -> None:  # type: ignore[no-untyped-def]
    assert entry.source.strip() and entry.date and entry.activation_depends_on.strip()
    assert entry.input_shape or entry.seq_len


def test_model_flops_are_real_flops_not_macs() -> None:
    models = load_models()
    # ResNet-50 ~8.2 G real FLOPs (torchvision's 4.1 G count MACs); BERT-base
    # 24·s·h²·L + 4·s²·h·L (the forward third of Narayanan et al., arXiv:2104.04473).
    assert 7.8e9 < models["resnet50"].flops_per_sample < 8.6e9
    s, h, layers = 128, 768, 12
    assert models["bert-base"].flops_per_sample == pytest.approx(
        24 * s * h * h * layers + 4 * s * s * h * layers, rel=0.01
    )
    gpt2 = models["gpt2"]
    assert gpt2.flops_per_sample == pytest.approx(2 * gpt2.params * 1024, rel=0.01)


def test_user_catalog_merges_by_id(tmp_path: Path) -> None:
    user = tmp_path / "mine.yaml"
    t4 = load_devices()["t4"].model_dump(mode="json")
    t4["memory_bytes"] = 32_000_000_000
    new = dict(t4, id="my-gpu", name="My GPU")
    user.write_text(__import__("yaml").safe_dump({"devices": [t4, new]}))
    merged = load_devices([user])
    assert merged["t4"].memory_bytes == 32_000_000_000
    assert merged["my-gpu"].name == "My GPU"
    assert merged["a100-80gb"] == load_devices()["a100-80gb"]
    # The shipped catalog itself is unchanged for other callers.
    assert load_devices()["t4"].memory_bytes == 16_000_000_000


def test_user_catalog_typo_names_entry_and_field(tmp_path: Path) -> None:
    user = tmp_path / "bad.yaml"
    user.write_text(
        "models:\n  - id: tiny\n    name: Tiny\n    kind: cnn\n    params: 10\n    flopz: 3\n"
    )
    with pytest.raises(CatalogError) as err:
        load_models([user])
    assert "tiny" in err.value.message and str(user) == err.value.where


@pytest.mark.parametrize("text", ["devices: [\n", "devices: 3\n", "- 1\n- 2\n"])
def test_malformed_catalog_is_one_catalog_error(tmp_path: Path, text: str) -> None:
    user = tmp_path / "bad.yaml"
    user.write_text(text)
    with pytest.raises(CatalogError):
        load_devices([user])


def test_missing_catalog_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not found"):
        load_devices([tmp_path / "nope.yaml"])


def test_did_you_mean() -> None:
    assert "a100-80gb" in did_you_mean("a100-80", load_devices())
    assert did_you_mean("zzzzzz", load_devices()) == ""
    # A family name resolves (tests/catalog/test_names.py); a part of it that is not in
    # the catalog gets the family's members.
    assert find_device("h100").id == "h100-sxm"
    with pytest.raises(CatalogError, match="did you mean h100"):
        find_device("h100-sxm6")
    with pytest.raises(CatalogError, match="did you mean bert-base"):
        find_model("bert-bse")
