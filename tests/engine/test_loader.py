"""Loading rules: validation errors name file, line, rule and field; overrides by id."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hwadvisor.engine import ENV_VAR, load_file, load_rules, parse_rules_text, rules_dir
from hwadvisor.errors import ExitCode, RulesError

GOOD = """
rules:
  - id: XX001
    title: Test rule
    when: {fact: cpu.features.avx2, op: "==", value: true}
    message: "cores: {cpu.usable_cores}"
    source: [W2]
    rationale: test
"""


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(text: str, tmp_path: Path) -> RulesError:
    path = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(RulesError) as info:
        load_file(path)
    assert info.value.exit_code == ExitCode.BAD_INPUT
    assert str(path) in info.value.line()
    return info.value


def test_shipped_rules_load_from_the_checkout() -> None:
    found = rules_dir()
    assert (found / "scenarios.yaml").is_file()
    assert len(load_rules(env={}).rules) >= 50


def test_a_good_file_loads(tmp_path: Path) -> None:
    rules = load_file(_write(tmp_path, "ok.yaml", GOOD))
    assert [r.id for r in rules] == ["XX001"]


def test_misspelt_fact_path_gets_did_you_mean(tmp_path: Path) -> None:
    err = _error(GOOD.replace("cpu.features.avx2", "cpu.featurs.amx_bf16"), tmp_path)
    line = err.line()
    assert "rule XX001" in line and "field when.fact" in line
    assert (
        "unknown fact path 'cpu.featurs.amx_bf16' (did you mean 'cpu.features.amx_bf16'?)" in line
    )
    assert ":5:" in line  # the line of the `when` condition


def test_unknown_field_names_rule_and_field(tmp_path: Path) -> None:
    err = _error(GOOD.replace("rationale: test", "rationale: test\n    severty: info"), tmp_path)
    assert "rule XX001" in err.line() and "severty" in err.line()


def test_unknown_operator_is_refused(tmp_path: Path) -> None:
    err = _error(GOOD.replace('op: "=="', 'op: "=~"'), tmp_path)
    assert "when.op" in err.line()


def test_unknown_guidance_id_is_refused(tmp_path: Path) -> None:
    err = _error(GOOD.replace("[W2]", "[W9]"), tmp_path)
    assert "unknown source id 'W9'" in err.line()


def test_bad_placeholder_is_refused(tmp_path: Path) -> None:
    err = _error(GOOD.replace("{cpu.usable_cores}", "{cpu.usable_cores.__class__}"), tmp_path)
    assert "message" in err.line()


def test_operator_must_fit_the_fact_type(tmp_path: Path) -> None:
    err = _error(GOOD.replace('op: "==", value: true', 'op: ">", value: 3'), tmp_path)
    assert "needs a number" in err.line()


def test_enum_values_are_checked(tmp_path: Path) -> None:
    text = GOOD.replace(
        '{fact: cpu.features.avx2, op: "==", value: true}',
        '{fact: options.budget, op: "==", value: tiny}',
    )
    assert "one of: low, normal, high" in _error(text, tmp_path).line()


def test_unquoted_version_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace(
        '{fact: cpu.features.avx2, op: "==", value: true}',
        "{fact: gpu.min_cuda_driver, op: version_lt, value: 12.10}",
    )
    assert "quoted string" in _error(text, tmp_path).line()


def test_verdict_rules_cannot_read_the_verdict(tmp_path: Path) -> None:
    text = GOOD.replace(
        '{fact: cpu.features.avx2, op: "==", value: true}',
        '{fact: verdict.device, op: "==", value: cpu}',
    )
    text += "    verdict: {device: gpu, summary: x}\n"
    assert "cannot read verdict" in _error(text, tmp_path).line()


def test_duplicate_id_in_one_file(tmp_path: Path) -> None:
    body = GOOD.split("rules:\n", 1)[1]
    assert "duplicate id" in _error("rules:\n" + body + body, tmp_path).line()


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    err = _error("rules:\n  - id: XX001\n    title: a: b\n", tmp_path)
    assert "not valid YAML" in err.line() and ":3" in err.line()


def test_python_tags_are_not_constructed(tmp_path: Path) -> None:
    err = _error("rules: !!python/object/apply:os.system ['echo hacked']\n", tmp_path)
    assert "not valid YAML" in err.line()


def test_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    assert "byte" in _error("#" * (300 * 1024), tmp_path).line()


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    err = _error("\n".join(lines) + "\nrules: []\n", tmp_path)
    assert "values" in err.line() or "nested" in err.line()


def test_override_and_disable_by_id(tmp_path: Path) -> None:
    user = tmp_path / "mine"
    _write(
        user,
        "a.yaml",
        "rules:\n  - {id: HW101, title: Mine, message: m, source: [S1], rationale: r}\n"
        "  - {id: HW404, title: Disabled, message: m, source: [W5], rationale: r, enabled: false}\n",
    )
    rs = load_rules([user], env={})
    assert rs.rules["HW101"].title == "Mine" and rs.origin["HW101"].endswith("a.yaml")
    assert "HW404" not in rs.rules
    assert len(rs.folders) == 2


def test_environment_folders_come_before_the_command_line(tmp_path: Path) -> None:
    env_dir, cli_dir = tmp_path / "env", tmp_path / "cli"
    rule = "rules:\n  - {{id: HW101, title: {t}, message: m, source: [S1], rationale: r}}\n"
    _write(env_dir, "r.yaml", rule.format(t="FromEnv"))
    _write(cli_dir, "r.yaml", rule.format(t="FromCli"))
    assert load_rules([], env={ENV_VAR: str(env_dir)}).rules["HW101"].title == "FromEnv"
    both = load_rules([cli_dir], env={ENV_VAR: os.pathsep.join([str(env_dir)])})
    assert both.rules["HW101"].title == "FromCli"


def test_missing_rules_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="not found"):
        load_rules([tmp_path / "nope"], env={})


def test_unknown_rule_id_suggests_close_ones() -> None:
    with pytest.raises(RulesError, match="did you mean HW401"):
        load_rules(env={}).get("HW41")


def test_parse_text_without_a_file() -> None:
    assert parse_rules_text("", where="empty.yaml") == []


def test_shipped_rule_files_follow_the_published_schema() -> None:
    import jsonschema
    import yaml

    from hwadvisor.models.schemas import schema_for

    schema = schema_for("rules")
    for path in sorted(rules_dir().glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)
