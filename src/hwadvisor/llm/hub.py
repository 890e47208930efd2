"""Finding a model's files: a local folder, a GGUF file, or a Hub id (cached or online).

A Hub id (``org/name``, or ``org/name/file.gguf`` for one GGUF file of a repository) is
looked up in the Hugging Face cache first (``huggingface_hub``'s ``try_to_load_from_cache``
when installed, else the documented layout ``models--org--name/snapshots/<revision>/``
under ``HF_HUB_CACHE``, ``HF_HOME/hub`` or ``~/.cache/huggingface/hub``). Without a cached
copy, and unless ``HF_HUB_OFFLINE`` is set, :mod:`hwadvisor.llm.hub_remote` asks the Hub
once (short timeout, no retries), downloads ``config.json`` into that cache and sizes the
weights from their headers only. What the headers say is kept in hwadvisor's own cache
(``$HWADVISOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/hwadvisor``, else
``~/.cache/hwadvisor``; ``off`` keeps nothing), under ``hub/``, by repository and revision.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from hwadvisor.errors import UsageError
from hwadvisor.io import atomic_write_text
from hwadvisor.llm._data import has_module, optional_module
from hwadvisor.llm.gguf_header import GgufHeader, file_reader, read_header
from hwadvisor.llm.weights import WeightFiles

_NAME = r"[A-Za-z0-9][\w.\-]{0,95}"
_HUB_ID = re.compile(rf"^({_NAME}/{_NAME})(/[\w.\-/]{{1,200}}\.gguf)?$")
_TRUE = {"1", "on", "yes", "true"}


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are: its config, and its weights when they are known."""

    name: str
    config: Path | None
    gguf: Path | None = None
    folder: Path | None = None
    hub_id: str | None = None
    #: Weights sized on the Hub from their headers (None: read the folder, or unknown).
    weights: WeightFiles | None = None
    #: A GGUF header read from the Hub (the file itself is not here).
    gguf_header: GgufHeader | None = None


def split_hub_id(spec: str) -> tuple[str, str | None]:
    """``org/name`` and the GGUF file named after it (None for a whole repository)."""
    match = _HUB_ID.match(spec)
    if not match:
        raise UsageError(f"'{spec[:120]}' is not a Hugging Face id (org/name)")
    gguf = match.group(2)
    return match.group(1), gguf[1:] if gguf else None


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


def _fix(repo_id: str, filename: str = "config.json") -> str:
    return (
        f"download it once with `hf download {repo_id} {filename}` "
        f"(older clients: `huggingface-cli download {repo_id} {filename}`) or pass a local folder"
    )


def own_cache() -> Path | None:
    """hwadvisor's cache folder (None: ``HWADVISOR_CACHE_DIR=off``)."""
    raw = os.environ.get("HWADVISOR_CACHE_DIR")
    if raw is not None:
        return None if raw.strip().lower() in ("", "off", "0", "no") else Path(raw)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "hwadvisor" if xdg else Path.home() / ".cache" / "hwadvisor"


def _summary_path(repo_id: str, revision: str) -> Path | None:
    root = own_cache()
    if root is None or not re.fullmatch(r"[0-9a-f]{7,64}", revision):
        return None
    return root / "hub" / f"{repo_id.replace('/', '--')}--{revision}.json"


def _remembered(repo_id: str, revision: str) -> WeightFiles | None:
    path = _summary_path(repo_id, revision)
    try:
        if path is None or not path.is_file() or path.stat().st_size > 1 << 20:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return WeightFiles(**data)
    except (OSError, ValueError, TypeError):
        return None  # an unreadable cache entry is asked for again


def _remember(repo_id: str, revision: str, weights: WeightFiles) -> None:
    path = _summary_path(repo_id, revision)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(dataclasses.asdict(weights)))
    except Exception:  # a cache that cannot be written is no reason to fail
        return


def _revision(config: Path) -> str:
    """The snapshot (commit) a cached file belongs to."""
    return config.parent.name if config.parent.parent.name == "snapshots" else ""


