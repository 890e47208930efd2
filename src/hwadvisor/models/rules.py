"""The rules file (``rules/*.yaml``): rules as data, validated before anything is evaluated.

Every model here forbids unknown fields, so a typo in a rules file is an error naming
the field, not a silently ignored key. Conditions are a closed grammar: ``all`` /
``any`` / ``not`` over leaves ``{fact, op, value | ref}``. Nothing in a rule is executed.
``hwadvisor schema rules`` publishes :class:`RuleFile`'s JSON Schema.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    model_validator,
)

from hwadvisor.models.advice import Confidence, DeviceClass
from hwadvisor.models.finding import Severity
from hwadvisor.models.workload import Scenario

#: Limits that keep a hostile or broken rules file from costing time or memory.
MAX_LIST_ITEMS = 64
MAX_CHILDREN = 32
MAX_VALUE_CHARS = 200
MAX_TEXT_CHARS = 2000
MAX_RULES_PER_FILE = 500
FACT_PATH_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z0-9][a-z0-9_]*){0,7}$"

ShortStr = Annotated[str, Field(max_length=MAX_VALUE_CHARS)]
Scalar = StrictBool | StrictInt | StrictFloat | ShortStr


class Op(str, Enum):
    """The closed set of comparison operators a condition leaf may use."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "in"
    NOT_IN = "not_in"
    CONTAINS = "contains"
    EXISTS = "exists"
    VERSION_LT = "version_lt"
    VERSION_LE = "version_le"
    VERSION_GT = "version_gt"
    VERSION_GE = "version_ge"


#: Operators whose value is a list.
LIST_OPS = frozenset({Op.IN, Op.NOT_IN})
#: Operators that compare dotted version strings (driver, CUDA, compute capability).
VERSION_OPS = frozenset({Op.VERSION_LT, Op.VERSION_LE, Op.VERSION_GT, Op.VERSION_GE})
#: Operators that order numbers.
ORDER_OPS = frozenset({Op.LT, Op.LE, Op.GT, Op.GE})


class RuleKind(str, Enum):
    """Where a fired rule's message goes: the findings, or the migration checklist."""

    FINDING = "finding"
    MIGRATION = "migration"


