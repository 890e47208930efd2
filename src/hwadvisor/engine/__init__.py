"""The rule engine: advice as data (``rules/*.yaml``), applied by pure functions.

- :func:`load_rules` reads the shipped rules, ``HWADVISOR_RULES_PATH`` and ``--rules``
  folders, validating each rule (schema, fact paths with "did you mean", operator
  types, guidance ids, message templates);
- :func:`build_context` flattens facts, bench figures, the workload, the estimates and
  the options into dotted paths;
- :func:`apply_rules` evaluates the rules with three-valued logic and decides the verdict.

Nothing in a rules file is executed: conditions are a closed grammar of comparisons.
"""

from __future__ import annotations

from hwadvisor.engine.context import Context, build_context, with_verdict
from hwadvisor.engine.explain import Explanation, explain
from hwadvisor.engine.loader import (
    ENV_VAR,
    RuleSet,
    load_file,
    load_folder,
    load_rules,
    parse_rules_text,
    rules_dir,
)
from hwadvisor.engine.logic import Truth, evaluate
from hwadvisor.engine.run import RuleOutcome, apply_rules

__all__ = [
    "ENV_VAR",
    "Context",
    "Explanation",
    "RuleOutcome",
    "RuleSet",
    "Truth",
    "apply_rules",
    "build_context",
    "evaluate",
    "explain",
    "load_file",
    "load_folder",
    "load_rules",
    "parse_rules_text",
    "rules_dir",
    "with_verdict",
]
