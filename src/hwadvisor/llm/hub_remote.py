"""The Hugging Face Hub over the network: one probe, config.json, and headers only.

Through ``huggingface_hub`` (its shared HTTP client, ``hf_hub_download`` and
``HfApi.parse_safetensors_file_metadata``), at ``HF_ENDPOINT`` with ``HF_TOKEN``:

1. One HEAD request for ``config.json`` (or the named GGUF file), with a short timeout and
   no retry, says at once whether the Hub is reachable and the repository readable: no
   answer is "offline" in one line; 401/403 says how to get access; 404 that it is absent.
2. ``config.json`` (and ``model.safetensors.index.json``) are downloaded into the Hugging
   Face cache, as ``hf download`` would.
3. The weights are sized from their headers only, as hf-mem does: each safetensors shard's
   first bytes (HTTP range requests), or a GGUF file's header; never the weights.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm._data import optional_module
from hwadvisor.llm.gguf_header import GgufHeader, Reader, read_header
from hwadvisor.llm.weights import (
    INDEX_NAME,
    WeightFiles,
    gguf_weights,
    header_summary,
    index_total,
    shard_names,
)

#: Seconds the first request waits for the Hub before calling the network down.
PROBE_TIMEOUT_S = 5.0
#: Seconds each later request (a download, a header) may take.
REQUEST_TIMEOUT_S = 20.0
#: Shards whose headers are read one by one; beyond this the index's total_size serves.
MAX_SHARD_HEADERS = 256
SINGLE_NAME = "model.safetensors"


def endpoint() -> str:
    """The Hub's address: ``HF_ENDPOINT``, else https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or None


def _headers() -> dict[str, str]:
    utils = optional_module("huggingface_hub.utils")
    headers: dict[str, str] = utils.build_hf_headers(token=_token())
    return headers


def file_url(repo_id: str, filename: str) -> str:
    """The download address of one file on ``main``."""
    return f"{endpoint()}/{repo_id}/resolve/main/{filename}"


def access_line(repo_id: str, status: int) -> str:
    """What to do about a 401/403: accept the terms, then a token with read access."""
    has = "HF_TOKEN is set but has no access" if _token() else "HF_TOKEN is not set"
    return (
        f"model '{repo_id}' is gated or private (HTTP {status}; {has}): accept its terms at "
        f"{endpoint()}/{repo_id}, then set HF_TOKEN to a read token from "
        f"https://huggingface.co/settings/tokens (or run `hf auth login`)"
    )


def probe(repo_id: str, filename: str) -> int | None:
    """One HEAD for ``filename`` (short timeout, no retry): its size when the Hub says.

    Unreachable: "offline" in one line; 401/403: how to get access; 404: absent.
    """
    hub = _hub()
    try:
        response = hub.get_session().head(
            file_url(repo_id, filename),
            headers=_headers(),
            timeout=PROBE_TIMEOUT_S,
            follow_redirects=True,
        )
    except Exception as exc:  # connection refused, DNS, timeout: the network is down
        raise UsageError(offline_line(repo_id, _reason(exc))) from exc
    status = response.status_code
    if status in (401, 403):
        raise UsageError(access_line(repo_id, status))
    if status == 404:
        raise UsageError(
            f"model '{repo_id}' has no {filename} on {endpoint()} (HTTP 404): check the id "
            "(org/name, as on its Hub page) and the file name"
        )
    if status >= 400:
        raise UsageError(f"the Hub answered HTTP {status} for {repo_id}/{filename}")
    size = response.headers.get("x-linked-size") or response.headers.get("content-length")
    return int(size) if size and str(size).isdigit() and len(str(size)) < 18 else None


def offline_line(repo_id: str, reason: str) -> str:
    """The one line for a Hub that does not answer."""
    return (
        f"cannot reach the Hugging Face Hub at {endpoint()} for '{repo_id}' ({reason}): "
        "offline? set HF_HUB_OFFLINE=1 and use a cached model, a local folder or a catalog id"
    )


