"""The fact namespace rules may read: every dotted path, its type, and where it comes from.

Most paths are generated from the documents' classes (``cpu.*``, ``memory.*``,
``host.*``, ``software.*`` from :class:`~hwadvisor.models.facts.Facts`; ``workload.*``
from :class:`~hwadvisor.models.workload.Workload`; ``estimate.here.*`` and the other
slots from :class:`~hwadvisor.models.estimate.DeviceEstimate`), so a renamed field
breaks the rules at load time, not silently at run time. The *derived* paths
(aggregates over the GPU list, benchmark figures, ratios, the options and the verdict)
come from the registries of :mod:`hwadvisor.engine.derived`, where each is computed.
"""

from __future__ import annotations

import difflib
import types
import typing
from enum import Enum
from functools import lru_cache

from hwadvisor.engine.derive import FactSpec, FactType
from hwadvisor.engine.derived import (
    BENCH_DEVICES,
    BENCH_DTYPES,
    BENCH_KERNELS,
    ESTIMATE_SLOTS,
    LOCAL_PREFIX,
    REGISTRIES,
    SLOT,
)
from hwadvisor.engine.derived.estimates import SLOT_EXCLUDED
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Workload

__all__ = [
    "BENCH_DEVICES",
    "BENCH_DTYPES",
    "BENCH_KERNELS",
    "ESTIMATE_SLOTS",
    "LOCAL_PREFIX",
    "VERSION_FIELDS",
    "FactSpec",
    "FactType",
    "lookup",
    "registry",
    "suggest",
    "unknown_path_message",
]

#: Fact fields that hold versions (compared with version_* operators as well as ==).
VERSION_FIELDS = frozenset(
    {
        "software.torch.version",
        "software.torch.cuda",
        "software.torch.hip",
        "software.torch.cudnn",
        "software.python",
        "software.onnxruntime",
        "software.openvino",
        "software.tensorflow",
        "host.kernel",
        "host.python",
    }
)
#: Facts fields that are not facts about the machine (bookkeeping, or aggregated).
_SKIPPED = frozenset({"schema_version", "tool", "generated_at", "probes", "bench", "gpus"})
#: Workload fields that are not facts a rule reads.
_WORKLOAD_SKIPPED = frozenset({"profile", "assumptions", "memory_counts"})


def _unwrap(annotation: object) -> object:
    """``X | None`` and ``Annotated[X, ...]`` -> ``X``; other annotations unchanged."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    return annotation


def _is_document(ann: object) -> bool:
    """A nested document class (pydantic model or facts dataclass): it has fields."""
    return isinstance(ann, type) and isinstance(getattr(ann, "model_fields", None), dict)


def _leaf(path: str, ann: object, doc: str) -> FactSpec | None:
    """The spec of a field that holds a value, or None for a type no rule can compare."""
    if ann is bool:
        return FactSpec(path, FactType.BOOL, doc)
    if ann in (int, float):
        return FactSpec(path, FactType.NUMBER, doc)
    if isinstance(ann, type) and issubclass(ann, Enum):
        return FactSpec(path, FactType.STRING, doc, tuple(str(m.value) for m in ann))
    if ann is str:
        return FactSpec(path, FactType.VERSION if path in VERSION_FIELDS else FactType.STRING, doc)
    if typing.get_origin(ann) is list:
        return FactSpec(path, FactType.LIST, doc)
    return None


def _walk(
    model: type, prefix: str, out: dict[str, FactSpec], skip: frozenset[str] = frozenset()
) -> None:
    fields: dict[str, typing.Any] = getattr(model, "model_fields", {})
    for name, field in fields.items():
        if name in skip:
            continue
        path = f"{prefix}.{name}"
        ann = _unwrap(field.annotation)
        if _is_document(ann):
            _walk(typing.cast(type, ann), path, out)
        elif (spec := _leaf(path, ann, field.description or "")) is not None:
            out[path] = spec


def _add(out: dict[str, FactSpec], spec: FactSpec) -> None:
    if spec.path in out:
        raise ValueError(f"fact path {spec.path!r} is both a field and derived, or derived twice")
    out[spec.path] = spec


@lru_cache(maxsize=1)
def registry() -> dict[str, FactSpec]:
    """Every fact path a rule may name: the documents' fields, then the derived ones."""
    out: dict[str, FactSpec] = {}
    for section, field in Facts.model_fields.items():
        ann = _unwrap(field.annotation)
        if section not in _SKIPPED and _is_document(ann):
            _walk(typing.cast(type, ann), section, out)
    _walk(Workload, "workload", out, skip=_WORKLOAD_SKIPPED)
    for slot in ESTIMATE_SLOTS:
        _walk(DeviceEstimate, f"estimate.{slot}", out, skip=SLOT_EXCLUDED)
        for spec in SLOT.specs():
            _add(out, FactSpec(f"estimate.{slot}.{spec.path}", spec.type, spec.doc, derived=True))
    for reg in REGISTRIES:
        for spec in reg.specs():
            _add(out, spec)
    return out


def lookup(path: str) -> FactSpec | None:
    """The spec of ``path``, or None when no such fact exists."""
    return registry().get(path)


def suggest(path: str) -> str | None:
    """The closest known path to a misspelt one, for a 'did you mean' hint."""
    hits = difflib.get_close_matches(path, list(registry()), n=1, cutoff=0.6)
    return hits[0] if hits else None


def unknown_path_message(path: str) -> str:
    """'unknown fact path X (did you mean Y?)' in one line."""
    hint = suggest(path)
    return f"unknown fact path {path!r}" + (f" (did you mean {hint!r}?)" if hint else "")
