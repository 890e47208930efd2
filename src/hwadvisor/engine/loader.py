"""Finding, reading and validating rule files; later folders override rules by id.

Safety: files over :data:`MAX_FILE_BYTES` are refused before parsing; YAML is read with
``yaml.safe_load`` (no Python tags, nothing constructed but plain data); the parsed data
is walked once with limits on depth and node count (aliases can make a small file a
huge tree) before pydantic sees it. Every failure is one :class:`RulesError` line with
the file, the line, the rule id and the field.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

import hwadvisor
from hwadvisor.engine.validate import check_rule
from hwadvisor.errors import RulesError
from hwadvisor.io import NestingError, load_yaml, read_limited_text
from hwadvisor.models.rules import Rule, RuleFile

MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 24
MAX_NODES = 50_000
MAX_RULES = 2000
ENV_VAR = "HWADVISOR_RULES_PATH"


def rules_dir() -> Path:
    """The shipped rules: the package's ``rules`` folder (wheel), else the repository's."""
    package = Path(hwadvisor.__file__).resolve().parent
    for candidate in (package / "rules", package.parents[1] / "rules"):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    raise RulesError(
        "the shipped rules folder is missing; reinstall hwadvisor", where=str(package / "rules")
    )


@dataclass
class RuleSet:
    """The rules in effect, by id, with the file each came from."""

    rules: dict[str, Rule] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    folders: list[str] = field(default_factory=list)

    def get(self, rule_id: str) -> Rule:
        """The rule ``rule_id``; RulesError naming the closest ids when there is none."""
        if rule_id in self.rules:
            return self.rules[rule_id]
        import difflib

        close = difflib.get_close_matches(rule_id.upper(), list(self.rules), n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise RulesError(f"no rule {rule_id!r}{hint}")

    def sorted(self) -> list[Rule]:
        """The rules ordered by id, so evaluation never depends on file order."""
        return [self.rules[k] for k in sorted(self.rules)]


def _check_shape(data: Any, where: str) -> None:
    """Refuse data nested deeper than MAX_DEPTH or with more than MAX_NODES nodes."""
    count = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise RulesError(
                f"rules file has over {MAX_NODES} values (aliases expanding?)", where=where
            )
        if depth > MAX_DEPTH:
            raise RulesError(f"rules file is nested deeper than {MAX_DEPTH} levels", where=where)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _line_of(text: str, loc: Iterable[object]) -> int | None:
    """The 1-based line of the node at ``loc`` (composing nodes executes nothing)."""
    try:
        node: Any = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(node.value)
        ):
            match = node.value[part]
        else:
            match = None
        if match is None:
            break
        node, line = match, match.start_mark.line + 1
    return line


def _rule_label(data: Any, index: object) -> str:
    if isinstance(index, int) and isinstance(data, dict):
        rules = data.get("rules")
        if isinstance(rules, list) and 0 <= index < len(rules) and isinstance(rules[index], dict):
            rid = rules[index].get("id")
            return f"rule {rid}" if isinstance(rid, str) else f"rule #{index + 1}"
    return "file"


def _where(path: Path, text: str, loc: Iterable[object]) -> str:
    line = _line_of(text, loc)
    return f"{path}:{line}" if line else str(path)


def _read_yaml(text: str, where: str) -> Any:
    """The YAML document of ``text`` as plain data (a safe loader), ``{}`` when empty."""
    if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
        raise RulesError(f"rules file is over {MAX_FILE_BYTES} bytes", where=where)
    try:
        data = load_yaml(text)
    except NestingError as exc:
        raise RulesError("rules file is nested too deeply", where=where) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RulesError(f"not valid YAML: {problem}", where=at) from exc
    return {"rules": []} if data is None else data


def _rule_file(data: Any, text: str, where: str) -> RuleFile:
    """``data`` validated as a rules file; the first error names its rule, field and line."""
    try:
        return RuleFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        label = _rule_label(data, loc[1] if len(loc) > 1 and loc[0] == "rules" else None)
        fld = ".".join(str(p) for p in (loc[2:] if label != "file" else loc)) or "(document)"
        fld = fld.replace("not_", "not")
        msg = err["msg"].removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise RulesError(
            f"{label}: field {fld}: {msg}{more}",
            where=_where(Path(where), text, [p for p in loc if p != "not_"]),
        ) from exc


def _check_rules(rules: list[Rule], text: str, where: str) -> None:
    """Ids unique in the file; each rule's paths, operators, sources and messages sound."""
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        if rule.id in seen:
            raise RulesError(
                f"rule {rule.id}: duplicate id in the same file",
                where=_where(Path(where), text, ["rules", i]),
            )
        seen.add(rule.id)
        problems = check_rule(rule)
        if problems:
            fld, msg = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            spot = ["rules", i, *[int(p) if p.isdigit() else p for p in fld.split(".")]]
            raise RulesError(
                f"rule {rule.id}: field {fld}: {msg}{more}", where=_where(Path(where), text, spot)
            )


