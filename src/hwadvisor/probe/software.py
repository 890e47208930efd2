"""The deep-learning software stack, read from package metadata without importing it.

``python -m torch.utils.collect_env`` imports torch (seconds); this reads what it needs
from files instead: the torch version from its distribution metadata
(``pip show torch``), its CUDA / HIP build from the text of ``torch/version.py``
(``cuda = '12.4'``, parsed, never executed), the cuDNN version from the
``nvidia-cudnn-cu*`` wheel when pip installed one, and the versions of ONNX Runtime,
OpenVINO and TensorFlow. It then states, as facts, the builds that cannot work with the
GPUs found: torch built for a newer CUDA than the driver runs, a CPU-only torch beside
NVIDIA GPUs, a ROCm torch without an AMD GPU. What to do about them (which wheel to
install) is the rules' to say (HW401, HW403), from the CUDA wheel tags of the catalog.

The search path is ``seams.site_paths`` (``sys.path`` on a real machine), so a test can
point it at a folder holding a fake torch install.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hwadvisor.models.facts import Gpu, Software, TorchInfo
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams

PROBE = "software"
_ONNXRUNTIME = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-rocm",
)
_TENSORFLOW = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-macos", "tf-nightly")
_CUDNN = ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11")
_ASSIGN_RE = re.compile(r"^(\w+)\s*(?::[^=]+)?=\s*(.+?)\s*$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def present_names(paths: Sequence[str]) -> set[str]:
    """Normalised names of the distributions whose metadata folders lie on ``paths``.

    One directory listing per path: asking ``importlib.metadata`` for each of a dozen
    names would scan every path a dozen times (about 10 ms here, on a 250 ms budget).
    """
    names: set[str] = set()
    for path in paths:
        try:
            entries = os.listdir(path or ".")
        except OSError:
            continue  # a zip or a missing folder holds no installed distributions
        for entry in entries:
            stem, dot, suffix = entry.rpartition(".")
            if dot and suffix in ("dist-info", "egg-info"):
                names.add(_norm(stem.split("-", 1)[0]))
    return names


class _Dist:
    """An installed distribution read straight from its metadata folder.

    ``importlib.metadata`` costs about 25 ms to import on a small machine, a tenth of
    ``check``'s budget; the two things needed here (the version, and a file beside the
    package) are one header line and one path away.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.version = self._read_version()

    def _read_version(self) -> str | None:
        for meta in ("METADATA", "PKG-INFO"):
            try:
                with open(self.folder / meta, encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip() or None
                        if not line.strip():
                            break  # the headers end at the first blank line
            except OSError:
                continue
        return None

    def locate_file(self, relative: str) -> Path:
        """Where ``relative`` lies in the installation this metadata folder belongs to."""
        return self.folder.parent / relative


def _distribution(name: str, paths: Sequence[str], present: set[str] | None = None) -> Any:
    """The first installed distribution called ``name`` on ``paths``, or None."""
    wanted = _norm(name)
    if present is not None and wanted not in present:
        return None
    for path in paths:
        try:
            entries = sorted(os.listdir(path or "."))
        except OSError:
            continue
        for entry in entries:
            stem, dot, suffix = entry.rpartition(".")
            if (
                dot
                and suffix in ("dist-info", "egg-info")
                and _norm(stem.split("-", 1)[0]) == wanted
            ):
                return _Dist(Path(path or ".") / entry)
    return None


def _version(
    names: Iterable[str], paths: Sequence[str], present: set[str] | None = None
) -> str | None:
    for name in names:
        dist = _distribution(name, paths, present)
        if dist is not None and dist.version:  # a metadata folder without METADATA has none
            return str(dist.version)
    return None


def parse_version_py(text: str) -> dict[str, Any]:
    """Top-level literal assignments of a ``version.py`` (``cuda = '12.4'``, ``hip = None``).

    Only literals are taken (``ast.literal_eval``); nothing in the file is executed.
    """
    values: dict[str, Any] = {}
    for line in text.splitlines():
        m = _ASSIGN_RE.match(line)
        if not m:
            continue
        try:
            values[m.group(1)] = ast.literal_eval(m.group(2))
        except (ValueError, SyntaxError):
            continue
    return values


def _torch_version_py(dist: Any) -> str | None:
    try:
        path = Path(str(dist.locate_file("torch/version.py")))
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def find_torch(paths: Sequence[str], present: set[str] | None = None) -> TorchInfo | None:
    """The installed torch build, read from metadata and ``torch/version.py``; None if absent."""
    dist = _distribution("torch", paths, present)
    if dist is None:
        return None
    text = _torch_version_py(dist)
    values = parse_version_py(text) if text else {}

    def text_or_none(key: str) -> str | None:
        value = values.get(key)
        return str(value) if value not in (None, "") else None

    return TorchInfo(
        version=text_or_none("__version__") or str(dist.version),
        cuda=text_or_none("cuda"),
        hip=text_or_none("hip"),
        cudnn=_version(_CUDNN, paths, present),
    )


def _major_minor(text: str | None) -> tuple[int, int] | None:
    m = re.match(r"^\s*(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def compatibility_issues(torch: TorchInfo | None, gpus: Sequence[Gpu]) -> list[str]:
    """Ways the torch build and the GPUs found cannot work together (one fact each)."""
    issues: list[str] = []
    nvidia = [g for g in gpus if g.vendor == "nvidia"]
    amd = [g for g in gpus if g.vendor == "amd"]
    if torch is None:
        return issues
    built = _major_minor(torch.cuda)
    if built is not None:
        for gpu in nvidia:
            drv = _major_minor(gpu.cuda_driver_version)
            if drv is None or drv >= built:
                continue
            issues.append(
                f"torch {torch.version} is built for CUDA {torch.cuda} but the driver "
                f"({gpu.driver_version}) supports CUDA up to {gpu.cuda_driver_version}"
            )
            break  # one driver serves every GPU of the machine: say it once
    elif nvidia and torch.hip is None:
        issues.append(
            f"torch {torch.version} is a CPU-only build but {len(nvidia)} NVIDIA GPU(s) are present"
        )
    if torch.hip is not None and not amd:
        issues.append(
            f"torch {torch.version} is a ROCm build (HIP {torch.hip}) but no AMD GPU was found"
        )
    if amd and torch.hip is None:
        issues.append(
            f"torch {torch.version} is not a ROCm build but {len(amd)} AMD GPU(s) are present"
        )
    return issues


def probe_software(seams: Seams, log: ProbeLog, gpus: list[Gpu]) -> Software:
    """Python, torch (version, CUDA, HIP, cuDNN), ONNX Runtime, OpenVINO, TensorFlow, issues."""
    result = Software(python=seams.system.python)
    with log.step(PROBE, source="package metadata, torch/version.py") as st:
        paths = seams.site_paths
        present = present_names(paths)
        torch = find_torch(paths, present)
        result = Software(
            python=seams.system.python,
            torch=torch,
            onnxruntime=_version(_ONNXRUNTIME, paths, present),
            openvino=_version(("openvino",), paths, present),
            tensorflow=_version(_TENSORFLOW, paths, present),
            issues=compatibility_issues(torch, gpus),
        )
        if torch is None:
            st.error = (
                "torch not installed (the microbenchmark needs it: pip install hwadvisor[bench])"
            )
    return result
