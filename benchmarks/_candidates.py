"""Ways to define the facts document, each timed in a fresh process by ``startup.py --candidates``.

Each candidate imports what it needs, probes every recorded host
(``tests/data/hosts/*``) into its objects, checks them, and prints them as JSON; one run
prints the seconds of each phase as a JSON line. Run one with
``python -c "import sys; sys.path.insert(0, 'benchmarks'); import _candidates; _candidates.run('dataclasses')"``.

- ``dataclasses``: the one definition as shipped (frozen dataclasses, bounds as markers):
  the probe fills them, :func:`~hwadvisor.models.plain.settled` applies the bounds and
  :func:`~hwadvisor.models.plain.to_json_value` prints them, with no pydantic.
- ``dataclasses+adapter``: the same, then every document read back through the pydantic
  ``TypeAdapter`` of the same classes (what ``--facts FILE`` costs, first use included).
- ``pydantic``: the same fields as pydantic ``BaseModel`` classes, made at run time from
  the dataclasses' own annotations (so the very same definition; their schema is checked
  equal), imported and built only when used, validated and printed by pydantic.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

HOSTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "hosts"


def _models() -> dict[type, Any]:
    """Pydantic models with the fields of each facts dataclass, dataclass types swapped."""
    import dataclasses
    import functools
    import operator
    import typing

    from pydantic import ConfigDict, Field, create_model

    from hwadvisor.models import facts
    from hwadvisor.models.bench import BenchReport

    made: dict[type, Any] = {}
    config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False, defer_build=True)

    def swap(tp: Any) -> Any:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Annotated:
            return typing.Annotated[(swap(args[0]), *tp.__metadata__)]
        if origin is list:
            return list[swap(args[0])]  # type: ignore[misc]
        if args and origin is not None and len(args) > 1:
            return functools.reduce(operator.or_, [swap(a) for a in args])
        return model_of(tp) if dataclasses.is_dataclass(tp) else tp

    def model_of(cls: Any) -> Any:
        if cls not in made:
            hints = typing.get_type_hints(
                cls, localns={"BenchReport": BenchReport}, include_extras=True
            )
            fields: dict[str, Any] = {}
            for f in dataclasses.fields(cls):
                if f.default_factory is not dataclasses.MISSING:
                    factory = f.default_factory
                    made_factory = (
                        model_of(factory) if dataclasses.is_dataclass(factory) else factory
                    )
                    fields[f.name] = (swap(hints[f.name]), Field(default_factory=made_factory))
                else:
                    default = ... if f.default is dataclasses.MISSING else f.default
                    fields[f.name] = (swap(hints[f.name]), default)
            made[cls] = create_model(cls.__name__, __config__=config, __doc__=cls.__doc__, **fields)
        return made[cls]

    model_of(facts.Facts)
    return made


def _dataclasses(read_back: bool) -> dict[str, float]:
    marks = {"start": time.perf_counter()}
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.plain import to_json_value
    from hwadvisor.probe import probe_machine
    from hwadvisor.probe.seams import Seams

    marks["import"] = time.perf_counter()
    hosts = sorted(p for p in HOSTS.iterdir() if p.is_dir())
    built = [probe_machine(Seams.recorded(h)) for h in hosts]
    marks["probe+validate"] = time.perf_counter()
    texts = [json.dumps(to_json_value(b), indent=2, ensure_ascii=False) for b in built]
    marks["dump"] = time.perf_counter()
    if read_back:
        again = [Facts.model_validate(json.loads(t)) for t in texts]
        assert again == built
        marks["read back"] = time.perf_counter()
    return _phases(marks)


def _pydantic(verify: bool) -> dict[str, float]:
    marks = {"start": time.perf_counter()}
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.plain import to_json_value
    from hwadvisor.probe import probe_machine
    from hwadvisor.probe.seams import Seams

    models = _models()
    model = models[Facts]
    marks["import"] = time.perf_counter()
    hosts = sorted(p for p in HOSTS.iterdir() if p.is_dir())
    built = [model.model_validate(to_json_value(probe_machine(Seams.recorded(h)))) for h in hosts]
    marks["probe+validate"] = time.perf_counter()
    texts = [b.model_dump_json(indent=2) for b in built]
    marks["dump"] = time.perf_counter()
    phases = _phases(marks)
    if verify:  # outside the timed runs: the candidate is the same definition, printing alike
        same = model.model_json_schema(mode="serialization")
        assert same == Facts.model_json_schema(mode="serialization"), "not the same schema"
        for text in texts:
            assert json.loads(text) == to_json_value(Facts.model_validate(json.loads(text)))
    return phases


def _phases(marks: dict[str, float]) -> dict[str, float]:
    names = list(marks)
    return {b: marks[b] - marks[a] for a, b in itertools.pairwise(names)}


CANDIDATES = {
    "dataclasses": lambda verify: _dataclasses(read_back=False),
    "dataclasses+adapter": lambda verify: _dataclasses(read_back=True),
    "pydantic": _pydantic,
}


def run(name: str, verify: bool = False) -> None:
    """Run candidate ``name`` once and print its phases (seconds) as one JSON line;
    ``verify`` also checks, untimed, that it is the same document as the shipped one."""
    phases = CANDIDATES[name](verify)
    phases["pydantic imported"] = float("pydantic" in sys.modules)
    print(json.dumps(phases))
