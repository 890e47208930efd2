"""Hostile and broken rules files through ``rules validate``, ``recommend --rules`` and
``rules list --rules``: exit 2 with one line naming the file (and line, rule and field
where there is one), never a traceback; strings that look like code are only ever text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FACTS = Path(__file__).parents[1] / "data" / "facts" / "laptop.json"


def rule(
    rid: str = "HX001",
    when: str = '{fact: cpu.usable_cores, op: ">", value: 3}',
    message: str = "m {cpu.model}",
    title: str = "t",
) -> str:
    return (
        f"  - id: {rid}\n    title: {title}\n    when: {when}\n    message: {message}\n"
        "    severity: info\n    source: [R7]\n    rationale: r\n"
    )


def alias_bomb() -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 7):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\nrules: [*a6]\n"


#: name -> (files in the folder, substrings of the error line)
BAD_RULES: dict[str, tuple[dict[str, str], list[str]]] = {
    "malformed-yaml": ({"x.yaml": "rules:\n  - id: HX001\n    title: [unclosed\n"}, ["x.yaml:4", "not valid YAML"]),
    "tab-indent": ({"x.yaml": "rules:\n\t- id: HX001\n"}, ["x.yaml:2", "not valid YAML"]),
    "binary": ({"x.yaml": "\udcff\udcfe\x00rules"}, ["x.yaml", "cannot read"]),
    "scalar-document": ({"x.yaml": "42\n"}, ["x.yaml:1", "RuleFile"]),
    "rules-null": ({"x.yaml": "rules: null\n"}, ["field rules"]),
    "unknown-operator": ({"x.yaml": "rules:\n" + rule(when='{fact: cpu.usable_cores, op: "=~", value: 3}')}, ["HX001", "when.op"]),
    "unknown-fact-path": ({"x.yaml": "rules:\n" + rule(when='{fact: cpu.nonsense, op: "==", value: 3}')}, ["HX001", "unknown fact path 'cpu.nonsense'"]),
    "unknown-field": ({"x.yaml": "rules:\n" + rule() + "    exec: rm -rf /\n"}, ["HX001", "exec"]),
    "duplicate-id-one-file": ({"x.yaml": "rules:\n" + rule() + rule()}, ["HX001", "duplicate id"]),
    "duplicate-id-two-files": ({"a.yaml": "rules:\n" + rule(), "b.yaml": "rules:\n" + rule()}, ["b.yaml", "HX001", "also defined in"]),
    "bad-id": ({"x.yaml": "rules:\n" + rule(rid='"../../etc/passwd"')}, ["field id"]),
    "nan-value": ({"x.yaml": "rules:\n" + rule(when='{fact: cpu.usable_cores, op: ">", value: .nan}')}, ["HX001", "finite number"]),
    "inf-value": ({"x.yaml": "rules:\n" + rule(when='{fact: memory.total_bytes, op: "<", value: .inf}')}, ["HX001", "finite number"]),
    "string-compared-as-number": ({"x.yaml": "rules:\n" + rule(when='{fact: cpu.usable_cores, op: ">", value: "3"}')}, ["HX001", "compares numbers"]),
    "huge-list": ({"x.yaml": "rules:\n" + rule(when="{fact: cpu.model, op: in, value: [" + ",".join(["x"] * 3000) + "]}")}, ["HX001", "over the limit of 64"]),
    "long-title": ({"x.yaml": "rules:\n" + rule(title="t" * 300_000)}, ["x.yaml", "bytes, over the"]),
    "long-title-under-file-limit": ({"x.yaml": "rules:\n" + rule(title="t" * 5_000)}, ["HX001", "field title"]),
    "too-many-rules": ({"x.yaml": "rules:\n" + "".join(rule(rid=f"HX{i:03d}") for i in range(600))}, ["x.yaml"]),
    "deep-conditions": ({"x.yaml": "rules:\n" + rule(when="{all: [" * 30 + '{fact: cpu.usable_cores, op: ">", value: 3}' + "]}" * 30)}, ["nested deeper than"]),
    "deep-yaml-5000": ({"x.yaml": "rules: " + "[" * 5000 + "]" * 5000 + "\n"}, ["x.yaml"]),
    "alias-bomb": ({"x.yaml": alias_bomb()}, ["over 50000 values"]),
    "python-tag": ({"x.yaml": 'rules: !!python/object/apply:os.system ["touch CANARY"]\n'}, ["python/object/apply"]),
    "format-spec-attack": ({"x.yaml": "rules:\n" + rule(message='"{cpu.model!r:>{cpu.usable_cores}} {cpu.model.__class__}"')}, ["HX001", "bad placeholder"]),
    "env-placeholder": ({"x.yaml": "rules:\n" + rule(message='"${HOME} {HOME}"')}, ["HX001", "bad placeholder"]),
}  # fmt: skip

COMMANDS: dict[str, list[str]] = {
    "validate": ["rules", "validate", "--json"],
    "recommend": ["recommend", "--json", "--no-bench", "--scenario", "training", "--facts", str(FACTS), "--rules"],
    "list": ["rules", "list", "--json", "--rules"],
}  # fmt: skip


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    return folder


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(BAD_RULES))
def test_bad_rules_are_exit_2_one_line(
    case: str,
    command: str,
    tmp_path: Path,
    cli: Callable[..., Any],
    clean_error: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a CANARY file, if anything ran, would land here
    files, needles = BAD_RULES[case]
    folder = _folder(tmp_path, files)
    clean_error(cli(*COMMANDS[command], str(folder)), 2, str(folder), *needles, wants_json=True)
    assert not (tmp_path / "CANARY").exists()


def test_missing_rules_path(
    tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    for command in COMMANDS.values():
        clean_error(cli(*command, str(tmp_path / "nope")), 2, "not found", wants_json=True)


CODE_LIKE = [
    "__import__('os').system('touch CANARY')",
    "$(touch CANARY)",
    "`touch CANARY`",
    "{{ 7*7 }}",
    "eval(compile('open(\"CANARY\",\"w\")','x','exec'))",
]


def test_code_in_rules_is_only_text(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid rules whose strings look like code: they load, fire, and print the strings
    verbatim; nothing is executed or expanded (SPEC §8: rules are data only)."""
    monkeypatch.chdir(tmp_path)
    body = "".join(
        rule(
            rid=f"HX{i:03d}",
            when=f'{{fact: cpu.model, op: "!=", value: {json.dumps(text)}}}',
            title=json.dumps(text),
            message=json.dumps(f"{text} on {{cpu.model}}"),
        )
        for i, text in enumerate(CODE_LIKE, start=1)
    )
    folder = _folder(tmp_path, {"x.yaml": "rules:\n" + body})
    assert cli("rules", "validate", str(folder)).code == 0
    result = cli(
        "recommend", "--json", "--no-bench", "--scenario", "training", "--facts", str(FACTS),
        "--rules", str(folder),
    )  # fmt: skip
    assert result.code == 0, result.err
    findings = {f["rule"]: f for f in json.loads(result.out)["findings"]}
    for i, text in enumerate(CODE_LIKE, start=1):
        finding = findings[f"HX{i:03d}"]
        assert finding["title"] == text
        # In messages {{ and }} are the escapes for literal braces; nothing is evaluated.
        literal = text.replace("{{", "{").replace("}}", "}")
        assert finding["message"].startswith(literal + " on "), finding["message"]
    assert not (tmp_path / "CANARY").exists()
    shown = cli("rules", "show", "HX001", "--json", "--rules", str(folder))
    assert shown.code == 0 and json.loads(shown.out)["rule"]["title"] == CODE_LIKE[0]


def test_hostile_rules_in_the_environment_path(
    tmp_path: Path,
    cli: Callable[..., Any],
    clean_error: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HWADVISOR_RULES_PATH folders are read by every rules-using command: same treatment."""
    folder = _folder(tmp_path, BAD_RULES["alias-bomb"][0])
    monkeypatch.setenv("HWADVISOR_RULES_PATH", str(folder))
    result = cli("recommend", "--no-bench", "--scenario", "training", "--facts", str(FACTS))
    clean_error(result, 2, str(folder), "over 50000 values")
