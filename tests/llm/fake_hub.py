"""A small Hugging Face Hub on 127.0.0.1: recorded configs, safetensors and GGUF headers.

It answers what ``huggingface_hub`` asks of ``/{org}/{name}/resolve/{revision}/{file}``
(HEAD with ``X-Repo-Commit``, ``ETag`` and the size; GET, with ``Range``), 401 for a gated
repository without the right token, 404 for what it lacks. Weight files are served as
their header followed by a declared size of data it never sends: every byte range asked
for is recorded, so a test can show that only headers were read.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CONFIGS = Path(__file__).parents[2] / "src" / "hwadvisor" / "catalog" / "data" / "llm_configs"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_test_token"


@dataclass
class Blob:
    """A served file: its first bytes, and the size it claims (data never sent)."""

    head: bytes
    size: int


@dataclass
class FakeHub:
    """Files by repository, gated repositories, and the requests seen."""

    repos: dict[str, dict[str, Blob]] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    url: str = ""

    def add_file(self, repo: str, name: str, data: bytes, size: int | None = None) -> None:
        self.repos.setdefault(repo, {})[name] = Blob(data, size or len(data))

    def add_config(self, repo: str, config: dict[str, Any] | None = None) -> None:
        cfg = config or json.loads((CONFIGS / f"{repo.replace('/', '--')}.json").read_text())
        self.add_file(repo, "config.json", json.dumps(cfg).encode())

    def ranges(self, name: str) -> list[str | None]:
        return [r for m, p, r in self.requests if m == "GET" and p.endswith("/" + name)]


def safetensors_head(tensors: dict[str, tuple[str, list[int]]]) -> tuple[bytes, int]:
    """A safetensors header for ``{name: (dtype, shape)}`` and the file's full size."""
    width = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "I8": 1, "F8_E4M3": 1}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = width[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, 8 + len(raw) + offset


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            return

        def _route(self) -> tuple[str, Blob] | None:
            m = re.match(r"^/([^/]+/[^/]+)/resolve/[^/]+/(.+)$", self.path.split("?")[0])
            if not m:
                self._fail(404, "EntryNotFound")
                return None
            repo, name = m.group(1), m.group(2)
            if repo not in hub.repos:
                self._fail(404, "RepoNotFound")
                return None
            if repo in hub.gated and self.headers.get("authorization") != f"Bearer {TOKEN}":
                self._fail(401, "GatedRepo")
                return None
            blob = hub.repos[repo].get(name)
            if blob is None:
                self._fail(404, "EntryNotFound")
                return None
            return name, blob

        def _fail(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _common(self, name: str, blob: Blob, length: int) -> None:
            etag = hashlib.sha256(name.encode() + blob.head).hexdigest()
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{etag}"')
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

        def do_HEAD(self) -> None:
            hub.requests.append(("HEAD", self.path, None))
            found = self._route()
            if found:
                self.send_response(200)
                self._common(found[0], found[1], found[1].size)

        def do_GET(self) -> None:
            rng = self.headers.get("range")
            hub.requests.append(("GET", self.path, rng))
            found = self._route()
            if not found:
                return
            name, blob = found
            start, end = 0, blob.size - 1
            m = re.match(r"bytes=(\d+)-(\d*)", rng or "")
            if m:
                start = int(m.group(1))
                end = min(int(m.group(2)) if m.group(2) else blob.size - 1, blob.size - 1)
            if start >= blob.size:
                self._fail(416, "RangeNotSatisfiable")
                return
            if end + 1 - start > 64 << 20:  # a whole weight file: refused, and recorded
                self._fail(500, "WholeWeightFileRequested")
                return
            body = blob.head[start : end + 1]
            body += b"\0" * (end + 1 - start - len(body))  # "data" past the header
            self.send_response(206 if m else 200)
            if m:
                self.send_header("Content-Range", f"bytes {start}-{end}/{blob.size}")
            self._common(name, blob, len(body))
            self.wfile.write(body)

    return Handler


@contextmanager
def serve(hub: FakeHub) -> Iterator[FakeHub]:
    """Serve ``hub`` on 127.0.0.1 (a free port) for the block's length."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
