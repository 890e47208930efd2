"""Hub ids: the local cache first, HF_HUB_OFFLINE honoured, one line on failure. No network."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.llm import resolve_model
from hwadvisor.llm.hub import find_in_cache, hub_config, is_hub_id, locate

from .conftest import LLAMA3_8B, write_config

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


def test_online_uses_the_downloader_seam_when_not_cached(
    hub_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    fetched = write_config(tmp_path / "fetched", LLAMA3_8B) / "config.json"
    calls: list[tuple[str, str]] = []

    def download(repo: str, name: str) -> Path:
        calls.append((repo, name))
        return fetched

    assert hub_config(REPO, download) == fetched
    assert calls == [(REPO, "config.json")]


def test_a_failed_download_is_one_line(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def download(repo: str, name: str) -> Path:
        raise OSError("401 Client Error: gated repo\nmore detail")

    with pytest.raises(UsageError, match="401 Client Error") as err:
        hub_config(REPO, download)
    assert "\n" not in err.value.line()


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
