"""Every command's terminal view at 80, 100 and 160 columns: no cell is cut.

rich cuts what does not fit with "…" (and a line longer than the terminal is one the
terminal wraps for us, as badly); neither may appear. Each command runs through the
real entry point (the ``cli`` fixture) with ``COLUMNS`` set, on saved machines only:
``--facts`` files and recorded reports, ``--no-bench``, catalog devices rather than
"here". ``check`` has no ``--facts``: its view renders the recorded hosts, probed through
their seams, and ``bench`` (no render-only path) renders the figures a saved report
carries.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from hwadvisor.render import stdout_console

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

DATA = Path(__file__).parents[1] / "data"
FACTS = DATA / "facts"
REPORTS = sorted(str(p) for p in (DATA / "reports").glob("*.json") if not p.name.startswith("bad"))
WIDTHS = (80, 100, 160)
#: The project's own documents, which a person cannot look up: a source names the
#: publication itself.
INTERNAL = re.compile(r"SPEC\b|§|GUIDANCE|REFERENCE\.md|shared/")


def _facts(name: str) -> str:
    return str(FACTS / f"{name}.json")


#: (name, argv) of every command's human view, on saved inputs.
COMMANDS: list[tuple[str, list[str]]] = [
    *[
        (
            f"recommend {machine} {scenario} {model}",
            ["recommend", "--facts", _facts(machine), "-s", scenario, "-m", model, "--no-bench"],
        )
        for machine, scenario, model in [
            ("t4-cloud", "inference", "resnet50"),
            ("h100x8-nvlink", "distributed", "gpt2"),
            ("laptop", "training", "resnet50"),
            ("cpu-server-amx", "inference", "bert-base"),
            ("rtx4090-workstation", "training", "bert-large"),
            ("apple-m2", "prototyping", "vit-b16"),
            ("arm-edge", "edge", "yolov5n"),
        ]
    ],
    (
        "recommend 7B on a 4090",
        [
            "recommend",
            "--facts",
            _facts("rtx4090-workstation"),
            "-s",
            "training",
            "--params",
            "7B",
            "--seq-len",
            "2048",
            "--precision",
            "bf16",
            "--no-bench",
        ],
    ),
    (
        "recommend serving with a latency target",
        [
            "recommend",
            "--facts",
            _facts("arm-edge"),
            "-s",
            "inference",
            "-m",
            "bert-base",
            "--qps",
            "50",
            "--latency-ms",
            "20",
            "--no-bench",
        ],
    ),
    (
        "estimate resnet50 on GPUs",
        [
            "estimate",
            "-m",
            "resnet50",
            "--no-bench",
            "--on",
            "t4",
            "--on",
            "a100-80gb",
            "--on",
            "h100-sxm",
            "--on",
            "rtx-4090",
        ],
    ),
    (
        "estimate for a saved machine",
        [
            "estimate",
            "--facts",
            _facts("cpu-server-amx"),
            "-m",
            "bert-base",
            "--on",
            "here",
            "--on",
            "l4",
            "--on",
            "h100",
            "--task",
            "infer",
            "--batch-size",
            "8",
        ],
    ),
    (
        "estimate 7B on 8 GPUs",
        [
            "estimate",
            "--params",
            "7e9",
            "--seq-len",
            "2048",
            "--precision",
            "bf16",
            "--on",
            "h100-sxm",
            "--on",
            "a100-40gb",
            "--gpus",
            "8",
            "--no-bench",
        ],
    ),
    ("catalog devices", ["catalog", "devices"]),
    ("catalog models", ["catalog", "models"]),
    ("catalog instances", ["catalog", "instances"]),
    ("rules list", ["rules", "list"]),
    ("rules list --all", ["rules", "list", "--all"]),
    ("rules list inference", ["rules", "list", "--scenario", "inference", "--all"]),
    ("rules show", ["rules", "show", "HW131"]),
    (
        "rules explain",
        [
            "rules",
            "explain",
            "HW111",
            "--facts",
            _facts("laptop"),
            "-m",
            "resnet50",
            "--scenario",
            "training",
            "--no-bench",
        ],
    ),
    ("fleet training", ["fleet", *REPORTS, "-m", "resnet50"]),
    (
        "fleet inference",
        ["fleet", *REPORTS, "--scenario", "inference", "-m", "bert-base", "--batch-size", "8"],
    ),
]


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """Set the terminal width the report console sees (rich reads ``COLUMNS``)."""

    def set_width(width: int) -> None:
        monkeypatch.setenv("COLUMNS", str(width))
        stdout_console.cache_clear()

    yield set_width
    stdout_console.cache_clear()


def cut_lines(text: str, width: int) -> list[str]:
    """The lines that show a cut cell: rich's ellipsis, or wider than the terminal."""
    return [ln for ln in text.splitlines() if "…" in ln or cell_len(ln) > width]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("name", "argv"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_no_command_cuts_a_cell(
    cli: Cli, columns: Callable[[int], None], name: str, argv: list[str], width: int
) -> None:
    columns(width)
    result = cli(*argv)
    assert result.code == 0, f"{name}: {result.err}"
    assert result.out.strip(), name
    bad = cut_lines(result.out, width)
    assert not bad, f"{name} at {width} columns:\n" + "\n".join(bad)
    found = INTERNAL.search(result.out)
    assert found is None, f"{name} names an internal document: {found.group(0)!r}"


def _recorded_hosts() -> list[Path]:
    return sorted(p for p in (DATA / "hosts").iterdir() if p.is_dir())


@pytest.mark.parametrize("width", WIDTHS)
def test_check_view_of_every_recorded_machine_fits(width: int) -> None:
    from hwadvisor.pipeline import load_facts
    from hwadvisor.probe import probe_machine
    from hwadvisor.probe.seams import Seams
    from hwadvisor.render.check import render_facts

    machines = [probe_machine(Seams.recorded(h)) for h in _recorded_hosts()]
    machines += [load_facts(p) for p in sorted(FACTS.glob("*.json"))]
    for facts in machines:
        buf = io.StringIO()
        render_facts(facts, Console(file=buf, width=width, color_system=None))
        bad = cut_lines(buf.getvalue(), width)
        assert not bad, f"check of {facts.host.hostname} at {width} columns:\n" + "\n".join(bad)


@pytest.mark.parametrize("width", WIDTHS)
def test_bench_view_fits(width: int) -> None:
    from hwadvisor.pipeline import load_facts
    from hwadvisor.render.bench import render_bench

    report = load_facts(_facts("cpu-server-amx")).bench
    assert report is not None
    buf = io.StringIO()
    render_bench(report, Console(file=buf, width=width, color_system=None))
    assert "GFLOP/s" in buf.getvalue()
    assert not cut_lines(buf.getvalue(), width)


def _table_rows(out: str) -> list[str]:
    """The lines of a ranking table after its rule line: machines and folded details."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("──"))
    return [ln for ln in lines[start + 1 :] if re.match(r"\d+\s|\s", ln)]


@pytest.mark.parametrize("width", [100, 160])
def test_fleet_shows_one_machine_per_line_from_100_columns(
    cli: Cli, columns: Callable[[int], None], width: int
) -> None:
    columns(width)
    result = cli("fleet", *REPORTS, "-m", "resnet50", "--json")
    machines = len(result.json()["machines"])
    result = cli("fleet", *REPORTS, "-m", "resnet50")
    rows = _table_rows(result.out) if width < 120 else None
    if rows is not None:
        assert len(rows) == machines, "\n".join(rows)
        assert all(re.match(r"\s*\d+\s", ln) for ln in rows)


def test_rules_list_fits_a_screen_and_all_lists_every_rule(
    cli: Cli, columns: Callable[[int], None]
) -> None:
    columns(80)
    ids = [r["id"] for r in cli("rules", "list", "--json").json()["rules"]]
    short = cli("rules", "list").out
    assert len(short.splitlines()) <= 40, short
    assert all(i in short for i in ids)
    full = cli("rules", "list", "--all").out
    assert all(i in full for i in ids)
    assert len(full.splitlines()) > len(short.splitlines())
    files = {Path(r["file"]).name for r in cli("rules", "list", "--json").json()["rules"]}
    assert all(name in short and name in full for name in files)


@pytest.mark.parametrize("width", WIDTHS)
def test_paragraphs_hang_under_their_first_word(
    cli: Cli, columns: Callable[[int], None], width: int
) -> None:
    columns(width)
    out = cli(
        "recommend",
        "--facts",
        _facts("t4-cloud"),
        "-s",
        "inference",
        "-m",
        "resnet50",
        "--no-bench",
    ).out
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("HW401"))
    message = []
    for ln in lines[head + 1 :]:
        if not ln.strip() or re.match(r"\s{0,2}\S", ln):
            break  # the next finding or section
        message.append(ln)
    assert message and all(ln.startswith("    ") for ln in message), "\n".join(lines[head:])


def test_more_detail_shows_from_120_columns(cli: Cli, columns: Callable[[int], None]) -> None:
    argv = ["estimate", "-m", "resnet50", "--no-bench", "--on", "t4", "--on", "h100-sxm"]
    columns(80)
    narrow = cli(*argv).out
    columns(160)
    wide = cli(*argv).out
    header = next(ln for ln in wide.splitlines() if ln.startswith("device"))
    assert "basis" in header
    assert "basis" not in next(ln for ln in narrow.splitlines() if ln.startswith("device"))