def hub_config(repo_id: str) -> tuple[Path, bool]:
    """The local path of ``repo_id``'s config.json (cached, else fetched unless offline),
    and whether the Hub answered this time."""
    found = _cached(repo_id, "config.json")
    if found is not None:
        return found, False
    if offline():
        raise UsageError(
            f"model '{repo_id}' is not in the Hugging Face cache and HF_HUB_OFFLINE is set: {_fix(repo_id)}"
        )
    from hwadvisor.llm import hub_remote

    hub_remote.probe(repo_id, "config.json")
    return hub_remote.download(repo_id, "config.json", cache_dir()), True


def hub_weights(repo_id: str, config: Path, online: bool) -> WeightFiles | None:
    """The weights of ``repo_id`` from their headers: remembered, else read on the Hub.

    Offline, or when a cached config's Hub does not answer, the weights stay unknown (the
    config still sizes them); once the Hub has answered, its errors are one line.
    """
    revision = _revision(config)
    known = _remembered(repo_id, revision)
    if known is not None or offline():
        return known
    from hwadvisor.llm import hub_remote

    try:
        weights = hub_remote.safetensors_weights(repo_id, cache_dir())
    except UsageError:
        if online:
            raise
        return None
    if weights is not None:
        _remember(repo_id, revision, weights)
    return weights


def _gguf_cache(repo_id: str, filename: str) -> Path | None:
    root = own_cache()
    if root is None:
        return None
    return root / "hub" / "gguf" / repo_id.replace("/", "--") / filename.replace("/", "--")


def hub_gguf(repo_id: str, filename: str) -> ModelFiles:
    """One GGUF file of a Hub repository: the local copy in the Hugging Face cache, else
    its header read on the Hub (and kept, header only, in hwadvisor's cache)."""
    spec = f"{repo_id}/{filename}"
    local = _cached(repo_id, filename)
    if local is not None:
        return ModelFiles(name=Path(filename).stem, config=None, gguf=local, hub_id=spec)
    kept = _gguf_cache(repo_id, filename)
    from hwadvisor.llm.weights import gguf_weights

    if kept is not None and kept.is_file():
        try:
            head = read_header(file_reader(kept), spec)
            weights = gguf_weights(head, f"hub:{spec}")
            return ModelFiles(
                Path(filename).stem, None, hub_id=spec, weights=weights, gguf_header=head
            )
        except UsageError:
            pass  # a damaged copy is read again from the Hub
    if offline():
        raise UsageError(
            f"'{spec}' is not in the Hugging Face cache and HF_HUB_OFFLINE is set: {_fix(repo_id, filename)}"
        )
    from hwadvisor.llm import hub_remote

    hub_remote.probe(repo_id, filename)
    head, weights = hub_remote.gguf_header(repo_id, filename)
    if kept is not None:
        _keep_header(repo_id, filename, kept, head.header_bytes)
    return ModelFiles(Path(filename).stem, None, hub_id=spec, weights=weights, gguf_header=head)


def _keep_header(repo_id: str, filename: str, path: Path, length: int) -> None:
    """Keep the header's bytes (read again from the Hub: the reader did not keep them)."""
    from hwadvisor.llm import hub_remote

    try:
        data = hub_remote.range_reader(repo_id, filename)(0, length)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except Exception:  # a cache that cannot be written is no reason to fail
        return


def locate(spec: str) -> ModelFiles:
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
        repo_id, gguf = split_hub_id(spec)
        if gguf is not None:
            return hub_gguf(repo_id, gguf)
        config, online = hub_config(repo_id)
        weights = hub_weights(repo_id, config, online)
        folder = config.parent if weights is None else None
        return ModelFiles(spec, config, folder=folder, hub_id=spec, weights=weights)
    raise UsageError(
        f"model '{spec[:120]}' is neither a local path nor a Hugging Face id (org/name)"
    )
