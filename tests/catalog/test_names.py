"""Names as people type them: spellings, aliases, family defaults, prefixes, suggestions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from hwadvisor.catalog import find_device, load_devices, load_models
from hwadvisor.catalog.loader import load_families as families
from hwadvisor.catalog.loader import lookup_device, lookup_model, spelled_model
from hwadvisor.catalog.names import name_key, resolve, suggestions
from hwadvisor.errors import CatalogError

Cli = Callable[..., Any]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("h100-sxm", "h100-sxm"),
        ("H100-SXM", "h100-sxm"),
        ("nvidia h100 sxm", "h100-sxm"),
        ("NVIDIA H100 SXM5", "h100-sxm"),  # an alias
        ("GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("RTX_4090", "rtx-4090"),
        ("rtx 4090", "rtx-4090"),
        ("4090", "rtx-4090"),
        ("3090", "rtx-3090"),
        ("5090", "rtx-5090"),
        ("a6000", "rtx-a6000"),
        ("NVIDIA A10G", "a10g"),
        ("a10", "a10"),
        ("Tesla T4", "t4"),
        ("A100-SXM4-80GB", "a100-80gb"),  # as nvidia-smi names it
        ("a100 40gb", "a100-40gb"),
        ("AMD Instinct MI300X", "mi300x"),
        ("Apple M2 Ultra", "apple-m2-ultra"),
        ("m2 ultra", "apple-m2-ultra"),
        ("M2", "apple-m2"),
        ("apple-m4-max", "apple-m4-max"),
        ("l40", "l40"),
        ("L40S", "l40s"),
    ],
)
def test_spellings_resolve_without_a_note(typed: str, expected: str) -> None:
    found = lookup_device(typed)
    assert found.entry.id == expected
    assert found.note is None  # a spelling is not an assumption


@pytest.mark.parametrize(
    ("family", "default", "others"),
    [
        ("h100", "h100-sxm", ["h100-pcie", "h100-nvl"]),
        ("H100", "h100-sxm", ["h100-pcie", "h100-nvl"]),
        ("a100", "a100-80gb", ["a100-40gb"]),
        ("v100", "v100-16gb", ["v100-32gb"]),
    ],
)
def test_family_names_take_the_default_and_say_so(
    family: str, default: str, others: list[str]
) -> None:
    found = lookup_device(family)
    assert found.entry.id == default
    assert found.note is not None
    assert found.note.startswith(f"'{family}' taken as {default} ({found.entry.name})")
    assert f"say {' or '.join(others)} for the other" in found.note


def test_a_unique_prefix_matches_with_a_note() -> None:
    found = lookup_device("mi250")
    assert found.entry.id == "mi250x" and found.note and "'mi250' taken as mi250x" in found.note
    assert lookup_device("rtx-409").entry.id == "rtx-4090"
    assert lookup_device("apple-m3-ul").entry.id == "apple-m3-ultra"
    assert lookup_model("resnet5").entry.id == "resnet50"
    assert lookup_model("mixtral").entry.id == "mixtral-8x7b"


def test_ambiguous_or_too_short_prefixes_are_refused_with_the_candidates() -> None:
    with pytest.raises(CatalogError) as err:
        lookup_model("llama-2")
    assert "did you mean llama-2-7b or llama-2-13b or llama-2-70b?" in err.value.message
    with pytest.raises(CatalogError):
        lookup_device("h1")  # two letters stand for nothing
    with pytest.raises(CatalogError, match="did you mean rtx-3090 or rtx-4090 or rtx-pro-6000"):
        lookup_device("rtx")  # four parts begin so: none is chosen


@pytest.mark.parametrize(
    ("typed", "first", "family_prefix"),
    [
        ("b100", "b300", "b"),  # not h200: another family
        ("a10x", "a10", "a10"),
        ("rtx-5080", "rtx-5090", "rtx-"),
        ("5080", "rtx-5090", "rtx-5090"),
        ("h100-80gb", "h100-sxm", "h100-"),  # a known family: its members only
        ("a100-120gb", "a100-80gb", "a100-"),
        ("m4-ultra", "apple-m3-ultra", "apple-"),
        ("h300", "h200", "h"),
    ],
)
def test_device_suggestions_come_from_the_same_family(
    typed: str, first: str, family_prefix: str
) -> None:
    hits = suggestions(typed, load_devices(), families("devices"))
    assert hits and hits[0] == first
    assert all(h.startswith(family_prefix) for h in hits), hits


@pytest.mark.parametrize(
    ("typed", "first", "family_prefix"),
    [
        ("resnet18", "resnet50", "resnet"),
        ("llama-3-405b", "llama-3-70b", "llama-"),
        ("bert-bse", "bert-base", "bert-"),
        ("qwen2.5-8b", "qwen2.5-7b", "qwen"),
    ],
)
def test_model_suggestions_come_from_the_same_family(
    typed: str, first: str, family_prefix: str
) -> None:
    hits = suggestions(typed, load_models(), families("models"))
    assert hits and hits[0] == first
    assert all(h.startswith(family_prefix) for h in hits), hits


def test_nothing_alike_gets_no_suggestion() -> None:
    with pytest.raises(CatalogError) as err:
        find_device("nowhere")
    assert err.value.message == "unknown device 'nowhere'; see `hwadvisor catalog devices`"
    assert suggestions("tpu-v5e", load_devices(), families("devices")) == []


def test_name_key_drops_case_separators_and_vendor_words() -> None:
    assert name_key("NVIDIA GeForce RTX_4090") == name_key("rtx-4090") == "rtx4090"
    assert name_key("Qwen2.5 7B") == name_key("qwen2.5-7b")
    assert name_key("AMD Instinct MI300X") == "mi300x"
    assert name_key("   ") == ""


def test_every_family_names_existing_parts_and_collides_with_nothing() -> None:
    devices = load_devices()
    spelled: dict[str, str] = {}
    for entry in devices.values():
        for name in (entry.id, *entry.aliases):
            key = name_key(name)
            assert key not in spelled or spelled[key] == entry.id, (name, spelled.get(key))
            spelled[key] = entry.id
    fams = families("devices")
    assert {f.family for f in fams} >= {"h100", "a100", "v100"}
    for fam in fams:
        assert fam.default in fam.members and set(fam.members) <= set(devices), fam.family
        assert name_key(fam.family) not in spelled, f"family {fam.family} shadows an id or alias"
        assert fam.source.strip() and fam.date and fam.reason.strip()
    for fam in families("models"):
        assert fam.default in fam.members and set(fam.members) <= set(load_models())


def test_every_alias_target_resolves_to_its_entry() -> None:
    for entries in (load_devices(), load_models()):
        for entry in entries.values():
            for alias in entry.aliases:
                found = resolve(alias, entries)
                assert found is not None and found.entry.id == entry.id and found.note is None


def test_a_user_catalog_may_add_aliases(tmp_path: Path) -> None:
    mine = load_devices()["t4"].model_dump(mode="json")
    mine.update(id="my-npu", name="My NPU", aliases=["npu1"])
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"devices": [mine]}))
    assert lookup_device("NPU1", [path]).entry.id == "my-npu"


def test_paths_and_hub_ids_are_not_taken_for_catalog_prefixes() -> None:
    assert spelled_model("./mistral") is None
    assert spelled_model("mistral") is None  # a prefix only: the caller may try a folder
    assert spelled_model("mistralai/Mistral-7B-v0.1") is None
    found = spelled_model("Llama-3-8B")
    assert found is not None and found.entry.id == "llama-3-8b"


def test_estimate_on_a_family_states_the_default(cli: Cli) -> None:
    code, out, err = cli(
        "estimate", "--model", "resnet50", "--on", "h100", "--on", "4090", "--no-bench", "--json"
    )
    assert code == 0, err
    h100, rtx = json.loads(out)["estimates"]
    assert h100["device"] == "h100-sxm" and rtx["device"] == "rtx-4090"
    note = h100["assumptions"][0]
    assert note.startswith("'h100' taken as h100-sxm (NVIDIA H100 SXM 80GB)")
    assert "say h100-pcie or h100-nvl for the others" in note
    assert not any("taken as" in a for a in rtx["assumptions"])  # 4090 is a spelling


def test_estimate_on_an_unknown_part_is_one_line_exit_2(cli: Cli) -> None:
    code, out, err = cli("estimate", "--model", "resnet50", "--on", "b400", "--no-bench")
    assert code == 2 and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    # (--on also takes instance types, so the line may say "device or instance type")
    assert len(lines) == 1 and "'b400' (did you mean b300 or b200?)" in lines[0]
    code, _, err = cli("estimate", "--model", "resnet18", "--no-bench")
    assert code == 2 and "unknown model 'resnet18' (did you mean resnet50?)" in err


def test_a_model_named_by_its_prefix_is_stated_in_the_workload(cli: Cli) -> None:
    code, out, err = cli("estimate", "--model", "resnet5", "--on", "t4", "--no-bench", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["workload"]["model"] == "resnet50"
    assert doc["workload"]["assumptions"][0].startswith("'resnet5' taken as resnet50")
    code, out, _ = cli("estimate", "--model", "resnet50", "--on", "t4", "--no-bench", "--json")
    assert not any("taken as" in a for a in json.loads(out)["workload"]["assumptions"])
