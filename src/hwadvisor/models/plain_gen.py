"""Writes :mod:`hwadvisor.models.facts_plain`: the facts models as plain dataclasses.

The pydantic models in :mod:`hwadvisor.models.facts` stay the one definition of the
facts document. This module derives from them, field for field and in the same order,
dataclasses that the probe can fill without importing pydantic. They are a transfer form
that lives for one probe run, so they are not frozen: frozen, the twelve classes took
about 10 ms more to define, of a start-up budget of 250 ms. ``scripts/gen_facts_plain.py``
writes the file; a test fails when it drifts from the models.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Union

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from hwadvisor import __version__
from hwadvisor.models.plain import SCHEMA_VERSION, ProbeStatus, utc_now

#: Fields of the facts document the probe never fills: typed ``object`` in the plain
#: classes, so that their models stay out of them.
OPAQUE = {("Facts", "bench")}

#: Defaults written as a name rather than a literal, so that a release bump needs no
#: regeneration.
NAMED_DEFAULTS = {__version__: "__version__", SCHEMA_VERSION: "SCHEMA_VERSION"}

HEADER = '''"""The facts document as plain dataclasses, for the probe (generated: do not edit).

Written by ``scripts/gen_facts_plain.py`` from the pydantic models in
:mod:`hwadvisor.models.facts`, field for field and in the same order; a test fails when
the two differ. See :mod:`hwadvisor.models.plain` for why the probe needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hwadvisor import __version__
from hwadvisor.models.plain import SCHEMA_VERSION, ProbeStatus, utc_now

__all__ = [
{names}
]
'''


def _non_none(tp: Any) -> list[Any]:
    if typing.get_origin(tp) in (Union, types.UnionType):
        return [a for a in typing.get_args(tp) if a is not type(None)]
    return [] if tp is type(None) else [tp]


def _models_in(tp: Any) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    for arg in _non_none(tp):
        if typing.get_origin(arg) is list:
            found += _models_in(typing.get_args(arg)[0])
        elif isinstance(arg, type) and issubclass(arg, BaseModel):
            found.append(arg)
    return found


def facts_models() -> list[type[BaseModel]]:
    """The models the facts document is made of, each after the models it contains."""
    from hwadvisor.models.facts import Facts

    order: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in order:
            return
        for name, info in model.model_fields.items():
            if (model.__name__, name) not in OPAQUE:
                for inner in _models_in(info.annotation):
                    visit(inner)
        order.append(model)

    visit(Facts)
    return order


def _type_source(tp: Any, model: str, name: str) -> str:
    if (model, name) in OPAQUE:
        return "object | None"
    if tp is type(None):
        return "None"
    if typing.get_origin(tp) in (Union, types.UnionType):
        return " | ".join(_type_source(a, model, name) for a in typing.get_args(tp))
    if typing.get_origin(tp) is list:
        return f"list[{_type_source(typing.get_args(tp)[0], model, name)}]"
    if tp is ProbeStatus or (isinstance(tp, type) and issubclass(tp, BaseModel)):
        return tp.__name__
    if tp in (str, int, float, bool):
        return tp.__name__
    raise TypeError(f"{model}.{name}: no plain form for type {tp!r}")


def _default_source(model: str, name: str, info: Any) -> str | None:
    """The right-hand side of the field, or None for a required field."""
    factory = info.default_factory
    if factory is not None:
        if factory is list:
            return "field(default_factory=list)"
        if factory is utc_now:
            return "field(default_factory=utc_now)"
        if isinstance(factory, type) and issubclass(factory, BaseModel):
            return f"field(default_factory={factory.__name__})"
        raise TypeError(f"{model}.{name}: no plain form for default factory {factory!r}")
    if info.default is PydanticUndefined:
        return None
    if isinstance(info.default, str) and info.default in NAMED_DEFAULTS:
        return NAMED_DEFAULTS[info.default]
    if isinstance(info.default, str):
        return json.dumps(info.default)
    if info.default is None or isinstance(info.default, (bool, int, float)):
        return repr(info.default)
    raise TypeError(f"{model}.{name}: no plain form for default {info.default!r}")


def _coerced(tp: Any, model: str, name: str) -> str | None:
    kinds = _non_none(tp)
    if kinds in ([float], [int]):
        return str(kinds[0].__name__)
    for kind in kinds:
        if typing.get_origin(kind) is list and typing.get_args(kind)[0] in (int, float):
            # to_json_value coerces single numbers only; a list would print 45 for 45.0.
            raise TypeError(f"{model}.{name}: no plain form for a list of numbers")
    return None


def _bounds(model: str, name: str, info: Any) -> list[tuple[str, float]]:
    """The field's numeric constraints as ``(op, limit)`` pairs; ``("finite", 1)`` for
    a float that may not be NaN or infinite."""
    out: list[tuple[str, float]] = []
    for item in info.metadata:
        kind = type(item).__name__
        if kind in ("Ge", "Gt", "Le", "Lt"):
            out.append((kind.lower(), getattr(item, kind.lower())))
        elif kind == "AllowInfNan" and item.allow_inf_nan is False:
            out.append(("finite", 1))
        else:
            # Anything else would let the plain classes accept what the models refuse.
            raise TypeError(f"{model}.{name}: no plain form for constraint {item!r}")
    if out and type(None) not in typing.get_args(info.annotation):
        # A reading out of its bounds is left null, so only a nullable field may have them.
        raise TypeError(f"{model}.{name}: bounds on a field that cannot be null")
    return out


def _class_source(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or model.__name__).strip().split("\n\n")[0]
    doc = " ".join(doc.split())
    lines = ["@dataclass(slots=True, kw_only=True)", f"class {model.__name__}:"]
    lines.append(f'    """{doc}"""')
    lines.append("")
    coerce = {
        name: kind
        for name, info in model.model_fields.items()
        if (kind := _coerced(info.annotation, model.__name__, name)) is not None
    }
    if coerce:
        lines.append("    _coerce: ClassVar[dict[str, type]] = {")
        lines += [f'        "{n}": {k},' for n, k in coerce.items()]
        lines.append("    }")
    else:
        lines.append("    _coerce: ClassVar[dict[str, type]] = {}")
    bounds = {
        name: found
        for name, info in model.model_fields.items()
        if (found := _bounds(model.__name__, name, info))
    }
    if bounds:
        lines.append("    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {")
        for n, pairs in bounds.items():
            inner = ", ".join(f'("{op}", {limit!r})' for op, limit in pairs)
            lines.append(f'        "{n}": ({inner}{"," if len(pairs) == 1 else ""}),')
        lines.append("    }")
    else:
        lines.append("    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}")
    lines.append("")
    for name, info in model.model_fields.items():
        if info.description:
            lines.append(f"    #: {' '.join(info.description.split())}")
        annotation = _type_source(info.annotation, model.__name__, name)
        default = _default_source(model.__name__, name, info)
        lines.append(f"    {name}: {annotation}" + ("" if default is None else f" = {default}"))
    return "\n".join(lines)


def render() -> str:
    """The source text of ``facts_plain.py`` for the current models."""
    models = facts_models()
    names = "\n".join(f'    "{m.__name__}",' for m in sorted(models, key=lambda m: m.__name__))
    parts = [HEADER.format(names=names).rstrip("\n")]
    parts += [_class_source(m) for m in models]
    return "\n\n\n".join(parts) + "\n"