class Condition(BaseModel):
    """One node of a condition: exactly one of ``all``, ``any``, ``not``, or a leaf ``fact``.

    A leaf compares the value at ``fact`` with ``value`` (a constant) or ``ref`` (another
    fact path). A fact that is missing makes the leaf *unknown*; only ``exists`` is never
    unknown, which is how a rule asks "is this fact missing?".
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    all: list[Condition] | None = Field(
        None, min_length=1, max_length=MAX_CHILDREN, description="true when every child is true"
    )
    any: list[Condition] | None = Field(
        None, min_length=1, max_length=MAX_CHILDREN, description="true when one child is true"
    )
    not_: Condition | None = Field(None, alias="not", description="true when the child is false")
    fact: str | None = Field(
        None, pattern=FACT_PATH_PATTERN, max_length=100, description="dotted fact path"
    )
    op: Op | None = None
    value: Scalar | list[Scalar] | None = Field(None, description="constant to compare with")
    ref: str | None = Field(
        None,
        pattern=FACT_PATH_PATTERN,
        max_length=100,
        description="another fact path to compare with",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Condition:
        forms = [name for name in ("all", "any", "not_", "fact") if getattr(self, name) is not None]
        if len(forms) != 1:
            shown = [f.rstrip("_") for f in forms] or ["nothing"]
            raise ValueError(
                f"a condition is exactly one of all / any / not / fact, found {' + '.join(shown)}"
            )
        if self.fact is None:
            if self.op is not None or "value" in self.model_fields_set or self.ref is not None:
                raise ValueError("op / value / ref belong to a leaf with `fact`")
            return self
        return self._check_leaf()

    def _check_leaf(self) -> Condition:
        op = self.op
        if op is None:
            raise ValueError(f"leaf on {self.fact!r} has no `op`")
        has_value = "value" in self.model_fields_set
        if has_value and self.ref is not None:
            raise ValueError("give `value` or `ref`, not both")
        if op is Op.EXISTS:
            if self.ref is not None or (has_value and not isinstance(self.value, bool)):
                raise ValueError("`exists` takes no `ref`, and `value` (optional) is true or false")
            return self
        _check_operand(op, has_value, self.value, self.ref)
        _check_list(op, self.value, self.ref)
        if has_value:
            _check_kind(op, self.value)
        return self

    def children(self) -> list[Condition]:
        """The sub-conditions of a branch node (empty for a leaf)."""
        if self.all is not None:
            return list(self.all)
        if self.any is not None:
            return list(self.any)
        return [self.not_] if self.not_ is not None else []

    def fact_paths(self) -> list[str]:
        """Every fact path this condition reads (``fact`` and ``ref``), in order."""
        own = [p for p in (self.fact, self.ref) if p is not None]
        return own + [p for child in self.children() for p in child.fact_paths()]


def _check_operand(op: Op, has_value: bool, value: object, ref: str | None) -> None:
    """A comparison has a ``value`` or a ``ref``; a value is not null, and no number in
    it is NaN or infinite."""
    if not has_value and ref is None:
        raise ValueError(f"`{op.value}` needs a `value` or a `ref`")
    if has_value and value is None:
        raise ValueError("`value` is null: test a missing fact with `op: exists, value: false`")
    values = value if isinstance(value, list) else [value]
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        # YAML reads .nan and .inf as floats; NaN compares false with everything and
        # infinity is no threshold, so such a rule would silently never (or always) fire.
        raise ValueError("`value` must be a finite number, not .nan or .inf")


def _check_list(op: Op, value: object, ref: str | None) -> None:
    """``in`` / ``not_in`` take a list of values (no longer than the limit); every other
    operator one value."""
    if op not in LIST_OPS:
        if isinstance(value, list):
            raise ValueError(f"`{op.value}` compares with one value, not a list")
        return
    if ref is not None or not isinstance(value, list):
        raise ValueError(f"`{op.value}` needs `value` to be a list")
    if len(value) > MAX_LIST_ITEMS:
        raise ValueError(f"list of {len(value)} values, over the limit of {MAX_LIST_ITEMS}")


def _check_kind(op: Op, value: object) -> None:
    """A version comparison's value is a quoted string; an order comparison's a number."""
    if op in VERSION_OPS and not isinstance(value, str):
        # YAML reads 12.10 as the float 12.1: versions must be quoted to mean what they say.
        raise ValueError(f"`{op.value}` needs the version as a quoted string, e.g. '12.2'")
    if op in ORDER_OPS and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"`{op.value}` compares numbers; use version_* for versions")


class VerdictImplication(BaseModel):
    """What a rule that fires implies for the verdict; the highest priority wins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: DeviceClass
    priority: int = Field(
        50, ge=0, le=1000, description="the fired rule with the highest priority decides"
    )
    confidence: Confidence = Confidence.MEDIUM
    summary: str = Field(
        max_length=MAX_TEXT_CHARS, description="the verdict sentence; placeholders as in `message`"
    )
    where: Literal["anywhere", "here"] = Field(
        "anywhere",
        description="here: the sentence is about this machine's own device, so the rule decides only when the option chosen is this machine's",
    )


class Numeric(str, Enum):
    """The number formats a rule may recommend or advise against."""

    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"


class Scope(str, Enum):
    """The class of device a rule's format advice is about."""

    CPU = "cpu"
    GPU = "gpu"


