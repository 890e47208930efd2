"""Finding a model's files: a local folder, a GGUF file, or a Hub id in the local cache.

A Hub id (``org/name``) is looked up in the Hugging Face cache first (``huggingface_hub``'s
``try_to_load_from_cache`` when installed, else the documented cache layout
``models--org--name/snapshots/<revision>/`` under ``HF_HUB_CACHE``, ``HF_HOME/hub`` or
``~/.cache/huggingface/hub``). Only when the cache lacks it and ``HF_HUB_OFFLINE`` is not
set is ``config.json`` downloaded (``hf_hub_download``); offline, the error says how to fix it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hwadvisor.errors import UsageError
from hwadvisor.llm._data import has_module, optional_module

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}/[A-Za-z0-9][\w.\-]{0,95}$")
_TRUE = {"1", "on", "yes", "true"}

#: Fetches one file of a Hub repository and returns its local path (the network seam).
Downloader = Callable[[str, str], Path]


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are: its config, and its weights when they are here."""

    name: str
    config: Path | None
    gguf: Path | None = None
    folder: Path | None = None
    hub_id: str | None = None


def is_hub_id(spec: str) -> bool:
    """True when ``spec`` reads as ``org/name`` and is not an existing path."""
    return bool(_HUB_ID.match(spec)) and not Path(spec).exists()


def offline() -> bool:
    """True when HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) asks for no network."""
    return any(
        os.environ.get(k, "").strip().lower() in _TRUE
        for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def cache_dir() -> Path:
    """The Hugging Face hub cache folder this environment uses."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface"
    )
    return Path(home).expanduser() / "hub"


def find_in_cache(repo_id: str, filename: str, cache: Path | None = None) -> Path | None:
    """``filename`` of ``repo_id`` in the cache's snapshot of ``refs/main``, or None."""
    base = (cache or cache_dir()) / ("models--" + repo_id.replace("/", "--"))
    ref = base / "refs" / "main"
    try:
        revisions = [ref.read_text(encoding="utf-8").strip()] if ref.is_file() else []
        snapshots = base / "snapshots"
        if snapshots.is_dir():
            revisions += sorted(p.name for p in snapshots.iterdir() if p.name not in revisions)
    except OSError:
        return None
    for rev in revisions:
        candidate = base / "snapshots" / rev / filename
        if candidate.is_file():
            return candidate
    return None


def _cached(repo_id: str, filename: str) -> Path | None:
    if has_module("huggingface_hub"):
        hub = optional_module("huggingface_hub")
        found = hub.try_to_load_from_cache(repo_id, filename, cache_dir=str(cache_dir()))
        return Path(found) if isinstance(found, str) else None
    return find_in_cache(repo_id, filename)


def _download(repo_id: str, filename: str) -> Path:
    hub = optional_module("huggingface_hub")
    return Path(hub.hf_hub_download(repo_id, filename, cache_dir=str(cache_dir())))


def _fix(repo_id: str) -> str:
    return (
        f"download it once with `hf download {repo_id} config.json` "
        f"(older clients: `huggingface-cli download {repo_id} config.json`) or pass a local folder"
    )


def hub_config(repo_id: str, download: Downloader | None = None) -> Path:
    """The local path of ``repo_id``'s config.json: cached, else fetched unless offline."""
    found = _cached(repo_id, "config.json")
    if found is not None:
        return found
    if offline():
        raise UsageError(
            f"model '{repo_id}' is not in the Hugging Face cache and HF_HUB_OFFLINE is set: {_fix(repo_id)}"
        )
    try:
        return (download or _download)(repo_id, "config.json")
    except UsageError:
        raise
    except Exception as exc:  # network, gated repository, unknown id: one line
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"cannot fetch config.json of '{repo_id}' ({reason[:160]}): {_fix(repo_id)}"
        ) from exc


def locate(spec: str, download: Downloader | None = None) -> ModelFiles:
    """Where the model ``spec`` (folder, config.json, .gguf file or Hub id) has its files."""
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return ModelFiles(name=path.stem, config=None, gguf=path, folder=path.parent)
    if path.is_file():
        return ModelFiles(name=path.parent.name, config=path, folder=path.parent)
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if ggufs:
                return ModelFiles(name=path.name, config=None, gguf=ggufs[0], folder=path)
            raise UsageError("folder has no config.json (nor a .gguf file)", where=str(path))
        return ModelFiles(name=path.name, config=config, folder=path)
    if is_hub_id(spec):
        config = hub_config(spec, download)
        return ModelFiles(name=spec, config=config, folder=config.parent, hub_id=spec)
    raise UsageError(f"model '{spec}' is neither a local path nor a Hugging Face id (org/name)")