def parse_rules_text(text: str, *, where: str) -> list[Rule]:
    """Rules from YAML ``text``; ``where`` names the file in errors.

    Parsed once per text and place in a process: the rules are frozen models, and a
    command run many times in one process (tests, ``fleet``) would otherwise re-parse
    and re-validate the same files on every call. Errors are raised anew, never cached.
    """
    return list(_parse_cached(text, where))


@functools.lru_cache(maxsize=64)
def _parse_cached(text: str, where: str) -> tuple[Rule, ...]:
    data = _read_yaml(text, where)
    _check_shape(data, where)
    rules = tuple(_rule_file(data, text, where).rules)
    _check_rules(list(rules), text, where)
    return rules


def load_file(path: str | Path) -> list[Rule]:
    """Read and validate one rules file."""
    p = Path(path)
    text = read_limited_text(
        p, MAX_FILE_BYTES, RulesError, what="rules file", missing="rules file not found"
    )
    return parse_rules_text(text, where=str(p))


def rule_files(folder: str | Path) -> list[Path]:
    """The ``*.yaml`` / ``*.yml`` files of a folder (or the file itself), sorted by name."""
    p = Path(folder)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise RulesError("rules folder not found", where=str(p))
    return sorted([*p.glob("*.yaml"), *p.glob("*.yml")])


def load_folder(folder: str | Path) -> tuple[dict[str, Rule], dict[str, str]]:
    """All rules of one folder; an id defined twice in it is an error."""
    rules: dict[str, Rule] = {}
    origin: dict[str, str] = {}
    for f in rule_files(folder):
        for rule in load_file(f):
            if rule.id in rules:
                raise RulesError(f"rule {rule.id}: also defined in {origin[rule.id]}", where=str(f))
            rules[rule.id], origin[rule.id] = rule, str(f)
    return rules, origin


def env_folders(env: Mapping[str, str] | None = None) -> list[Path]:
    """Folders named by ``HWADVISOR_RULES_PATH`` (``os.pathsep``-separated)."""
    raw = (os.environ if env is None else env).get(ENV_VAR, "")
    return [Path(p) for p in raw.split(os.pathsep) if p.strip()]


def load_rules(
    extra: Iterable[str | Path] = (),
    *,
    env: Mapping[str, str] | None = None,
    base: str | Path | None = None,
) -> RuleSet:
    """The shipped rules, then ``HWADVISOR_RULES_PATH``, then ``extra`` (``--rules``).

    A later folder's rule replaces an earlier one with the same id; ``enabled: false``
    removes it.
    """
    folders = [
        Path(base) if base is not None else rules_dir(),
        *env_folders(env),
        *(Path(e) for e in extra),
    ]
    result = RuleSet(folders=[str(f) for f in folders])
    for folder in folders:
        rules, origin = load_folder(folder)
        for rid, rule in rules.items():
            result.rules[rid], result.origin[rid] = rule, origin[rid]
    for rid in [r for r, rule in result.rules.items() if not rule.enabled]:
        del result.rules[rid]
    if len(result.rules) > MAX_RULES:
        raise RulesError(f"{len(result.rules)} rules in effect, over the limit of {MAX_RULES}")
    return result