def _reason(exc: BaseException) -> str:
    """The first line of an error, whole words only (never cut mid-word)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(text) <= 120:
        return text
    return text[:120].rsplit(" ", 1)[0].rstrip(",;:") + " ..."


def _hub() -> Any:
    """``huggingface_hub``, told that the network may be used: it reads HF_HUB_OFFLINE
    once, at import, and this process decides at each call (:func:`hub.offline`)."""
    hub = optional_module("huggingface_hub")
    hub.constants.HF_HUB_OFFLINE = False
    return hub


def download(repo_id: str, filename: str, cache: Path) -> Path:
    """``filename`` of ``repo_id`` into the Hugging Face cache (after a good probe)."""
    hub = _hub()
    try:
        return Path(
            hub.hf_hub_download(
                repo_id,
                filename,
                cache_dir=str(cache),
                endpoint=endpoint(),
                token=_token(),
                etag_timeout=PROBE_TIMEOUT_S,
            )
        )
    except Exception as exc:  # anything the probe did not foresee: one line
        raise UsageError(f"cannot fetch {filename} of '{repo_id}' ({_reason(exc)})") from exc


def _shard_header(api: Any, repo_id: str, filename: str) -> dict[str, Any]:
    """One shard's safetensors header (range reads of its first bytes)."""
    try:
        meta = api.parse_safetensors_file_metadata(repo_id, filename, timeout=REQUEST_TIMEOUT_S)
    except Exception as exc:
        raise UsageError(
            f"cannot read the safetensors header of {repo_id}/{filename} ({_reason(exc)})"
        ) from exc
    return {
        name: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
        for name, t in meta.tensors.items()
    }


def safetensors_weights(repo_id: str, cache: Path) -> WeightFiles | None:
    """The weights of a safetensors repository from the shard headers (or the index's
    total_size when it has more shards than :data:`MAX_SHARD_HEADERS`); None when the
    repository has neither ``model.safetensors`` nor an index."""
    hub = _hub()
    api = hub.HfApi(endpoint=endpoint(), token=_token())
    where = f"{repo_id}/{SINGLE_NAME}"
    if _exists(repo_id, SINGLE_NAME):
        by, elements, _ = header_summary(_shard_header(api, repo_id, SINGLE_NAME), where)
        return WeightFiles(sum(by.values()), by, elements, 1, f"hub:{where}")
    if not _exists(repo_id, INDEX_NAME):
        return None
    where = f"{repo_id}/{INDEX_NAME}"
    from hwadvisor.llm.weights import read_index

    index = read_index(download(repo_id, INDEX_NAME, cache))
    shards = shard_names(index, where)
    if len(shards) > MAX_SHARD_HEADERS:
        total = index_total(index, where)
        return WeightFiles(total, {}, None, len(shards), f"hub:{where}") if total else None
    total_by: dict[str, int] = {}
    elements = 0
    for shard in shards:
        by, count, _ = header_summary(_shard_header(api, repo_id, shard), f"{repo_id}/{shard}")
        for dtype, size in by.items():
            total_by[dtype] = total_by.get(dtype, 0) + size
        elements += count
    return WeightFiles(sum(total_by.values()), total_by, elements, len(shards), f"hub:{where}")


def _exists(repo_id: str, filename: str) -> bool:
    """Whether ``filename`` is in the repository (one HEAD; 404 is False)."""
    try:
        probe(repo_id, filename)
    except UsageError as exc:
        if "HTTP 404" in exc.message:
            return False
        raise
    return True


def range_reader(repo_id: str, filename: str) -> Reader:
    """Reads byte ranges of one file on the Hub (HTTP Range requests, redirects followed),
    never more than asked even from a server that ignores the range."""
    hub = _hub()
    url = file_url(repo_id, filename)

    def read(offset: int, length: int) -> bytes:
        headers = {**_headers(), "Range": f"bytes={offset}-{offset + length - 1}"}
        chunks: list[bytes] = []
        got = 0
        try:
            with hub.get_session().stream(
                "GET", url, headers=headers, timeout=REQUEST_TIMEOUT_S, follow_redirects=True
            ) as response:
                if response.status_code in (401, 403):
                    raise UsageError(access_line(repo_id, response.status_code))
                if response.status_code == 416:
                    return b""  # past the end
                if response.status_code >= 400:
                    raise UsageError(f"the Hub answered HTTP {response.status_code} for {url}")
                skip = offset if response.status_code == 200 else 0  # range ignored
                for chunk in response.iter_bytes():
                    if skip:
                        cut = min(skip, len(chunk))
                        chunk, skip = chunk[cut:], skip - cut
                    chunks.append(chunk)
                    got += len(chunk)
                    if got >= length:
                        break
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(f"cannot read {repo_id}/{filename} ({_reason(exc)})") from exc
        return b"".join(chunks)[:length]

    return read


def gguf_header(repo_id: str, filename: str) -> tuple[GgufHeader, WeightFiles]:
    """A GGUF file's header on the Hub, and the weights its tensor table states."""
    where = f"{repo_id}/{filename}"
    head = read_header(range_reader(repo_id, filename), where)
    return head, gguf_weights(head, f"hub:{where}")
