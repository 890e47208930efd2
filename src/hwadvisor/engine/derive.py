"""Derived facts: each one registered where it is computed, with its type and meaning.

A derived fact is a path rules may read that no document field holds: an aggregate over
the GPUs, a ratio of bench figures, an estimate in hours. Each is a function decorated
with its path, type and description on the :class:`Registry` of the input it is
computed from, as archspec registers its feature predicates. The namespace
(:mod:`hwadvisor.engine.paths`) and the context (:mod:`hwadvisor.engine.context`) read
the same registries, so a path cannot be declared without its computation, nor
computed without its declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

#: The evaluation context: dotted path -> value (``None``, or absent, is unknown).
Context = dict[str, Any]

S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Any])


class FactType(str, Enum):
    """What kind of value a path holds, which decides the operators it accepts."""

    BOOL = "bool"
    NUMBER = "number"
    STRING = "string"
    VERSION = "version"
    LIST = "list"


@dataclass(frozen=True)
class FactSpec:
    """One path of the namespace."""

    path: str
    type: FactType
    doc: str
    choices: tuple[str, ...] = ()
    derived: bool = False


@dataclass(frozen=True)
class _Entry(Generic[S]):
    specs: tuple[FactSpec, ...]
    compute: Callable[[S], Context]


class Registry(Generic[S]):
    """The derived facts computed from one kind of input (the facts, the GPUs, ...).

    ``relative`` registries declare paths below a prefix the caller gives (the
    estimate slots: ``total_time_h`` is ``estimate.here.total_time_h`` and
    ``estimate.best_gpu.total_time_h``).
    """

    def __init__(self, source: str, *, relative: bool = False) -> None:
        self.source = source
        self.relative = relative
        self._entries: list[_Entry[S]] = []
        self._paths: set[str] = set()

    def _add(self, entry: _Entry[S]) -> None:
        for spec in entry.specs:
            if spec.path in self._paths:
                raise ValueError(f"derived fact {spec.path!r} is registered twice")
            self._paths.add(spec.path)
        self._entries.append(entry)

    def fact(
        self, path: str, type_: FactType, doc: str, choices: Iterable[str] = ()
    ) -> Callable[[F], F]:
        """Register the decorated ``fn(source) -> value`` as the fact ``path``."""
        spec = FactSpec(path, type_, doc, tuple(choices), derived=True)

        def register(fn: F) -> F:
            self._add(_Entry((spec,), lambda source: {path: fn(source)}))
            return fn

        return register

    def family(self, specs: Iterable[FactSpec]) -> Callable[[F], F]:
        """Register ``fn(source) -> {path: value}`` computing a family of paths at once.

        For paths that come in a grid (every bench kernel and dtype); a path it returns
        that the family did not declare is a programming error, raised at once.
        """
        declared = tuple(specs)
        names = frozenset(s.path for s in declared)

        def register(fn: F) -> F:
            def compute(source: S) -> Context:
                out: Context = fn(source)
                stray = set(out) - names
                if stray:
                    raise RuntimeError(f"{fn.__name__} computed undeclared facts {sorted(stray)}")
                return out

            self._add(_Entry(declared, compute))
            return fn

        return register

    def specs(self) -> list[FactSpec]:
        """Every path this registry declares, in the order they were registered."""
        return [spec for entry in self._entries for spec in entry.specs]

    def compute(self, source: S, prefix: str = "") -> Context:
        """Every fact of this registry over ``source`` (``None``: unknown)."""
        out: Context = {}
        for entry in self._entries:
            out.update(entry.compute(source))
        if prefix:
            return {f"{prefix}.{path}": value for path, value in out.items()}
        return out


def flatten(data: Any, prefix: str, out: Context) -> None:
    """Nested dicts as dotted paths below ``prefix`` (lists and scalars are values)."""
    if isinstance(data, dict):
        for key, value in data.items():
            flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = data


def known(values: Iterable[Any]) -> list[Any]:
    """The values that are not ``None``."""
    return [v for v in values if v is not None]
