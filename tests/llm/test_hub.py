"""Hub ids: the local cache first, HF_HUB_OFFLINE honoured, one line on failure. No network:
the online tests run against the fake Hub of :mod:`tests.llm.fake_hub` on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.llm import resolve_model
from hwadvisor.llm.hub import find_in_cache, is_hub_id, locate

from .conftest import LLAMA3_8B, write_config
from .fake_hub import CONFIGS, TOKEN, FakeHub, safetensors_head, serve

REPO = "meta-llama/Meta-Llama-3-8B"


def _cache(root: Path, repo: str = REPO, revision: str = "abc123") -> Path:
    base = root / ("models--" + repo.replace("/", "--"))
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(revision)
    write_config(base / "snapshots" / revision, LLAMA3_8B)
    return root


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def test_cached_hub_id_resolves_offline(hub_cache: Path) -> None:
    _cache(hub_cache)
    resolved = resolve_model(REPO)
    assert resolved.origin == "hub" and resolved.arch.params_total == 8_030_261_248
    assert find_in_cache(REPO, "config.json", hub_cache) is not None


def test_offline_without_cache_says_how_to_fix(hub_cache: Path) -> None:
    with pytest.raises(UsageError) as err:
        locate(REPO)
    line = err.value.line()
    assert "HF_HUB_OFFLINE" in line and f"download {REPO} config.json" in line
    assert "local folder" in line and "\n" not in line


def test_paths_and_ids_are_told_apart(tmp_path: Path) -> None:
    assert is_hub_id("Qwen/Qwen2.5-7B") and not is_hub_id("llama-3-8b")
    folder = write_config(tmp_path / "org" / "name", LLAMA3_8B)
    assert locate(str(folder)).config == folder / "config.json"
    with pytest.raises(UsageError, match="neither a local path"):
        locate("not a model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"no config\.json"):
        locate(str(tmp_path / "empty"))


def test_catalog_ids_win_over_paths() -> None:
    assert resolve_model("llama-3-8b").origin == "catalog"


# -- online, against the fake Hub -------------------------------------------------------

GIB = 1024**3


def _gpt_oss_20b_shards() -> dict[str, dict[str, tuple[str, list[int]]]]:
    """gpt-oss-20b's tensors as its checkpoint lays them out (MXFP4 expert blocks and
    scales as U8, the rest bf16), over three shards as on the Hub."""
    h, e, v = 2880, 32, 201088
    shards: dict[str, dict[str, tuple[str, list[int]]]] = {
        f"model-0000{i}-of-00002.safetensors": {} for i in range(3)
    }
    names = list(shards)
    shards[names[0]]["model.embed_tokens.weight"] = ("BF16", [v, h])
    shards[names[2]]["lm_head.weight"] = ("BF16", [v, h])
    shards[names[2]]["model.norm.weight"] = ("BF16", [h])
    for i in range(24):
        t = shards[names[i // 12]]
        p = f"model.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            t[p + norm + ".weight"] = ("BF16", [h])
        for proj, out in (("q_proj", 4096), ("k_proj", 512), ("v_proj", 512)):
            t[p + f"self_attn.{proj}.weight"] = ("BF16", [out, h])
            t[p + f"self_attn.{proj}.bias"] = ("BF16", [out])
        t[p + "self_attn.o_proj.weight"] = ("BF16", [h, 4096])
        t[p + "self_attn.o_proj.bias"] = ("BF16", [h])
        t[p + "self_attn.sinks"] = ("BF16", [64])
        t[p + "mlp.router.weight"] = ("BF16", [e, h])
        t[p + "mlp.router.bias"] = ("BF16", [e])
        for proj, out in (("gate_up_proj", 2 * h), ("down_proj", h)):
            t[p + f"mlp.experts.{proj}_blocks"] = ("U8", [e, out, 90, 16])
            t[p + f"mlp.experts.{proj}_scales"] = ("U8", [e, out, 90])
            t[p + f"mlp.experts.{proj}_bias"] = ("BF16", [e, out])
    return shards


def _gpt_oss_hub(hub: FakeHub, repo: str = "openai/gpt-oss-20b") -> int:
    """Serve gpt-oss-20b: its config, index and shard headers; the bytes they state."""
    hub.add_config(repo, json.loads((CONFIGS / "openai--gpt-oss-20b.json").read_text()))
    weight_map, total = {}, 0
    for name, tensors in _gpt_oss_20b_shards().items():
        head, size = safetensors_head(tensors)
        hub.add_file(repo, name, head, size)
        total += size - len(head)
        weight_map.update(dict.fromkeys(tensors, name))
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    hub.add_file(repo, "model.safetensors.index.json", json.dumps(index).encode())
    return total


@pytest.fixture
def online(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake Hub at HF_ENDPOINT, empty caches, no token, not offline."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path / "own"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with serve(FakeHub()) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        yield hub


def test_a_hub_id_round_trips_reading_headers_only(
    online: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _gpt_oss_hub(online)
    resolved = resolve_model("openai/gpt-oss-20b")
    assert resolved.origin == "hub" and resolved.weights is not None
    assert resolved.arch.params_total == pytest.approx(20.91e9, rel=0.005)  # model card
    assert resolved.weights.total_bytes == data
    assert resolved.weights.total_bytes / GIB == pytest.approx(12.8, rel=0.01)  # model card
    assert resolved.weights.files == 3
    for shard in _gpt_oss_20b_shards():  # range reads of the first bytes, never the data
        ranges = online.ranges(shard)
        assert ranges and all(r is not None and r.startswith("bytes=0-") for r in ranges)
    # Asked again, and then offline: the caches answer, the Hub is not asked.
    seen = len(online.requests)
    assert resolve_model("openai/gpt-oss-20b").weights == resolved.weights
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = resolve_model("openai/gpt-oss-20b")
    assert again.weights == resolved.weights and len(online.requests) == seen


def test_a_gated_repository_says_how_to_get_access_then_works_with_a_token(
    online: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    online.add_config("meta-llama/Llama-3.1-8B-Instruct")
    online.gated.add("meta-llama/Llama-3.1-8B-Instruct")
    with pytest.raises(UsageError) as err:
        locate("meta-llama/Llama-3.1-8B-Instruct")
    line = err.value.line()
    assert "gated" in line and "HTTP 401" in line and "HF_TOKEN" in line and "\n" not in line
    assert err.value.exit_code == 2
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    arch = resolve_model("meta-llama/Llama-3.1-8B-Instruct").arch
    assert arch.max_context == 131072 and arch.params_total == 8_030_261_248


def test_an_unknown_repository_is_a_404_line(online: FakeHub) -> None:
    with pytest.raises(UsageError, match="HTTP 404") as err:
        locate("nobody/no-such-model")
    assert "\n" not in err.value.line()


def test_offline_is_told_at_once_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(UsageError) as err:
        locate("Qwen/Qwen3-8B")
    line = err.value.line()
    assert "cannot reach the Hugging Face Hub" in line and "HF_HUB_OFFLINE=1" in line
    assert "\n" not in line and line.endswith("catalog id")


def test_hf_hub_offline_asks_nothing(online: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    online.add_config("Qwen/Qwen3-8B")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UsageError, match="HF_HUB_OFFLINE is set"):
        locate("Qwen/Qwen3-8B")
    assert online.requests == []


def test_a_single_file_repository_and_a_cached_config(online: FakeHub) -> None:
    online.add_config("Qwen/Qwen3-8B")
    head, size = safetensors_head({"model.embed_tokens.weight": ("BF16", [151936, 4096])})
    online.add_file("Qwen/Qwen3-8B", "model.safetensors", head, size)
    resolved = resolve_model("Qwen/Qwen3-8B")
    assert resolved.weights is not None and resolved.weights.total_bytes == 151936 * 4096 * 2
    assert resolved.arch.params_total == pytest.approx(8.19e9, rel=0.005)  # Qwen3-8B card: 8.2 B


def test_a_gguf_file_of_a_repository_is_read_by_its_header(online: FakeHub, tmp_path: Path) -> None:
    from .test_weights import _gguf

    data = _gguf(tmp_path / "tiny.gguf").read_bytes()
    online.add_file("someone/tiny-GGUF", "tiny-Q8_0.gguf", data, len(data) + 10**9)
    resolved = resolve_model("someone/tiny-GGUF/tiny-Q8_0.gguf")
    assert resolved.origin == "hub" and resolved.arch.layers == 2 and resolved.arch.kv_heads == 2
    assert resolved.weights is not None and resolved.weights.bytes_by_dtype["Q8_0"] == 4352
    assert all(r is not None for r in online.ranges("tiny-Q8_0.gguf"))