class Recommends(BaseModel):
    """What a fired rule recommends, machine-readably, so findings can be checked against
    each other (``tests/engine/test_contradictions.py``) by their tags, not their words.

    ``prefer`` / ``avoid`` are number formats for speed on the class of device ``where``
    (advice to shrink a model that does not fit is not a speed claim and is not tagged);
    ``device`` is the class of hardware the rule tells the user to run on. Two findings
    contradict when one prefers what the other avoids on the same class of device, or
    they name different devices.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefer: list[Numeric] = Field(
        default_factory=list, max_length=8, description="formats said to be fast here"
    )
    avoid: list[Numeric] = Field(
        default_factory=list, max_length=8, description="formats said not to pay off here"
    )
    where: Scope | None = Field(None, description="the class of device prefer / avoid are about")
    device: DeviceClass | None = Field(None, description="the class of hardware recommended")

    @model_validator(mode="after")
    def _not_both(self) -> Recommends:
        both = sorted({n.value for n in self.prefer} & {n.value for n in self.avoid})
        if both:
            raise ValueError(f"{', '.join(both)} is both preferred and avoided")
        if not (self.prefer or self.avoid or self.device):
            raise ValueError("`recommends` needs prefer, avoid or device")
        if (self.prefer or self.avoid) and self.where is None:
            raise ValueError("prefer / avoid need `where: cpu` or `where: gpu`")
        return self

    def conflicts(self, other: Recommends) -> list[str]:
        """What ``self`` and ``other`` disagree on, in words (empty: they agree)."""
        out: list[str] = []
        if self.where is not None and self.where is other.where:
            on = self.where.value
            out += [
                f"{n.value} on {on}: preferred and avoided" for n in self.prefer if n in other.avoid
            ]
            out += [
                f"{n.value} on {on}: avoided and preferred" for n in self.avoid if n in other.prefer
            ]
        if self.device and other.device and self.device is not other.device:
            out.append(f"device: {self.device.value} and {other.device.value}")
        return out


class Rule(BaseModel):
    """One piece of advice: when it applies, what it says, what it implies, where it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(
        pattern=r"^[A-Z]{2,4}[0-9]{3}$", description="permanent id; retired ids are never reused"
    )
    title: str = Field(min_length=1, max_length=120)
    scenarios: list[Scenario] = Field(
        default_factory=list, max_length=6, description="empty: every scenario"
    )
    kind: RuleKind = RuleKind.FINDING
    when: Condition | None = Field(
        None, description="absent: the rule always applies to its scenarios"
    )
    message: str = Field(
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="advice; {fact.path[|filter][:format]} placeholders",
    )
    severity: Severity = Severity.INFO
    verdict: VerdictImplication | None = None
    recommends: Recommends | None = Field(
        None,
        description="what the rule recommends (formats to prefer or avoid, a device), so fired findings can be checked for contradictions; a verdict rule recommends its device",
    )
    source: list[str] = Field(
        min_length=1,
        max_length=16,
        description="ids of the source documents' claims the rule encodes (rules show lists them)",
    )
    rationale: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    enabled: bool = Field(
        True, description="false disables a rule of the same id from an earlier folder"
    )

    @model_validator(mode="after")
    def _device_agrees(self) -> Rule:
        said = self.recommends.device if self.recommends is not None else None
        if said is not None and self.verdict is not None and said is not self.verdict.device:
            raise ValueError(
                f"recommends device {said.value} but its verdict is {self.verdict.device.value}"
            )
        return self

    def recommendation(self) -> Recommends | None:
        """The rule's tags, with the device of its verdict when it has one."""
        if self.verdict is None:
            return self.recommends
        base = self.recommends or Recommends(device=self.verdict.device)
        return base.model_copy(update={"device": self.verdict.device})


class RuleFile(BaseModel):
    """A ``rules/*.yaml`` file: an optional description and a list of rules."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str | None = Field(None, max_length=MAX_TEXT_CHARS)
    rules: list[Rule] = Field(default_factory=list, max_length=MAX_RULES_PER_FILE)


def condition_to_data(cond: Condition) -> dict[str, Any]:
    """The condition as plain data, as it would be written in YAML (for docs and explain)."""
    return cond.model_dump(by_alias=True, exclude_none=True, exclude_unset=False)
